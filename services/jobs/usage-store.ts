/**
 * The tables of usage per organization and UTC day: what the usage rollup reads of `jobs` and
 * writes to `usage_days` (and to the two columns of `jobs` it keeps, `pages` and
 * `usage_failed_on`), and what GetUsage answers from. The rollup's reads of `jobs` use the indexes
 * the service already keeps: jobs created in a window are read organization by organization
 * through `jobs_org_created` (the organizations found by skipping through that index, one step
 * each), jobs finished in it through `jobs_finished`.
 */
import type pg from 'pg';
import type { RollupWindow } from '../../lib/rollup.js';
import { columns, WriteBatch } from '../../lib/sql.js';
import {
  type CreatedCount,
  type FailedMark,
  type FinishedJob,
  planRetried,
  planWindow,
  type UsageChange,
  type UsagePlan,
} from './usage-plan.js';

/** The table of the rollup's mark and lease (lib/rollup.ts). */
export const USAGE_ROLLUPS_TABLE = 'usage_rollups';

/** One organization's figures on one day, as GetUsage answers them. */
export interface UsageDay {
  orgId: string;
  date: string;
  jobsCreated: number;
  jobsPrinted: number;
  jobsFailed: number;
  pages: number;
  bytes: number;
}

/** A printed PDF whose pages are still to count. */
export interface PdfToCount {
  id: string;
  orgId: string;
  sha256: string;
  /** Its bytes, when kept with the job; else they are in the object store. */
  document: Buffer | null;
  /** Retention deleted the document before it was counted: it counts 0 pages. */
  deleted: boolean;
}

export interface UsageStore {
  /** When the first job was created; undefined when there is none. */
  firstActivity(): Promise<Date | undefined>;
  /** The first time at or after `at` a job was created or finished; undefined when none. */
  nextActivity(at: Date): Promise<Date | undefined>;
  /** Up to `limit` jobs printed in `window` whose PDF's pages are not counted yet. */
  pdfsToCount(window: RollupWindow, limit: number): Promise<PdfToCount[]>;
  /** Keeps each job's page count (a count already kept stays). */
  setPages(counts: ReadonlyArray<{ id: string; orgId: string; pages: number }>): Promise<void>;
  /** In `tx`: adds the jobs created and finished in `window` to their days. */
  countWindow(tx: pg.PoolClient, window: RollupWindow): Promise<UsagePlan>;
  /**
   * Takes jobs counted failed, then retried and not finished since, off the day they were counted
   * failed on; up to `limit` of them. Answers how many.
   */
  uncountRetried(tx: pg.PoolClient, limit: number): Promise<number>;
  /** The figures of `orgIds` from `from` to `to` (dates, both included), days with any. */
  usage(orgIds: readonly string[], from: string, to: string): Promise<UsageDay[]>;
}

/** The organizations that have jobs, one index step each: `orgs (org_id)`, NULL-terminated. */
const ORGS_WITH_JOBS = `WITH RECURSIVE orgs (org_id) AS (
    SELECT (SELECT org_id FROM jobs ORDER BY org_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.org_id FROM jobs j WHERE j.org_id > orgs.org_id ORDER BY j.org_id LIMIT 1)
    FROM orgs WHERE orgs.org_id IS NOT NULL
  )`;

const CHANGE_TYPES = ['UUID', 'DATE', 'INT8', 'INT8', 'INT8', 'INT8', 'INT8'] as const;
const MARK_TYPES = ['UUID', 'UUID', 'DATE'] as const;

/** Adds the plan's writes to `batch`: its changes to `usage_days`, its marks to `jobs`. */
function addPlan(batch: WriteBatch, plan: UsagePlan): void {
  if (plan.changes.length > 0) {
    const rows = columns(plan.changes, (c: UsageChange) => [
      c.orgId,
      c.day,
      c.jobsCreated,
      c.jobsPrinted,
      c.jobsFailed,
      c.pages,
      c.bytes,
    ]);
    batch.add(
      `INSERT INTO usage_days (org_id, day, jobs_created, jobs_printed, jobs_failed, pages, bytes)
       ${batch.rows(rows, CHANGE_TYPES)}
       ON CONFLICT (org_id, day) DO UPDATE SET
         jobs_created = usage_days.jobs_created + excluded.jobs_created,
         jobs_printed = usage_days.jobs_printed + excluded.jobs_printed,
         jobs_failed = usage_days.jobs_failed + excluded.jobs_failed,
         pages = usage_days.pages + excluded.pages,
         bytes = usage_days.bytes + excluded.bytes`,
    );
  }
  if (plan.marks.length > 0) {
    const rows = columns(plan.marks, (m: FailedMark) => [m.orgId, m.id, m.failedOn]);
    batch.add(
      `UPDATE jobs SET usage_failed_on = m.failed_on
       FROM (${batch.rows(rows, MARK_TYPES)}) AS m (org_id, id, failed_on)
       WHERE jobs.org_id = m.org_id AND jobs.id = m.id`,
    );
  }
}

async function writePlan(tx: pg.PoolClient, plan: UsagePlan): Promise<void> {
  const batch = new WriteBatch();
  addPlan(batch, plan);
  if (plan.changes.length > 0 || plan.marks.length > 0) {
    await tx.query(batch.text(), batch.values);
  }
}

export function createUsageStore(pool: pg.Pool): UsageStore {
  return {
    async firstActivity() {
      const { rows } = await pool.query<{ first: Date | null }>(
        `${ORGS_WITH_JOBS}
         SELECT min(f.first) AS first FROM orgs, LATERAL (
           SELECT min(created_at) AS first FROM jobs WHERE jobs.org_id = orgs.org_id
         ) f WHERE orgs.org_id IS NOT NULL`,
      );
      return rows[0]?.first ?? undefined;
    },

    async nextActivity(at) {
      const { rows } = await pool.query<{ created: Date | null; finished: Date | null }>(
        `${ORGS_WITH_JOBS}
         SELECT
           (SELECT min(f.next) FROM orgs, LATERAL (
              SELECT min(created_at) AS next FROM jobs
              WHERE jobs.org_id = orgs.org_id AND created_at >= $1
            ) f WHERE orgs.org_id IS NOT NULL) AS created,
           (SELECT min(finished_at) FROM jobs WHERE finished_at >= $1) AS finished`,
        [at],
      );
      const times = [rows[0]?.created, rows[0]?.finished].filter(
        (t): t is Date => t instanceof Date,
      );
      if (times.length === 0) return undefined;
      return new Date(Math.min(...times.map((t) => t.getTime())));
    },

    async pdfsToCount(window, limit) {
      const { rows } = await pool.query<{
        id: string;
        org_id: string;
        sha256: string;
        document: Buffer | null;
        deleted: boolean;
      }>(
        `SELECT id, org_id, sha256, document, document_deleted_at IS NOT NULL AS deleted
         FROM jobs
         WHERE finished_at >= $1 AND finished_at < $2 AND status = 'printed'
           AND content_type = 'application/pdf' AND pages IS NULL
         LIMIT $3`,
        [window.from, window.to, limit],
      );
      return rows.map((r) => ({
        id: r.id,
        orgId: r.org_id,
        sha256: r.sha256,
        document: r.document,
        deleted: r.deleted,
      }));
    },

    async setPages(counts) {
      if (counts.length === 0) return;
      const batch = new WriteBatch();
      const rows = columns(counts, (c) => [c.orgId, c.id, c.pages]);
      await pool.query(
        `UPDATE jobs SET pages = p.pages
         FROM (${batch.rows(rows, ['UUID', 'UUID', 'INT4'])}) AS p (org_id, id, pages)
         WHERE jobs.org_id = p.org_id AND jobs.id = p.id AND jobs.pages IS NULL`,
        batch.values,
      );
    },

    async countWindow(tx, window) {
      const [created, finished] = await Promise.all([
        tx.query<{ org_id: string; n: string; bytes: string }>(
          `${ORGS_WITH_JOBS}
           SELECT orgs.org_id, c.n, c.bytes FROM orgs, LATERAL (
             SELECT count(*) AS n, COALESCE(sum(size), 0) AS bytes FROM jobs
             WHERE jobs.org_id = orgs.org_id AND created_at >= $1 AND created_at < $2
           ) c WHERE orgs.org_id IS NOT NULL AND c.n > 0`,
          [window.from, window.to],
        ),
        tx.query<{
          id: string;
          org_id: string;
          status: string;
          pages: number | null;
          is_pdf: boolean;
          copies: number;
          failed_on: string | null;
        }>(
          `SELECT id, org_id, status, pages, content_type = 'application/pdf' AS is_pdf,
             COALESCE((options->>'copies')::INT4, 1) AS copies, usage_failed_on::TEXT AS failed_on
           FROM jobs
           WHERE finished_at >= $1 AND finished_at < $2
             AND (status IN ('printed', 'failed') OR usage_failed_on IS NOT NULL)`,
          [window.from, window.to],
        ),
      ]);
      const plan = planWindow(
        window.day,
        created.rows.map(
          (r): CreatedCount => ({ orgId: r.org_id, jobs: Number(r.n), bytes: Number(r.bytes) }),
        ),
        finished.rows.map(
          (r): FinishedJob => ({
            id: r.id,
            orgId: r.org_id,
            status: r.status,
            pages: r.pages,
            isPdf: r.is_pdf,
            copies: r.copies,
            failedOn: r.failed_on,
          }),
        ),
      );
      await writePlan(tx, plan);
      return plan;
    },

    async uncountRetried(tx, limit) {
      const { rows } = await tx.query<{ id: string; org_id: string; failed_on: string }>(
        `SELECT id, org_id, usage_failed_on::TEXT AS failed_on FROM jobs
         WHERE usage_failed_on IS NOT NULL AND finished_at IS NULL
         LIMIT $1`,
        [limit],
      );
      await writePlan(
        tx,
        planRetried(rows.map((r) => ({ id: r.id, orgId: r.org_id, failedOn: r.failed_on }))),
      );
      return rows.length;
    },

    async usage(orgIds, from, to) {
      const { rows } = await pool.query<{
        org_id: string;
        day: string;
        jobs_created: string;
        jobs_printed: string;
        jobs_failed: string;
        pages: string;
        bytes: string;
      }>(
        `SELECT org_id, day::TEXT AS day, jobs_created, jobs_printed, jobs_failed, pages, bytes
         FROM usage_days
         WHERE org_id = ANY($1::UUID[]) AND day >= $2::DATE AND day <= $3::DATE
         ORDER BY day, org_id`,
        [orgIds, from, to],
      );
      return rows.map((r) => ({
        orgId: r.org_id,
        date: r.day,
        jobsCreated: Number(r.jobs_created),
        jobsPrinted: Number(r.jobs_printed),
        jobsFailed: Number(r.jobs_failed),
        pages: Number(r.pages),
        bytes: Number(r.bytes),
      }));
    },
  };
}
