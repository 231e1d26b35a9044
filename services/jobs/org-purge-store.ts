/**
 * The deletion of an organization's data from the jobs tables, a batch at a time: its jobs (with
 * their events), uploads, templates, pools, test-print counts, usage per day and
 * Idempotency-Keys. The objects of their documents are deleted first, by the caller (the PurgeOrg
 * handler).
 */
import type pg from 'pg';
import { withTx } from '../../lib/db.js';

/** An organization's jobs or uploads, and whether each has a document in the object store. */
export type Stored = Array<{ id: string; stored: boolean }>;

export interface OrgPurgeStore {
  /**
   * A batch of the organization's jobs and uploads, for the deletion of the organization: the
   * names of the objects their documents are stored in (those kept in the row have none).
   */
  orgDataToPurge(orgId: string, limit: number): Promise<{ jobs: Stored; uploads: Stored }>;
  /**
   * Deletes the jobs (with their events) and uploads named, once their objects are gone; with
   * `last`, also the organization's templates, pools (with their members), test-print counts and
   * usage per day, and up to `limit` of its Idempotency-Keys. Answers the rows deleted, and
   * whether nothing of the organization is left (only ever with `last`).
   */
  purgeOrgData(
    orgId: string,
    jobIds: string[],
    uploadIds: string[],
    last: boolean,
    limit: number,
  ): Promise<{ deleted: number; done: boolean }>;
}

export function createOrgPurgeStore(pool: pg.Pool): OrgPurgeStore {
  return {
    async orgDataToPurge(orgId, limit) {
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

    async purgeOrgData(orgId, jobIds, uploadIds, last, limit) {
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
            ['DELETE FROM pool_members WHERE org_id = $1', [orgId]],
            ['DELETE FROM pools WHERE org_id = $1', [orgId]],
            ['DELETE FROM test_print_counts WHERE org_id = $1', [orgId]],
            ['DELETE FROM usage_days WHERE org_id = $1', [orgId]],
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
  };
}
