/**
 * The delivery log's retention: deliveries (and their attempts) that finished more than
 * `webhook_delivery_retention_days` ago (an installation setting, 30 days by default, set like the
 * job document retention through `PATCH /admin/v1/settings`) are deleted by a retention sweeper
 * (lib/retention-sweeper.ts) through this store.
 */
import type pg from 'pg';
import { withTx } from '../../lib/db.js';

/** The delivery log's deletions for retention. */
export interface RetentionStore {
  /**
   * Deletes up to `limit` deliveries of any organization that finished before `cutoff`, with
   * their attempts; answers how many went. A pending delivery (a resent one included) is never
   * deleted.
   */
  deleteFinishedBefore(cutoff: Date, limit: number): Promise<number>;
}

export function createRetentionStore(pool: pg.Pool): RetentionStore {
  return {
    async deleteFinishedBefore(cutoff, limit) {
      return withTx(pool, async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `SELECT id FROM webhook_deliveries
           WHERE state <> 'pending' AND finished_at < $1
           ORDER BY finished_at LIMIT $2`,
          [cutoff, limit],
        );
        const ids = rows.map((r) => r.id);
        if (ids.length === 0) return 0;
        await tx.query('DELETE FROM webhook_attempts WHERE delivery_id = ANY($1)', [ids]);
        await tx.query('DELETE FROM webhook_deliveries WHERE id = ANY($1)', [ids]);
        return ids.length;
      });
    },
  };
}
