/**
 * The jobs tables. Every query is scoped by organization; every change writes the job, its event
 * and the messages it causes (webhook event, dispatch to the station) in one transaction.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Job, JobEvent } from '../../gen/spool/v1/jobs.js';
import type { PrintOptions } from '../../gen/spool/v1/stations.js';
import { subjects } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, notFound } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { jobJson } from '../../lib/job-view.js';
import { enqueue, type OutboxMessage } from '../../lib/outbox.js';
import { decodeCursor, page } from '../../lib/paging.js';
import {
  type JobStatus,
  PENDING_STATUSES,
  statusesFor,
  type Trigger,
  transition,
} from './machine.js';

export const OUTBOX_TABLE = 'jobs_outbox';

interface JobRow {
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
  created_at: Date;
  updated_at: Date;
}

const JOB_COLUMNS = `id, org_id, printer_id, station_id, status, status_detail, reference, title,
  live, options, content_type, size, sha256, attempt, version, created_at, updated_at`;

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
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** What a station is sent: the job as the stations service needs it to make an offer. */
export interface DispatchOffer {
  kind: 'offer';
  job: ReturnType<typeof jobJson> & { sha256: string; options: PrintOptions };
}

export interface DispatchWithdraw {
  kind: 'withdraw';
  job_id: string;
  attempt: number;
}

export type DispatchMessage = DispatchOffer | DispatchWithdraw;

function dispatchMessage(job: Job, kind: 'offer' | 'withdraw'): OutboxMessage {
  const payload: DispatchMessage =
    kind === 'offer'
      ? {
          kind,
          job: { ...jobJson(job), sha256: job.sha256, options: job.options ?? emptyOptions() },
        }
      : { kind, job_id: job.id, attempt: job.attempt };
  return { subject: subjects.dispatch(job.orgId, job.stationId), payload };
}

function emptyOptions(): PrintOptions {
  return {
    copies: 0,
    duplex: '',
    color: '',
    paper: '',
    tray: '',
    pages: '',
    fitToPage: false,
    rotate: 0,
  };
}

export interface NewJob {
  id: string;
  orgId: string;
  printerId: string;
  stationId: string;
  live: boolean;
  title: string;
  reference: string;
  options: PrintOptions;
  contentType: string;
  size: number;
  sha256: string;
  actor: string;
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
export interface Applied {
  job: Job;
  changed: boolean;
}

export function createJobStore(pool: pg.Pool, clock: Clock) {
  /** Records the job's change; `version` is the job's version after the change. */
  async function insertEvent(
    tx: pg.PoolClient,
    job: Job,
    version: number,
    at: Date,
    detail: string,
    actor: string,
  ): Promise<void> {
    await tx.query(
      `INSERT INTO job_events (id, job_id, org_id, seq, at, status, detail, actor)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [randomUUID(), job.id, job.orgId, version, at, job.status, detail, actor],
    );
  }

  function filterSql(orgId: string, f: JobFilters, withStatus: boolean) {
    const where = ['org_id = $1'];
    const params: unknown[] = [orgId];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (withStatus && f.statuses.length > 0) add('status = ANY(?)', f.statuses);
    if (f.reference) add('reference = ?', f.reference);
    if (f.printerId) add('printer_id = ?', f.printerId);
    if (f.stationId) add('station_id = ?', f.stationId);
    if (f.createdAfter) add('created_at > ?', f.createdAfter);
    if (f.createdBefore) add('created_at < ?', f.createdBefore);
    return { where, params };
  }

  return {
    async create(job: NewJob): Promise<Job> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const { rows } = await tx.query<JobRow>(
          `INSERT INTO jobs (id, org_id, printer_id, station_id, status, reference, title, live,
             options, content_type, size, sha256, attempt, created_by, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9, $10, $11, 1, $12, $13, $13)
           RETURNING ${JOB_COLUMNS}`,
          [
            job.id,
            job.orgId,
            job.printerId,
            job.stationId,
            job.reference,
            job.title,
            job.live,
            JSON.stringify(job.options),
            job.contentType,
            job.size,
            job.sha256,
            job.actor,
            now,
          ],
        );
        const created = toJob(rows[0] as JobRow);
        await insertEvent(tx, created, 1, now, 'created', job.actor);
        await enqueue(tx, OUTBOX_TABLE, [
          eventMessage(created.orgId, 'job.created', { job: jobJson(created) }, now),
          dispatchMessage(created, 'offer'),
        ]);
        return created;
      });
    },

    async get(orgId: string, jobId: string): Promise<{ job: Job; events: JobEvent[] }> {
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs WHERE org_id = $1 AND id = $2`,
        [orgId, jobId],
      );
      if (!rows[0]) throw notFound('no such job');
      const events = await pool.query<{ at: Date; status: string; detail: string; actor: string }>(
        'SELECT at, status, detail, actor FROM job_events WHERE org_id = $1 AND job_id = $2 ORDER BY seq',
        [orgId, jobId],
      );
      return { job: toJob(rows[0]), events: events.rows };
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
    async apply(
      orgId: string,
      jobId: string,
      trigger: Trigger,
      how: { actor: string; detail?: string; attempt?: number },
    ): Promise<Applied> {
      return withTx(pool, async (tx) => {
        const { rows } = await tx.query<JobRow>(
          `SELECT ${JOB_COLUMNS} FROM jobs WHERE org_id = $1 AND id = $2`,
          [orgId, jobId],
        );
        const row = rows[0];
        if (!row) throw notFound('no such job');
        const current = toJob(row);
        const fromApi = trigger === 'cancel' || trigger === 'retry';
        if (how.attempt !== undefined && how.attempt !== current.attempt) {
          return { job: current, changed: false };
        }
        const t = transition(row.status, trigger);
        if (!t) {
          if (!fromApi) return { job: current, changed: false };
          throw conflict(
            `a ${row.status} job cannot be ${trigger === 'cancel' ? 'cancelled' : 'retried'}; ` +
              `only ${statusesFor(trigger).join(', ')} jobs can`,
          );
        }
        const now = clock.now();
        const detail = how.detail ?? '';
        const statusDetail = t.to === 'failed' ? detail : '';
        const attempt = t.newAttempt ? current.attempt + 1 : current.attempt;
        const updated = await tx.query<JobRow>(
          `UPDATE jobs SET status = $3, status_detail = $4, attempt = $5, updated_at = $6,
             version = version + 1
           WHERE org_id = $1 AND id = $2 RETURNING ${JOB_COLUMNS}`,
          [orgId, jobId, t.to, statusDetail, attempt, now],
        );
        const updatedRow = updated.rows[0] as JobRow;
        const job = toJob(updatedRow);
        await insertEvent(tx, job, updatedRow.version, now, detail || trigger, how.actor);
        const messages: OutboxMessage[] = [];
        if (t.event) messages.push(eventMessage(orgId, t.event, { job: jobJson(job) }, now));
        if (t.dispatch === 'withdraw') messages.push(dispatchMessage(current, 'withdraw'));
        if (t.dispatch === 'offer') messages.push(dispatchMessage(job, 'offer'));
        await enqueue(tx, OUTBOX_TABLE, messages);
        return { job, changed: true };
      });
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
  };
}

export type JobStore = ReturnType<typeof createJobStore>;
