/**
 * The jobs tables. Every query on tenant data is scoped by organization; every change writes the
 * job, its numbered event and the messages it causes (webhook event, dispatch to the station) in
 * one transaction.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Job, JobEvent, Template, TemplateField, Upload } from '../../gen/spool/v1/jobs.js';
import { PrintOptions } from '../../gen/spool/v1/stations.js';
import { subjects } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import type { DispatchMessage } from '../../lib/contracts/dispatch.js';
import { queryThenCommit, withTx } from '../../lib/db.js';
import { conflict, notFound, SpoolError } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { GroupCommit, type Outcome } from '../../lib/group-commit.js';
import { isUuid } from '../../lib/ids.js';
import { jobJson } from '../../lib/job-view.js';
import { secondsBetween, spoolMetrics } from '../../lib/metrics.js';
import { addToOutbox, type OutboxMessage, type OutboxRow } from '../../lib/outbox.js';
import { decodeCursor, listOldestFirst, page } from '../../lib/paging.js';
import { columns, failedOnPurpose, failWhen, WriteBatch } from '../../lib/sql.js';
import type { TraceCarrier } from '../../lib/tracing.js';
import {
  createJobCreator,
  DAILY_TEST_LIMIT,
  JOB_EVENT_TYPES,
  testLimitReached,
  utcDay,
} from './creation.js';
import type { Claim } from './idempotency.js';
import {
  FINISHED_STATUSES,
  type JobStatus,
  PENDING_STATUSES,
  statusesFor,
  TRANSITIONS,
  type Trigger,
  transition,
} from './machine.js';
import { WAITING } from './printer-waits.js';

export const OUTBOX_TABLE = 'jobs_outbox';

export { DAILY_TEST_LIMIT } from './creation.js';

export interface JobRow {
  id: string;
  org_id: string;
  printer_id: string;
  station_id: string;
  status: JobStatus;
  status_detail: string;
  reference: string;
  title: string;
  live: boolean;
  options: PrintOptions;
  content_type: string;
  size: string;
  sha256: string;
  attempt: number;
  version: number;
  schedule_at: Date | null;
  expire_after: number;
  expire_at: Date | null;
  reprint_of: string | null;
  document_deleted_at: Date | null;
  sealed: boolean;
  trace_context: TraceCarrier;
  region: string;
  document_inline: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The most transitions one transaction applies. */
const MAX_TRANSITIONS = 256;

/** Documents up to this size are kept with their job, and travel in its dispatch message. */
export const INLINE_DOCUMENT_BYTES = 64 * 1024;

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
  'INT4', // the version read, which the row must still have (see `write`)
] as const;

/**
 * Times a group of transitions reads and plans again when jobs it read moved before its write
 * (each time another replica's group got there first), before answering that the database is busy.
 */
const MAX_REPLANS = 24;

const JOB_COLUMNS = `id, org_id, printer_id, station_id, status, status_detail, reference, title,
  live, options, content_type, size, sha256, attempt, version, schedule_at, expire_after,
  expire_at, reprint_of, document_deleted_at, sealed, trace_context, region, created_at,
  updated_at, document IS NOT NULL AS document_inline`;

/** A job's `waiting: ` detail (printer-waits.ts), or ''. */
const waitingOf = (row: JobRow) => (row.status_detail.startsWith(WAITING) ? row.status_detail : '');

function toJob(row: JobRow): Job {
  return {
    id: row.id,
    orgId: row.org_id,
    printerId: row.printer_id,
    stationId: row.station_id,
    status: row.status,
    statusDetail: row.status_detail,
    reference: row.reference,
    title: row.title,
    live: row.live,
    options: row.options,
    contentType: row.content_type,
    size: Number(row.size),
    sha256: row.sha256,
    attempt: row.attempt,
    scheduleAt: row.schedule_at ?? undefined,
    expireAt: row.expire_at ?? undefined,
    reprintOf: row.reprint_of ?? '',
    contentDeleted: row.document_deleted_at !== null,
    traceContext: row.trace_context,
    region: row.region,
    documentInline: row.document_inline,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function dispatchMessage(job: Job, kind: 'offer' | 'withdraw', document?: Buffer): OutboxMessage {
  const payload: DispatchMessage =
    kind === 'offer'
      ? {
          kind,
          job: {
            ...jobJson(job),
            sha256: job.sha256,
            options: job.options ?? PrintOptions.fromPartial({}),
            trace_context: job.traceContext,
            ...(job.documentInline ? { document_inline: true } : {}),
            ...(document ? { document: document.toString('base64') } : {}),
          },
        }
      : { kind, job_id: job.id, attempt: job.attempt };
  return { subject: subjects.dispatch(job.region, job.orgId, job.stationId), payload };
}

export interface NewJob {
  id: string;
  orgId: string;
  printerId: string;
  stationId: string;
  /** The station's home region. */
  region: string;
  live: boolean;
  title: string;
  reference: string;
  options: PrintOptions;
  contentType: string;
  size: number;
  sha256: string;
  actor: string;
  /** The job starts `scheduled` until this time, when set. */
  scheduleAt?: Date;
  /** The job starts `held`. */
  hold?: boolean;
  /** Seconds it may wait undelivered; 0 for ever. */
  expireAfter?: number;
  reprintOf?: string;
  /** The content came sealed: it is never served back (a reprint of it is sealed too). */
  sealed?: boolean;
  /** The request's Idempotency-Key claim, completed with the job in its transaction. */
  idempotency?: Claim;
  /** The document, when it is kept with the job (at most {@link INLINE_DOCUMENT_BYTES}). */
  document?: Buffer;
  /** Why a queued job waits from the start, when its printer cannot take it (printer-waits.ts). */
  waiting?: string;
}

export interface JobFilters {
  statuses: string[];
  reference: string;
  printerId: string;
  stationId: string;
  createdAfter: Date | undefined;
  createdBefore: Date | undefined;
}

/** The outcome of a report or action: the job as it now is, and whether it changed. */
/** Who or what moves a job, and what the move is to take as given. */
export interface How {
  /** `api_key:<id>`, `person:<id>`, `station:<id>`, `system` or `operator`, as its event says. */
  actor: string;
  detail?: string;
  /** A station's report: the attempt it is about; a report of another attempt changes nothing. */
  attempt?: number;
  /** A station's report: its home region, where the job now is. */
  region?: string;
  /** A station's report: the station sending it; a report of another station changes nothing. */
  stationId?: string;
}

export interface Applied {
  job: Job;
  changed: boolean;
}

/** A change made inside a transaction, observed (counted, timed) once the transaction commits. */
interface Change extends Applied {
  before: JobRow;
  /** The row as the change leaves it. */
  after: JobRow;
  /** The messages it causes, and the outbox rows they were written as, for the relay. */
  messages?: OutboxMessage[];
  outbox: OutboxRow[];
  /** The record of the change (its job_events row). */
  event?: { detail: string; actor: string; region: string };
}

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

// Columns are named rather than `*`: statements are prepared (lib/db.ts), and a prepared `*` fails
// once a migration adds a column.
const TEMPLATE_COLUMNS = 'id, org_id, name, kind, body, fields, created_at';

interface TemplateRow {
  id: string;
  org_id: string;
  name: string;
  kind: string;
  body: string;
  fields: TemplateField[];
  created_at: Date;
}

function toTemplate(row: TemplateRow): Template {
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    kind: row.kind,
    body: row.body,
    fields: row.fields,
    createdAt: row.created_at,
  };
}

const UPLOAD_COLUMNS = 'id, org_id, content_type, size, sha256, created_at, deleted_at';

interface UploadRow {
  id: string;
  org_id: string;
  content_type: string;
  size: string;
  sha256: string;
  created_at: Date;
  deleted_at: Date | null;
}

function toUpload(row: UploadRow): Upload {
  return {
    id: row.id,
    orgId: row.org_id,
    contentType: row.content_type,
    size: Number(row.size),
    sha256: row.sha256,
    createdAt: row.created_at,
  };
}

/** The document object of a job, and of an upload, in the DOCUMENTS bucket. */
export const documentName = (jobId: string) => jobId;
export const uploadName = (uploadId: string) => `upload-${uploadId}`;

export interface JobStoreOptions {
  /** Called with the outbox rows of each transaction once it has committed (the relay's `send`). */
  onCommit?: (rows: OutboxRow[]) => void;
  /**
   * Called with the jobs a committed transaction made queued again (released, retried, due), whose
   * printers may not print now: printer-waits.ts then gives them their `waiting: ` detail, as a new
   * job gets it at creation.
   */
  onRequeued?: (jobs: Job[]) => void;
}

export function createJobStore(pool: pg.Pool, clock: Clock, options: JobStoreOptions = {}) {
  const committed = (rows: OutboxRow[]) => {
    if (rows.length > 0) options.onCommit?.(rows);
  };
  /** What follows a transaction of changes: metrics, its messages, and the jobs queued again. */
  const afterCommit = (changes: Change[]) => {
    changes.forEach(observe);
    committed(changes.flatMap((c) => c.outbox));
    const requeued = changes.filter((c) => c.changed && c.job.status === 'queued');
    if (requeued.length > 0) options.onRequeued?.(requeued.map((c) => c.job));
  };
  const creator = createJobCreator({
    pool,
    clock,
    parts: {
      table: OUTBOX_TABLE,
      toJob,
      dispatchOffer: (job, document) => dispatchMessage(job, 'offer', document),
    },
    committed,
  });
  /**
   * The change `trigger` makes to `row`, computed without writing it: an unchanged outcome when
   * the trigger does not apply (a late or repeated report), a conflict when the API asked for a
   * change the job's status does not allow.
   */
  function plan(row: JobRow, trigger: Trigger, how: How, now: Date): Change {
    const current = toJob(row);
    const unchanged: Change = { job: current, changed: false, before: row, after: row, outbox: [] };
    const fromApi = trigger === 'cancel' || trigger === 'retry';
    if (how.attempt !== undefined && how.attempt !== current.attempt) return unchanged;
    // Only the station the job went to reports on it: another (of the same organization) cannot
    // mark it printed or failed.
    if (how.stationId !== undefined && how.stationId !== row.station_id) return unchanged;
    const t = transition(row.status, trigger);
    if (!t) {
      if (!fromApi) return unchanged;
      throw conflict(
        `a ${row.status} job cannot be ${trigger === 'cancel' ? 'cancelled' : 'retried'}; ` +
          `only ${statusesFor(trigger).join(', ')} jobs can`,
      );
    }
    if (t.dispatch === 'offer' && row.document_deleted_at) {
      throw new SpoolError(
        'content_deleted',
        'the job’s document is past retention and was deleted',
      );
    }
    const detail = how.detail ?? (trigger === 'expire' ? 'expired' : '');
    // A job that starts waiting again gets its expire_after afresh.
    const expireAt =
      t.to === 'queued' && row.expire_after > 0 && trigger !== 'due'
        ? new Date(now.getTime() + row.expire_after * 1000)
        : row.expire_at;
    // A station's report says where the job is: its station's home region, which an operator
    // may have changed since the job was created.
    const after: JobRow = {
      ...row,
      region: how.region || row.region,
      status: t.to,
      status_detail: t.to === 'failed' ? detail : t.to === 'sent' ? waitingOf(row) : '',
      attempt: t.newAttempt ? current.attempt + 1 : current.attempt,
      updated_at: now,
      version: row.version + 1,
      expire_at: expireAt,
    };
    const job = toJob(after);
    const messages: OutboxMessage[] = [];
    if (t.event) messages.push(eventMessage(row.org_id, t.event, { job: jobJson(job) }, now));
    if (t.dispatch === 'withdraw') messages.push(dispatchMessage(current, 'withdraw'));
    if (t.dispatch === 'offer') messages.push(dispatchMessage(job, 'offer'));
    return {
      job,
      changed: true,
      before: row,
      after,
      outbox: [],
      messages,
      event: { detail: detail || trigger, actor: how.actor, region: how.region ?? '' },
    };
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
         expire_at = v.expire_at, region = v.region
       FROM (${batch.rows(rows, TRANSITION_TYPES)}) AS v (org_id, id, status,
         status_detail, attempt, updated_at, version, finished_at, expire_at, region, was)
       WHERE jobs.org_id = v.org_id AND jobs.id = v.id${
         readBefore ? ' AND jobs.version = v.was RETURNING jobs.id' : ''
       }`,
    );
    const events = columns(made, (c) => [
      randomUUID(),
      c.after.id,
      c.after.org_id,
      c.after.version,
      c.after.updated_at,
      c.after.status,
      c.event?.detail ?? '',
      c.event?.actor ?? '',
      c.event?.region ?? '',
    ]);
    batch.add(
      `INSERT INTO job_events (id, job_id, org_id, seq, at, status, detail, actor, region)
       ${batch.rows(events, JOB_EVENT_TYPES)}`,
    );
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

  interface TransitionAsked {
    orgId: string;
    jobId: string;
    trigger: Trigger;
    how: How;
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
          const change = plan(row, g.trigger, g.how, now);
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
  const transitions = new GroupCommit(commitTransitions, MAX_TRANSITIONS);

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

  function filterSql(orgId: string, f: JobFilters, withStatus: boolean) {
    const where = ['org_id = $1'];
    const params: unknown[] = [orgId];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (withStatus && f.statuses.length > 0) add('status = ANY(?)', f.statuses);
    if (f.reference) {
      add('reference = ?', f.reference);
      // Said outright, so that the planner may take the partial index of references (009).
      where.push("reference <> ''");
    }
    if (f.printerId) add('printer_id = ?', f.printerId);
    if (f.stationId) add('station_id = ?', f.stationId);
    if (f.createdAfter) add('created_at > ?', f.createdAfter);
    if (f.createdBefore) add('created_at < ?', f.createdBefore);
    return { where, params };
  }

  async function getRow(orgId: string, jobId: string): Promise<JobRow> {
    const { rows } = await pool.query<JobRow>(
      `SELECT ${JOB_COLUMNS} FROM jobs WHERE org_id = $1 AND id = $2`,
      [orgId, jobId],
    );
    if (!rows[0]) throw notFound('no such job');
    return rows[0];
  }

  return {
    /** Creates a job, committed with the others arriving at the same time (creation.ts). */
    create(job: NewJob): Promise<Job> {
      return creator.create(job);
    },

    async get(orgId: string, jobId: string): Promise<{ job: Job; events: JobEvent[] }> {
      const row = await getRow(orgId, jobId);
      const events = await pool.query<JobEvent>(
        'SELECT at, status, detail, actor, region FROM job_events WHERE org_id = $1 AND job_id = $2 ORDER BY seq',
        [orgId, jobId],
      );
      return { job: toJob(row), events: events.rows };
    },

    /**
     * The job, for its document; 410 once the document is past retention. Serving the document
     * back (`serve`) is refused for sealed content, which only this service may open.
     */
    async withDocument(
      orgId: string,
      jobId: string,
      use: 'serve' | 'reprint' | 'print',
    ): Promise<Job & { sealed: boolean }> {
      const row = await getRow(orgId, jobId);
      if (use === 'serve' && row.sealed) {
        throw new SpoolError(
          'forbidden',
          'the job’s content was sealed: it is printed and reprinted, but never served back',
        );
      }
      if (row.document_deleted_at) {
        throw new SpoolError(
          'content_deleted',
          'the job’s document is past retention and was deleted',
        );
      }
      return { ...toJob(row), sealed: row.sealed };
    },

    async list(orgId: string, filters: JobFilters, limit: number, cursor: string) {
      const after = decodeCursor(cursor);
      const { where, params } = filterSql(orgId, filters, true);
      if (after) {
        params.push(after.at, after.id);
        where.push(`(created_at, id) < ($${params.length - 1}, $${params.length}::UUID)`);
      }
      params.push(limit + 1);
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs WHERE ${where.join(' AND ')}
         ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
        params,
      );
      const counted = filterSql(orgId, filters, false);
      const counts = await pool.query<{ status: string; n: string }>(
        `SELECT status, count(*) AS n FROM jobs WHERE ${counted.where.join(' AND ')} GROUP BY status`,
        counted.params,
      );
      const { items, nextCursor } = page(rows, limit, (r) => ({
        at: r.created_at.toISOString(),
        id: r.id,
      }));
      return {
        items: items.map(toJob),
        nextCursor,
        counts: Object.fromEntries(counts.rows.map((r) => [r.status, Number(r.n)])),
      };
    },

    /**
     * Applies a trigger to a job. An action from the API (`cancel`, `retry`) that does not apply
     * to the job's status is a 409; a station report that no longer applies (a duplicate, a report
     * of an earlier attempt, a job cancelled meanwhile) changes nothing.
     */
    /**
     * Moves a job by `trigger` (an API action or a station's report), committed with the other
     * transitions arriving at the same time.
     */
    async apply(orgId: string, jobId: string, trigger: Trigger, how: How): Promise<Applied> {
      // Not one for the group: an id that is no UUID would fail the whole group's statement.
      if (!isUuid(orgId) || !isUuid(jobId)) throw notFound('no such job');
      const { job, changed } = await transitions.submit({ orgId, jobId, trigger, how });
      return { job, changed };
    },

    /**
     * Counts one more test-key print of the organization today (a failed test job retried prints
     * again), refusing it, `429 rate_limited` until 00:00 UTC, when the day's are used up.
     * Answers the day counted, for {@link uncountTestPrint} should the retry not happen.
     */
    async countTestPrint(orgId: string): Promise<string> {
      const now = clock.now();
      const day = utcDay(now);
      const { rowCount } = await pool.query(
        `INSERT INTO test_print_counts (org_id, day, n) VALUES ($1, $2, 1)
         ON CONFLICT (org_id, day) DO UPDATE SET n = test_print_counts.n + 1
           WHERE test_print_counts.n < $3
         RETURNING n`,
        [orgId, day, DAILY_TEST_LIMIT],
      );
      if (rowCount === 0) throw testLimitReached(now);
      return day;
    },

    /** Takes back a test-key print counted for a retry that was refused. */
    async uncountTestPrint(orgId: string, day: string): Promise<void> {
      await pool.query(
        'UPDATE test_print_counts SET n = n - 1 WHERE org_id = $1 AND day = $2 AND n > 0',
        [orgId, day],
      );
    },

    /** Queues scheduled jobs whose time has come. */
    queueDue: (limit = 500) => sweepDue('scheduled', 'schedule_at', 'due', limit),

    /** Fails queued jobs that waited longer than their expire_after. */
    expireDue: (limit = 500) => sweepDue('queued', 'expire_at', 'expire', limit),

    /**
     * Fails every unfinished job of `printerIds` of `stationId` (of all its printers when
     * `printerIds` is empty), each once.
     */
    async failPrinterJobs(
      orgId: string,
      stationId: string,
      printerIds: string[],
      how: { actor: string; detail: string },
    ): Promise<number> {
      const from = TRANSITIONS.find((t) => t.trigger === 'printer_deleted')?.from ?? [];
      let failed = 0;
      for (;;) {
        const changes = await withTx(pool, async (tx) => {
          const { rows } = await tx.query<JobRow>(
            `SELECT ${JOB_COLUMNS} FROM jobs
             WHERE org_id = $1 AND station_id = $2
               AND (cardinality($3::UUID[]) = 0 OR printer_id = ANY($3::UUID[]))
               AND status = ANY($4) ORDER BY created_at, id LIMIT 500 FOR UPDATE`,
            [orgId, stationId, printerIds, from],
          );
          return applyAll(tx, rows, 'printer_deleted', how);
        });
        afterCommit(changes);
        failed += changes.filter((c) => c.changed).length;
        if (changes.length < 500) return failed;
      }
    },

    async updateTemplate(t: Omit<Template, 'createdAt'>): Promise<Template> {
      const { rows } = await pool.query<TemplateRow>(
        `UPDATE templates SET name = $3, kind = $4, body = $5, fields = $6
         WHERE org_id = $1 AND id = $2 RETURNING ${TEMPLATE_COLUMNS}`,
        [t.orgId, t.id, t.name, t.kind, t.body, JSON.stringify(t.fields)],
      );
      if (!rows[0]) throw notFound('no such template');
      return toTemplate(rows[0]);
    },

    async deleteTemplate(orgId: string, id: string): Promise<void> {
      const res = await pool.query('DELETE FROM templates WHERE org_id = $1 AND id = $2', [
        orgId,
        id,
      ]);
      if (res.rowCount === 0) throw notFound('no such template');
    },

    /** The document kept with a job, or `undefined` when it lives in the object store. */
    async inlineDocument(orgId: string, jobId: string): Promise<Buffer | undefined> {
      const { rows } = await pool.query<{ document: Buffer | null }>(
        'SELECT document FROM jobs WHERE org_id = $1 AND id = $2',
        [orgId, jobId],
      );
      if (!rows[0]) throw notFound('no such job');
      return rows[0].document ?? undefined;
    },

    async pending(orgId: string, stationId: string): Promise<Job[]> {
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs
         WHERE org_id = $1 AND station_id = $2 AND status = ANY($3)
         ORDER BY created_at, id`,
        [orgId, stationId, PENDING_STATUSES],
      );
      return rows.map(toJob);
    },

    /**
     * The pending jobs of many stations in one query, each station scoped by its organization;
     * oldest first.
     */
    async pendingForStations(
      stations: Array<{ orgId: string; stationId: string }>,
    ): Promise<Job[]> {
      if (stations.length === 0) return [];
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs
         WHERE station_id = ANY($2::UUID[]) AND status = ANY($3)
           AND (org_id, station_id) IN (SELECT * FROM unnest($1::UUID[], $2::UUID[]))
         ORDER BY created_at, id`,
        [stations.map((s) => s.orgId), stations.map((s) => s.stationId), PENDING_STATUSES],
      );
      return rows.map(toJob);
    },

    /** Jobs finished before `before` whose documents are still kept. */
    async documentsToDelete(
      before: Date,
      limit: number,
    ): Promise<Array<{ id: string; inline: boolean }>> {
      const { rows } = await pool.query<{ id: string; inline: boolean }>(
        `SELECT id, document IS NOT NULL AS inline FROM jobs
         WHERE finished_at <= $1 AND document_deleted_at IS NULL
         ORDER BY finished_at LIMIT $2`,
        [before, limit],
      );
      return rows;
    },

    /**
     * A batch of the organization's jobs and uploads, for the deletion of the organization: the
     * names of the objects their documents are stored in (those kept in the row have none).
     */
    async orgDataToPurge(
      orgId: string,
      limit: number,
    ): Promise<{
      jobs: Array<{ id: string; stored: boolean }>;
      uploads: Array<{ id: string; stored: boolean }>;
    }> {
      const [jobs, uploads] = await Promise.all([
        pool.query<{ id: string; stored: boolean }>(
          `SELECT id, document IS NULL AND document_deleted_at IS NULL AS stored FROM jobs
           WHERE org_id = $1 LIMIT $2`,
          [orgId, limit],
        ),
        pool.query<{ id: string; stored: boolean }>(
          'SELECT id, deleted_at IS NULL AS stored FROM uploads WHERE org_id = $1 LIMIT $2',
          [orgId, limit],
        ),
      ]);
      return { jobs: jobs.rows, uploads: uploads.rows };
    },

    /**
     * Deletes the jobs (with their events) and uploads named, once their objects are gone; with
     * `last`, also the organization's templates and test-print counts, and up to `limit` of its
     * Idempotency-Keys. Answers the rows deleted, and whether nothing of the organization is left
     * (only ever with `last`).
     */
    async purgeOrgData(
      orgId: string,
      jobIds: string[],
      uploadIds: string[],
      last: boolean,
      limit: number,
    ): Promise<{ deleted: number; done: boolean }> {
      return withTx(pool, async (tx) => {
        const statements: Array<[string, unknown[]]> = [
          [
            'DELETE FROM job_events WHERE org_id = $1 AND job_id = ANY($2::UUID[])',
            [orgId, jobIds],
          ],
          ['DELETE FROM jobs WHERE org_id = $1 AND id = ANY($2::UUID[])', [orgId, jobIds]],
          ['DELETE FROM uploads WHERE org_id = $1 AND id = ANY($2::UUID[])', [orgId, uploadIds]],
        ];
        if (last) {
          statements.push(
            ['DELETE FROM templates WHERE org_id = $1', [orgId]],
            ['DELETE FROM test_print_counts WHERE org_id = $1', [orgId]],
          );
        }
        let deleted = 0;
        for (const [text, values] of statements) {
          deleted += (await tx.query(text, values)).rowCount ?? 0;
        }
        if (!last) return { deleted, done: false };
        const keys = await tx.query(
          `DELETE FROM idempotency_keys WHERE org_id = $1
             AND key IN (SELECT key FROM idempotency_keys WHERE org_id = $1 LIMIT $2)`,
          [orgId, limit],
        );
        const n = keys.rowCount ?? 0;
        return { deleted: deleted + n, done: n < limit };
      });
    },

    async markDocumentsDeleted(ids: string[]): Promise<void> {
      if (ids.length === 0) return;
      await pool.query(
        'UPDATE jobs SET document_deleted_at = $2, document = NULL WHERE id = ANY($1)',
        [ids, clock.now()],
      );
    },

    /**
     * Records an upload, if the organization's uploads not yet past retention leave room for it in
     * `quotaBytes`; else `413 payload_too_large` saying how much they hold. Uploads recorded at
     * the same moment may each see the other's room.
     */
    async createUpload(upload: Omit<Upload, 'createdAt'>, quotaBytes: number): Promise<Upload> {
      const { rows } = await pool.query<UploadRow & { held: string }>(
        `WITH held AS (
           SELECT COALESCE(sum(size), 0) AS bytes FROM uploads
           WHERE org_id = $2::UUID AND deleted_at IS NULL
         ), added AS (
           INSERT INTO uploads (id, org_id, content_type, size, sha256, created_at)
           SELECT $1::UUID, $2::UUID, $3::TEXT, $4::INT8, $5::TEXT, $6::TIMESTAMPTZ
           FROM held WHERE held.bytes + $4::INT8 <= $7::INT8
           RETURNING ${UPLOAD_COLUMNS}
         )
         SELECT added.*, held.bytes AS held FROM held LEFT JOIN added ON true`,
        [
          upload.id,
          upload.orgId,
          upload.contentType,
          upload.size,
          upload.sha256,
          clock.now(),
          quotaBytes,
        ],
      );
      const row = rows[0] as UploadRow & { held: string };
      if (!row.id) {
        throw new SpoolError(
          'payload_too_large',
          `the organization's uploads hold ${row.held} bytes, and this one (${upload.size}) would pass its ${quotaBytes}: use them in jobs and let them pass retention, or send the document with the job`,
        );
      }
      return toUpload(row);
    },

    /** Removes the row of an upload whose bytes could not be stored. */
    async dropUpload(orgId: string, id: string): Promise<void> {
      await pool.query('DELETE FROM uploads WHERE org_id = $1 AND id = $2', [orgId, id]);
    },

    /** An upload of the organization; 410 once it is past retention. */
    async getUpload(orgId: string, id: string): Promise<Upload> {
      const { rows } = await pool.query<UploadRow>(
        `SELECT ${UPLOAD_COLUMNS} FROM uploads WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      const row = rows[0];
      if (!row)
        throw new SpoolError('invalid', 'upload_id names no upload of this organization', {
          param: 'content.upload_id',
        });
      if (row.deleted_at)
        throw new SpoolError('content_deleted', 'the upload is past retention and was deleted');
      return toUpload(row);
    },

    async uploadsToDelete(before: Date, limit: number): Promise<string[]> {
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM uploads WHERE created_at <= $1 AND deleted_at IS NULL
         ORDER BY created_at LIMIT $2`,
        [before, limit],
      );
      return rows.map((r) => r.id);
    },

    async markUploadsDeleted(ids: string[]): Promise<void> {
      if (ids.length === 0) return;
      await pool.query('UPDATE uploads SET deleted_at = $2 WHERE id = ANY($1)', [ids, clock.now()]);
    },

    async createTemplate(t: Omit<Template, 'id' | 'createdAt'>): Promise<Template> {
      const { rows } = await pool.query<TemplateRow>(
        `INSERT INTO templates (id, org_id, name, kind, body, fields, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${TEMPLATE_COLUMNS}`,
        [randomUUID(), t.orgId, t.name, t.kind, t.body, JSON.stringify(t.fields), clock.now()],
      );
      return toTemplate(rows[0] as TemplateRow);
    },

    async getTemplate(orgId: string, id: string): Promise<Template | undefined> {
      const { rows } = await pool.query<TemplateRow>(
        `SELECT ${TEMPLATE_COLUMNS} FROM templates WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      return rows[0] ? toTemplate(rows[0]) : undefined;
    },

    async listTemplates(orgId: string, limit: number, cursor: string) {
      const { items, nextCursor } = await listOldestFirst<TemplateRow>(
        pool,
        {
          select: `SELECT ${TEMPLATE_COLUMNS} FROM templates`,
          where: 'org_id = $1',
          params: [orgId],
        },
        limit,
        cursor,
      );
      return { items: items.map(toTemplate), nextCursor };
    },
  };
}

export type JobStore = ReturnType<typeof createJobStore>;
