/**
 * Moving jobs through the state machine: the API's actions and the stations' reports, committed
 * in groups; the sweeps of due and expired jobs; the failing of a deleted printer's jobs. Each
 * change is planned by transition-plan.ts and written here with its numbered event and the
 * messages it causes, in one transaction.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { queryThenCommit, withTx } from '../../lib/db.js';
import { notFound, SpoolError } from '../../lib/errors.js';
import { GATHER_UNDER_LOAD_MS, GroupCommit, type Outcome } from '../../lib/group-commit.js';
import { isUuid } from '../../lib/ids.js';
import { secondsBetween, spoolMetrics } from '../../lib/metrics.js';
import { addToOutbox, type OutboxRow } from '../../lib/outbox.js';
import { columns, failedOnPurpose, failWhen, WriteBatch } from '../../lib/sql.js';
import { type TraceCarrier, traceCarrier, tracing } from '../../lib/tracing.js';
import { addJobEvents, JOB_COLUMNS, type JobRow, OUTBOX_TABLE } from './job-rows.js';
import { FINISHED_STATUSES, type JobStatus, TRANSITIONS, type Trigger } from './machine.js';
import { WAITING } from './printer-waits.js';
import { type Applied, type Change, type How, plan } from './transition-plan.js';

/** The most transitions one transaction applies. */
const MAX_TRANSITIONS = 256;

/** The SQL types of the columns a group of transitions writes to `jobs`, in its UPDATE's order. */
const TRANSITION_TYPES = [
  'UUID', // org_id
  'UUID', // id
  'TEXT', // status
  'TEXT', // status_detail
  'INT4', // attempt
  'TIMESTAMPTZ', // updated_at
  'INT4', // version
  'TIMESTAMPTZ', // finished_at
  'TIMESTAMPTZ', // expire_at
  'TEXT', // region
  'UUID', // printer_id
  'UUID', // station_id
  'UUID', // pool_id
  'JSONB', // confirmation
  'INT4', // the version read, which the row must still have (see `write`)
] as const;

/**
 * Times a group of transitions reads and plans again when jobs it read moved before its write
 * (each time another replica's group got there first), before answering that the database is busy.
 */
const MAX_REPLANS = 24;

/** Counts a committed transition and times the hops it ends. */
function observe({ before, job, changed }: Change): void {
  if (!changed) return;
  const m = spoolMetrics();
  m.jobTransitions.add(1, { 'spool.job.from': before.status, 'spool.job.to': job.status });
  // A queued job's last change was its becoming queued.
  if (before.status === 'queued' && job.status === 'sent') {
    m.dispatchDuration.record(secondsBetween(before.updated_at, job.updatedAt as Date));
  }
  if (job.status === 'printed') {
    m.timeToPrint.record(secondsBetween(before.created_at, job.updatedAt as Date));
  }
}

/**
 * Writes planned changes, in order, in one statement: each job's last row, every change's
 * numbered event (its number is the job's version after it) and every message, with the
 * transaction's COMMIT behind it: it is the transaction's last statement. Fills in each change's
 * outbox rows.
 *
 * With `readBefore`, the jobs were read before the transaction: each row is written only if its
 * version is still the one read, and when any is not, the statement fails on purpose (see
 * {@link failWhen}) and writes nothing.
 */
async function write(tx: pg.PoolClient, changes: Change[], readBefore = false): Promise<void> {
  const made = changes.filter((c) => c.changed);
  if (made.length === 0) return;
  const last = new Map<string, JobRow>();
  // The version each job had when read: its first change's row before it.
  const read = new Map<string, number>();
  for (const c of made) {
    last.set(c.after.id, c.after);
    if (!read.has(c.after.id)) read.set(c.after.id, c.before.version);
  }
  const batch = new WriteBatch();
  const rows = columns([...last.values()], (r) => [
    r.org_id,
    r.id,
    r.status,
    r.status_detail,
    r.attempt,
    r.updated_at,
    r.version,
    FINISHED_STATUSES.includes(r.status) ? r.updated_at : null,
    r.expire_at,
    r.region,
    r.printer_id,
    r.station_id,
    r.pool_id,
    r.confirmation === null ? null : JSON.stringify(r.confirmation),
    read.get(r.id),
  ]);
  const updated = batch.add(
    // A job that reaches its station keeps the detail saying why it waits (its printer is out of
    // paper, say), as it is when the statement runs: the printer's news may have changed it
    // since the jobs were read (printer-waits.ts).
    `UPDATE jobs SET status = v.status, attempt = v.attempt,
         status_detail = CASE
           WHEN v.status <> 'sent' THEN v.status_detail
           WHEN jobs.status_detail LIKE '${WAITING}%' THEN jobs.status_detail
           ELSE '' END,
         updated_at = v.updated_at, version = v.version, finished_at = v.finished_at,
         expire_at = v.expire_at, region = v.region, printer_id = v.printer_id,
         station_id = v.station_id, pool_id = v.pool_id, confirmation = v.confirmation
       FROM (${batch.rows(rows, TRANSITION_TYPES)}) AS v (org_id, id, status,
         status_detail, attempt, updated_at, version, finished_at, expire_at, region, printer_id,
         station_id, pool_id, confirmation, was)
       WHERE jobs.org_id = v.org_id AND jobs.id = v.id${
         readBefore ? ' AND jobs.version = v.was RETURNING jobs.id' : ''
       }`,
  );
  addJobEvents(batch, made, (c) => [
    randomUUID(),
    c.after.id,
    c.after.org_id,
    c.after.version,
    c.after.updated_at,
    c.after.status,
    c.event?.detail ?? '',
    c.event?.actor ?? '',
    c.event?.region ?? '',
    c.after.status === 'printed' && c.after.confirmation
      ? JSON.stringify(c.after.confirmation)
      : null,
  ]);
  // One INSERT for the whole group's messages, and the count below a parameter: the statement's
  // text is then the same for every group, and prepared once (lib/db.ts).
  const outbox = addToOutbox(
    batch,
    OUTBOX_TABLE,
    made.flatMap((c) => c.messages ?? []),
  );
  let next = 0;
  for (const c of made) {
    const count = c.messages?.length ?? 0;
    c.outbox = outbox.slice(next, next + count);
    next += count;
  }
  // A job another transaction moved since it was read fails the statement, so that nothing of
  // the group is written and the COMMIT behind it rolls back.
  const select = readBefore
    ? `SELECT ${failWhen(`(SELECT count(*) FROM ${updated}) <> ${batch.param(last.size)}::INT8`)}`
    : undefined;
  await queryThenCommit(tx, batch.text(select), batch.values);
}

interface TransitionAsked {
  orgId: string;
  jobId: string;
  trigger: Trigger;
  how: How;
  /**
   * The trace of the call or report that asked for it, when spans are recorded. The group commits
   * in its first item's trace; the messages of each change continue their own.
   */
  trace?: TraceCarrier;
}

/** The change's messages, each continuing `trace` unless it names a trace of its own. */
function continuing(change: Change, trace: TraceCarrier | undefined): Change {
  if (!trace || !change.messages) return change;
  change.messages = change.messages.map((m) => ({ ...m, headers: { ...trace, ...m.headers } }));
  return change;
}

/** The state machine's moves of jobs, each committed with its event and messages. */
export interface JobTransitions {
  /**
   * Moves a job by `trigger` (an API action or a station's report), committed with the other
   * transitions arriving at the same time. An action from the API (`cancel`, `retry`) that does
   * not apply to the job's status is a 409; a station report that no longer applies (a duplicate,
   * a report of an earlier attempt, a job cancelled meanwhile) changes nothing.
   */
  apply(orgId: string, jobId: string, trigger: Trigger, how: How): Promise<Applied>;
  /** Queues scheduled jobs whose time has come. */
  queueDue(limit?: number): Promise<Job[]>;
  /** Fails queued jobs that waited longer than their expire_after. */
  expireDue(limit?: number): Promise<Job[]>;
  /**
   * Fails every unfinished job of `printerIds` of `stationId` (of all its printers when
   * `printerIds` is empty), each once; a queued pool job is left for the router, which gives it
   * another member once the printer has left its pool.
   */
  failPrinterJobs(
    orgId: string,
    stationId: string,
    printerIds: string[],
    how: { actor: string; detail: string },
  ): Promise<number>;
}

export function createJobTransitions(deps: {
  pool: pg.Pool;
  clock: Clock;
  /** Hands a committed transaction's outbox rows to the relay. */
  committed(rows: OutboxRow[]): void;
  /** Told of the jobs a committed transaction made queued again (see `JobStoreOptions`). */
  onRequeued?: ((jobs: Job[]) => void) | undefined;
}): JobTransitions {
  const { pool, clock } = deps;
  /** What follows a transaction of changes: metrics, its messages, and the jobs queued again. */
  const afterCommit = (changes: Change[]) => {
    changes.forEach(observe);
    deps.committed(changes.flatMap((c) => c.outbox));
    const requeued = changes.filter((c) => c.changed && c.job.status === 'queued');
    if (requeued.length > 0) deps.onRequeued?.(requeued.map((c) => c.job));
  };

  /** Moves locked jobs by `trigger`, inside `tx`, in one statement. */
  async function applyAll(
    tx: pg.PoolClient,
    rows: JobRow[],
    trigger: Trigger,
    how: { actor: string; detail?: string },
  ): Promise<Change[]> {
    const now = clock.now();
    const changes = rows.map((row) => plan(row, trigger, how, now));
    await write(tx, changes);
    return changes;
  }

  /**
   * Applies a group of transitions: the jobs read in one query, the changes planned in the order
   * they came (so a job's `received` and `result` that arrive together both apply, one after the
   * other) and written in one transaction of one statement. A transition that cannot apply fails
   * alone; a group that changes nothing writes nothing.
   *
   * The jobs are read before the transaction, not locked inside it: the write then takes each
   * job only at the version read, and a group that finds a job moved meanwhile (by another
   * replica's group) reads and plans again. On PostgreSQL, whose SERIALIZABLE tracks reads by
   * index and heap page, a read held for the whole transaction made two replicas' groups fail each
   * other several times as often (docs/performance.md, bench/serializable-pages.ts).
   */
  async function commitTransitions(group: TransitionAsked[]): Promise<Outcome<Change>[]> {
    const keys = columns(
      [...new Map(group.map((g) => [`${g.orgId}/${g.jobId}`, g])).values()],
      (g) => [g.orgId, g.jobId],
    );
    for (let attempt = 1; ; attempt++) {
      // Outside the transaction (item 28 in docs/performance.md): the write checks what it read.
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM unnest($1::UUID[], $2::UUID[]) AS k (job_org_id, job_id)
         JOIN jobs ON jobs.org_id = k.job_org_id AND jobs.id = k.job_id`,
        keys,
      );
      const current = new Map(rows.map((r) => [`${r.org_id}/${r.id}`, r]));
      const now = clock.now();
      const changes: Change[] = [];
      const outcomes = group.map((g): Outcome<Change> => {
        const key = `${g.orgId}/${g.jobId}`;
        const row = current.get(key);
        if (!row) return { error: notFound('no such job') };
        try {
          const change = continuing(plan(row, g.trigger, g.how, now), g.trace);
          current.set(key, change.after);
          changes.push(change);
          return { ok: change };
        } catch (error) {
          return { error };
        }
      });
      if (changes.some((c) => c.changed)) {
        try {
          await withTx(pool, (tx) => write(tx, changes, true));
        } catch (err) {
          if (!failedOnPurpose(err)) throw err;
          if (attempt >= MAX_REPLANS) {
            throw new SpoolError('unavailable', 'the jobs keep changing; try again', {
              cause: err,
            });
          }
          continue;
        }
      }
      afterCommit(changes);
      return outcomes;
    }
  }
  const transitions = new GroupCommit(commitTransitions, MAX_TRANSITIONS, {
    gatherMs: GATHER_UNDER_LOAD_MS,
  });

  /** Applies `trigger` to due jobs of `status` (`time` passed), at most `limit`, each once. */
  async function sweepDue(
    status: JobStatus,
    column: 'schedule_at' | 'expire_at',
    trigger: Trigger,
    limit: number,
  ): Promise<Job[]> {
    const changes = await withTx(pool, async (tx) => {
      // SKIP LOCKED lets several replicas sweep at once, each taking other jobs.
      const { rows } = await tx.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs WHERE status = $1 AND ${column} <= $2
         ORDER BY ${column} LIMIT $3 FOR UPDATE SKIP LOCKED`,
        [status, clock.now(), limit],
      );
      return applyAll(tx, rows, trigger, { actor: 'system' });
    });
    afterCommit(changes);
    return changes.filter((c) => c.changed).map((c) => c.job);
  }

  return {
    async apply(orgId, jobId, trigger, how) {
      // Not one for the group: an id that is no UUID would fail the whole group's statement.
      if (!isUuid(orgId) || !isUuid(jobId)) throw notFound('no such job');
      const trace = tracing() ? traceCarrier() : undefined;
      const { job, changed } = await transitions.submit({ orgId, jobId, trigger, how, trace });
      return { job, changed };
    },

    queueDue: (limit = 500) => sweepDue('scheduled', 'schedule_at', 'due', limit),

    expireDue: (limit = 500) => sweepDue('queued', 'expire_at', 'expire', limit),

    async failPrinterJobs(orgId, stationId, printerIds, how) {
      const from = TRANSITIONS.find((t) => t.trigger === 'printer_deleted')?.from ?? [];
      let failed = 0;
      for (;;) {
        const changes = await withTx(pool, async (tx) => {
          const { rows } = await tx.query<JobRow>(
            `SELECT ${JOB_COLUMNS} FROM jobs
             WHERE org_id = $1 AND station_id = $2
               AND (cardinality($3::UUID[]) = 0 OR printer_id = ANY($3::UUID[]))
               AND status = ANY($4) AND NOT (pool_id IS NOT NULL AND status = 'queued')
             ORDER BY created_at, id LIMIT 500 FOR UPDATE`,
            [orgId, stationId, printerIds, from],
          );
          return applyAll(tx, rows, 'printer_deleted', how);
        });
        afterCommit(changes);
        failed += changes.filter((c) => c.changed).length;
        if (changes.length < 500) return failed;
      }
    },
  };
}
