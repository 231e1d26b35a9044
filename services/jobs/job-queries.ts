/**
 * Reading jobs: one job with its history, a page of an organization's jobs with the counts by
 * status, a job's document, and the jobs a station should have. Every read is scoped by
 * organization.
 */
import type pg from 'pg';
import type { Job, JobEvent, ListJobsRequest, ListJobsResponse } from '../../gen/spool/v1/jobs.js';
import type { PrintConfirmation } from '../../gen/spool/v1/stations.js';
import { notFound, SpoolError } from '../../lib/errors.js';
import { decodeCursor, page } from '../../lib/paging.js';
import { documentPastRetention, JOB_COLUMNS, type JobRow, toJob } from './job-rows.js';
import { PENDING_STATUSES } from './machine.js';

/** What a list of jobs may be narrowed by, as ListJobs asks. */
export type JobFilters = Pick<
  ListJobsRequest,
  'statuses' | 'reference' | 'printerId' | 'stationId' | 'createdAfter' | 'createdBefore'
>;

export interface JobQueries {
  get(orgId: string, jobId: string): Promise<{ job: Job; events: JobEvent[] }>;
  /**
   * The job, for its document; 410 once the document is past retention. Serving the document
   * back (`serve`) is refused for sealed content, which only this service may open.
   */
  withDocument(
    orgId: string,
    jobId: string,
    use: 'serve' | 'reprint' | 'print',
  ): Promise<Job & { sealed: boolean }>;
  /** A page of jobs, newest first, and how many of the filtered jobs have each status. */
  list(
    orgId: string,
    filters: JobFilters,
    limit: number,
    cursor: string,
  ): Promise<ListJobsResponse>;
  /** The document kept with a job, or `undefined` when it lives in the object store. */
  inlineDocument(orgId: string, jobId: string): Promise<Buffer | undefined>;
  /** The jobs a station should have, oldest first. */
  pending(orgId: string, stationId: string): Promise<Job[]>;
  /**
   * The pending jobs of many stations in one query, each station scoped by its organization;
   * oldest first.
   */
  pendingForStations(stations: Array<{ orgId: string; stationId: string }>): Promise<Job[]>;
}

/** The WHERE clause of `filters`; the statuses are left out of the counts by status. */
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

export function createJobQueries(pool: pg.Pool): JobQueries {
  async function getRow(orgId: string, jobId: string): Promise<JobRow> {
    const { rows } = await pool.query<JobRow>(
      `SELECT ${JOB_COLUMNS} FROM jobs WHERE org_id = $1 AND id = $2`,
      [orgId, jobId],
    );
    if (!rows[0]) throw notFound('no such job');
    return rows[0];
  }

  return {
    async get(orgId, jobId) {
      const row = await getRow(orgId, jobId);
      const events = await pool.query<
        Omit<JobEvent, 'confirmation'> & { confirmation: PrintConfirmation | null }
      >(
        `SELECT at, status, detail, actor, region, confirmation FROM job_events
         WHERE org_id = $1 AND job_id = $2 ORDER BY seq`,
        [orgId, jobId],
      );
      // NULL for every event but a printed one.
      const history: JobEvent[] = events.rows.map((e) => ({
        ...e,
        confirmation: e.confirmation ?? undefined,
      }));
      return { job: toJob(row), events: history };
    },

    async withDocument(orgId, jobId, use) {
      const row = await getRow(orgId, jobId);
      if (use === 'serve' && row.sealed) {
        throw new SpoolError(
          'forbidden',
          'the job’s content was sealed: it is printed and reprinted, but never served back',
        );
      }
      if (row.document_deleted_at) throw documentPastRetention();
      return { ...toJob(row), sealed: row.sealed };
    },

    async list(orgId, filters, limit, cursor) {
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

    async inlineDocument(orgId, jobId) {
      const { rows } = await pool.query<{ document: Buffer | null }>(
        'SELECT document FROM jobs WHERE org_id = $1 AND id = $2',
        [orgId, jobId],
      );
      if (!rows[0]) throw notFound('no such job');
      return rows[0].document ?? undefined;
    },

    async pending(orgId, stationId) {
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs
         WHERE org_id = $1 AND station_id = $2 AND status = ANY($3)
         ORDER BY priority DESC, created_at, id`,
        [orgId, stationId, PENDING_STATUSES],
      );
      return rows.map(toJob);
    },

    async pendingForStations(stations) {
      if (stations.length === 0) return [];
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs
         WHERE station_id = ANY($2::UUID[]) AND status = ANY($3)
           AND (org_id, station_id) IN (SELECT * FROM unnest($1::UUID[], $2::UUID[]))
         ORDER BY priority DESC, created_at, id`,
        [stations.map((s) => s.orgId), stations.map((s) => s.stationId), PENDING_STATUSES],
      );
      return rows.map(toJob);
    },
  };
}
