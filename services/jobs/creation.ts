/**
 * Creating jobs by group commit. A creation that arrives while another group is committing waits
 * for it, then goes to the database with every creation queued meanwhile: one SERIALIZABLE
 * transaction and one statement for the whole group, so that the commits per second, not the jobs
 * per second, are what the database pays for. A lone creation on a quiet service commits at once.
 *
 * Each caller is answered only once its own job is durable. A job the group cannot take (its
 * Idempotency-Key claim was taken over, its organization's daily test limit is reached) is
 * refused on its own and the group commits without it; a statement that fails for a reason no
 * row names goes again one job at a time, so that one bad row fails only its own job.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { queryThenCommit, withTx } from '../../lib/db.js';
import type { SpoolError } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { GATHER_UNDER_LOAD_MS, GroupCommit, type Outcome } from '../../lib/group-commit.js';
import { DEFAULT_PRIORITY, jobJson } from '../../lib/job-view.js';
import { spoolMetrics } from '../../lib/metrics.js';
import { addToOutbox, type OutboxMessage, type OutboxRow } from '../../lib/outbox.js';
import { columns, failedOnPurpose, failWhen, WriteBatch } from '../../lib/sql.js';
import { type TraceCarrier, traceCarrier } from '../../lib/tracing.js';
import { dispatchOffer } from './dispatch-messages.js';
import { type ClaimCompletion, claimLost, completeClaimsIn } from './idempotency.js';
import {
  addJobEvents,
  type JobEventValues,
  type JobRow,
  type NewJob,
  OUTBOX_TABLE,
  toJob,
} from './job-rows.js';
import type { JobStatus } from './machine.js';
import { DAILY_TEST_LIMIT, testLimitReached, utcDay } from './test-prints.js';

/** The SQL types of the columns a creation writes to `jobs`, in the order its INSERT names them. */
const JOB_TYPES = [
  'UUID', // id
  'UUID', // org_id
  'UUID', // printer_id
  'UUID', // station_id
  'TEXT', // status
  'TEXT', // status_detail
  'TEXT', // reference
  'TEXT', // title
  'BOOL', // live
  'JSONB', // options
  'TEXT', // content_type
  'INT8', // size
  'TEXT', // sha256
  'INT4', // attempt
  'INT4', // version
  'TEXT', // created_by
  'TIMESTAMPTZ', // schedule_at
  'INT4', // expire_after
  'TIMESTAMPTZ', // expire_at
  'UUID', // reprint_of
  'BOOL', // sealed
  'JSONB', // trace_context
  'TEXT', // region
  'UUID', // pool_id
  'INT4', // priority
  'BYTEA', // document
  'TIMESTAMPTZ', // created_at
  'TIMESTAMPTZ', // updated_at
] as const;
/** The most creations one transaction takes; about 50 parameters each, far below the limit. */
export const MAX_GROUP = 256;

interface Pending {
  job: NewJob;
  /** The trace of the request that asked for the job, kept with it. */
  trace: TraceCarrier;
}

/** Thrown inside a group's transaction to roll it back when some of its jobs cannot be created. */
class Refused extends Error {
  constructor(readonly refusals: Map<number, SpoolError>) {
    super('some jobs of the group were refused');
  }
}

/** A pool job given its member as it is created: its history says so (a second event). */
const routedAtCreation = (job: NewJob) => Boolean(job.poolId && job.printerId);

/** The row a job's INSERT writes, as the store reads it back. */
function rowOf(job: NewJob, now: Date, trace: TraceCarrier): JobRow {
  const scheduled = job.scheduleAt !== undefined && job.scheduleAt.getTime() > now.getTime();
  const status: JobStatus = job.hold ? 'held' : scheduled ? 'scheduled' : 'queued';
  const expireAfter = job.expireAfter ?? 0;
  const waitFrom = scheduled ? (job.scheduleAt as Date) : now;
  return {
    id: job.id,
    org_id: job.orgId,
    printer_id: job.printerId || null,
    station_id: job.stationId || null,
    status,
    status_detail: status === 'queued' ? (job.waiting ?? '') : '',
    reference: job.reference,
    title: job.title,
    live: job.live,
    options: JSON.parse(JSON.stringify(job.options)),
    content_type: job.contentType,
    size: String(job.size),
    sha256: job.sha256,
    attempt: 1,
    version: routedAtCreation(job) ? 2 : 1,
    // Kept when already past, as the time the job was scheduled for (docs/jobs.md).
    schedule_at: job.scheduleAt ?? null,
    expire_after: expireAfter,
    expire_at:
      expireAfter > 0 && status !== 'held'
        ? new Date(waitFrom.getTime() + expireAfter * 1000)
        : null,
    reprint_of: job.reprintOf ?? null,
    document_deleted_at: null,
    sealed: job.sealed ?? false,
    trace_context: trace,
    region: job.region,
    document_inline: job.document !== undefined,
    pool_id: job.poolId ?? null,
    priority: job.priority ?? DEFAULT_PRIORITY,
    confirmation: null,
    created_at: now,
    updated_at: now,
  };
}

export interface JobCreator {
  create(job: NewJob): Promise<Job>;
}

export function createJobCreator(deps: {
  pool: pg.Pool;
  clock: Clock;
  /** Hands a committed group's outbox rows to the relay. */
  committed(rows: OutboxRow[]): void;
}): JobCreator {
  const { pool, clock } = deps;

  /**
   * Writes the group in `tx`, in one statement. Throws {@link Refused} (rolling the transaction
   * back) when some of its jobs cannot be created.
   *
   * With `commitBehind`, the COMMIT goes in the same round trip as the statement, so the
   * statement itself must refuse to commit a group of which some job is refused: it then divides
   * by zero (see {@link failWhen}), and the group is written again without `commitBehind`
   * to find out which.
   */
  async function writeGroup(tx: pg.PoolClient, group: Pending[], commitBehind: boolean) {
    const now = clock.now();
    const day = utcDay(now);
    const batch = new WriteBatch();
    const rows = group.map((p) => rowOf(p.job, now, p.trace));
    const jobs = rows.map((row) => toJob(row));

    // Test prints count against their organization's day, all of a group's at once.
    const tests = new Map<string, number>();
    for (const { job } of group)
      if (!job.live) tests.set(job.orgId, (tests.get(job.orgId) ?? 0) + 1);
    // Every write takes its rows as arrays, so that the statement's text depends only on which
    // writes it has, and is prepared once (lib/db.ts).
    const counted =
      tests.size === 0
        ? undefined
        : batch.add(
            `INSERT INTO test_print_counts (org_id, day, n)
             ${batch.rows(
               columns([...tests], ([org, n]) => [org, day, n]),
               ['UUID', 'DATE', 'INT4'],
             )}
             ON CONFLICT (org_id, day) DO UPDATE SET n = test_print_counts.n + excluded.n
             RETURNING org_id, n`,
          );

    const values = columns(group, ({ job }, i) => {
      const row = rows[i] as JobRow;
      return [
        row.id,
        row.org_id,
        row.printer_id,
        row.station_id,
        row.status,
        row.status_detail,
        row.reference,
        row.title,
        row.live,
        JSON.stringify(row.options),
        row.content_type,
        job.size,
        row.sha256,
        row.attempt,
        row.version,
        job.actor,
        row.schedule_at,
        row.expire_after,
        row.expire_at,
        row.reprint_of,
        row.sealed,
        JSON.stringify(row.trace_context),
        row.region,
        row.pool_id,
        row.priority,
        job.document ?? null,
        now,
        now,
      ];
    });
    batch.add(
      `INSERT INTO jobs (id, org_id, printer_id, station_id, status, status_detail, reference,
         title, live, options, content_type, size, sha256, attempt, version, created_by, schedule_at,
         expire_after, expire_at, reprint_of, sealed, trace_context, region, pool_id, priority, document,
         created_at, updated_at)
       ${batch.rows(values, JOB_TYPES)}`,
    );
    const events = group.flatMap(({ job }, i) => {
      const status = (jobs[i] as Job).status;
      const created: JobEventValues = [
        randomUUID(),
        job.id,
        job.orgId,
        1,
        now,
        status,
        job.reprintOf ? `reprint of ${job.reprintOf}` : 'created',
        job.actor,
        '',
        null,
      ];
      if (!routedAtCreation(job)) return [created];
      const routed: JobEventValues = [
        randomUUID(),
        job.id,
        job.orgId,
        2,
        now,
        status,
        `routed to ${job.printerId}`,
        'system',
        '',
        null,
      ];
      return [created, routed];
    });
    addJobEvents(batch, events, (event) => event);
    const messages: OutboxMessage[] = [];
    group.forEach(({ job, trace }, i) => {
      const created = jobs[i] as Job;
      const headers = trace as Record<string, string>;
      messages.push({
        ...eventMessage(created.orgId, 'job.created', { job: jobJson(created) }, now),
        headers,
      });
      // A pool job no member can take yet waits for the router, with no station to offer it to.
      if (created.status === 'queued' && created.stationId) {
        messages.push({ ...dispatchOffer(created, job.document), headers });
      }
    });
    const outbox = addToOutbox(batch, OUTBOX_TABLE, messages);
    const completions: ClaimCompletion[] = [];
    group.forEach(({ job }, i) => {
      if (!job.idempotency) return;
      completions.push({
        orgId: job.orgId,
        claim: job.idempotency,
        jobId: job.id,
        body: Buffer.from(JSON.stringify({ job: jobJson(jobs[i] as Job) })),
      });
    });
    const claimed = completions.length ? completeClaimsIn(batch, completions) : undefined;
    // Only a statement with its COMMIT behind it refuses itself; the parameters go with the text.
    const refusal = commitBehind
      ? [
          ...(counted
            ? [`EXISTS (SELECT 1 FROM ${counted} WHERE n > ${batch.param(DAILY_TEST_LIMIT)}::INT4)`]
            : []),
          ...(claimed
            ? [`(SELECT count(*) FROM ${claimed}) <> ${batch.param(completions.length)}::INT8`]
            : []),
        ]
      : [];
    const text = batch.text(
      `SELECT ${counted ? `(SELECT json_agg(json_build_object('org_id', org_id, 'n', n)) FROM ${counted})` : 'NULL'} AS counts,
         ${claimed ? `(SELECT array_agg(job_id) FROM ${claimed})` : 'NULL'} AS claimed
         ${refusal.length ? `, ${failWhen(refusal.join(' OR '))} AS settled` : ''}`,
    );
    type Result = { counts: Array<{ org_id: string; n: number }> | null; claimed: string[] | null };
    const { rows: result } = commitBehind
      ? await queryThenCommit<Result>(tx, text, batch.values)
      : await tx.query<Result>(text, batch.values);

    const refusals = new Map<number, SpoolError>();
    const completed = new Set(result[0]?.claimed ?? []);
    group.forEach(({ job }, i) => {
      if (job.idempotency && !completed.has(job.id)) {
        refusals.set(i, claimLost(job.idempotency.key));
      }
    });
    // Each organization's test jobs, in the group's order, take the counts below the limit that
    // are left; those past it are refused, and with them gone the count is right again.
    for (const { org_id, n } of result[0]?.counts ?? []) {
      let count = n - (tests.get(org_id) ?? 0);
      group.forEach(({ job }, i) => {
        if (job.live || job.orgId !== org_id) return;
        count++;
        if (count > DAILY_TEST_LIMIT && !refusals.has(i)) refusals.set(i, testLimitReached(now));
      });
    }
    if (refusals.size > 0) throw new Refused(refusals);
    return { jobs, outbox };
  }

  /**
   * Commits a group; a job refused inside the transaction rolls it back, and the group goes again
   * without it.
   */
  async function commitGroup(group: Pending[]): Promise<Outcome<Job>[]> {
    const outcomes = new Map<Pending, Outcome<Job>>();
    let members = group;
    let commitBehind = true;
    while (members.length > 0) {
      try {
        const { jobs, outbox } = await withTx(pool, (tx) => writeGroup(tx, members, commitBehind));
        deps.committed(outbox);
        members.forEach((p, i) => {
          const job = jobs[i] as Job;
          spoolMetrics().jobTransitions.add(1, {
            'spool.job.from': 'new',
            'spool.job.to': job.status,
          });
          outcomes.set(p, { ok: job });
        });
        break;
      } catch (err) {
        if (commitBehind && failedOnPurpose(err)) {
          commitBehind = false;
          continue;
        }
        if (!(err instanceof Refused)) throw err;
        for (const [i, reason] of err.refusals)
          outcomes.set(members[i] as Pending, { error: reason });
        members = members.filter((_, i) => !err.refusals.has(i));
      }
    }
    return group.map((p) => outcomes.get(p) as Outcome<Job>);
  }

  const groups = new GroupCommit<Pending, Job>(commitGroup, MAX_GROUP, {
    gatherMs: GATHER_UNDER_LOAD_MS,
  });
  return {
    create(job) {
      return groups.submit({ job, trace: traceCarrier() });
    },
  };
}
