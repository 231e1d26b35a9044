/**
 * The deletion of an organization's webhooks data, in batches, for the deletion of the
 * organization.
 */
import type pg from 'pg';
import { withTx } from '../../lib/db.js';

/** What a batch of a purge did. */
export interface Purged {
  /** Rows deleted: deliveries, attempts and, in the last batch, endpoints. */
  deleted: number;
  /** Whether the organization's endpoints changed (disabled or deleted). */
  endpointsChanged: boolean;
  /** Whether nothing is left. */
  done: boolean;
}

export interface PurgeStore {
  /**
   * For the deletion of the organization: its endpoints disabled (so the fan-out adds nothing
   * more for it), a batch of their deliveries deleted with their attempts, and once none is left
   * the endpoints and its deliveries per day (`done`). Deliveries are found by endpoint, as
   * their indexes go.
   */
  purgeOrg(orgId: string, limit: number): Promise<Purged>;
}

export function createPurgeStore(pool: pg.Pool): PurgeStore {
  return {
    async purgeOrg(
      orgId: string,
      limit: number,
    ): Promise<{ deleted: number; endpointsChanged: boolean; done: boolean }> {
      return withTx(pool, async (tx) => {
        const endpoints = await tx.query<{ id: string }>(
          'SELECT id FROM webhook_endpoints WHERE org_id = $1',
          [orgId],
        );
        const endpointIds = endpoints.rows.map((r) => r.id);
        const disabled = await tx.query(
          'UPDATE webhook_endpoints SET enabled = false WHERE org_id = $1 AND enabled',
          [orgId],
        );
        const deliveries = await tx.query<{ id: string }>(
          `DELETE FROM webhook_deliveries WHERE org_id = $1 AND id IN
             (SELECT id FROM webhook_deliveries WHERE endpoint_id = ANY($2::UUID[]) LIMIT $3)
           RETURNING id`,
          [orgId, endpointIds, limit],
        );
        const ids = deliveries.rows.map((r) => r.id);
        const attempts = await tx.query(
          'DELETE FROM webhook_attempts WHERE org_id = $1 AND delivery_id = ANY($2::UUID[])',
          [orgId, ids],
        );
        const done = ids.length < limit;
        if (done) {
          await tx.query('DELETE FROM webhook_endpoints WHERE org_id = $1', [orgId]);
          await tx.query('DELETE FROM webhook_usage_days WHERE org_id = $1', [orgId]);
        }
        return {
          deleted: ids.length + (attempts.rowCount ?? 0) + (done ? endpointIds.length : 0),
          endpointsChanged: (disabled.rowCount ?? 0) > 0 || (done && endpointIds.length > 0),
          done,
        };
      });
    },
  };
}
