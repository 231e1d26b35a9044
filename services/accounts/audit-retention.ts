/**
 * The audit log's retention: entries older than `audit_retention_days` (an installation setting,
 * 365 days by default, set through `PATCH /admin/v1/settings`) are deleted by a
 * retention sweeper (lib/retention-sweeper.ts) through this store.
 */
import type pg from 'pg';

/** The audit log's deletions for retention. */
export interface AuditRetentionStore {
  /** Deletes up to `limit` entries, the oldest first, that began before `cutoff`; answers how many. */
  deleteBefore(cutoff: Date, limit: number): Promise<number>;
}

export function createAuditRetentionStore(pool: pg.Pool): AuditRetentionStore {
  return {
    async deleteBefore(cutoff, limit) {
      // A bounded subquery rather than DELETE … LIMIT, which PostgreSQL does not accept; the
      // `audit_log_at` index finds the oldest rows.
      const { rowCount } = await pool.query(
        `DELETE FROM audit_log WHERE id IN (
           SELECT id FROM audit_log WHERE at < $1 ORDER BY at, id LIMIT $2)`,
        [cutoff, limit],
      );
      return rowCount ?? 0;
    },
  };
}
