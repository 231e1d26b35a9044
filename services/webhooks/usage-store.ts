/**
 * Deliveries per organization and UTC day: what the usage rollup (usage-rollup.ts) reads of the
 * delivery log and adds to `webhook_usage_days`, and what GetDeliveryUsage answers from. A
 * delivery is an event delivered to an endpoint: a delivery that succeeded, counted on the day it
 * did, through the log's `webhook_deliveries_finished` index. Attempts that failed, deliveries that
 * gave up, and test pings are not counted; a resend that is delivered again counts again.
 */
import type pg from 'pg';
import type { RollupWindow } from '../../lib/rollup.js';

/** The table of the rollup's mark and lease (lib/rollup.ts). */
export const USAGE_ROLLUPS_TABLE = 'webhook_usage_rollups';

/** One organization's deliveries on one day. */
export interface DeliveryUsageDay {
  orgId: string;
  date: string;
  deliveries: number;
}

export interface DeliveryUsageStore {
  /** When the first delivery finished; undefined when none has. */
  firstDelivery(): Promise<Date | undefined>;
  /** The first time at or after `at` a delivery finished; undefined when none did. */
  nextDelivery(at: Date): Promise<Date | undefined>;
  /** In `tx`: adds the deliveries that succeeded in `window` to its day. */
  countDeliveries(tx: pg.PoolClient, window: RollupWindow): Promise<void>;
  /** The deliveries of `orgIds` from `from` to `to` (dates, both included), days with any. */
  deliveryUsage(orgIds: readonly string[], from: string, to: string): Promise<DeliveryUsageDay[]>;
}

export function createDeliveryUsageStore(pool: pg.Pool): DeliveryUsageStore {
  const first = async (text: string, values: unknown[]) => {
    const { rows } = await pool.query<{ at: Date | null }>(text, values);
    return rows[0]?.at ?? undefined;
  };
  return {
    firstDelivery: () =>
      first(
        'SELECT min(finished_at) AS at FROM webhook_deliveries WHERE finished_at IS NOT NULL',
        [],
      ),
    nextDelivery: (at) =>
      first(
        `SELECT min(finished_at) AS at FROM webhook_deliveries
         WHERE finished_at IS NOT NULL AND finished_at >= $1`,
        [at],
      ),

    async countDeliveries(tx, window) {
      await tx.query(
        `INSERT INTO webhook_usage_days (org_id, day, deliveries)
         SELECT org_id, $3::DATE, count(*) FROM webhook_deliveries
         WHERE finished_at >= $1 AND finished_at < $2 AND state = 'succeeded'
           AND event_type <> 'ping'
         GROUP BY org_id
         ON CONFLICT (org_id, day) DO UPDATE SET
           deliveries = webhook_usage_days.deliveries + excluded.deliveries`,
        [window.from, window.to, window.day],
      );
    },

    async deliveryUsage(orgIds, from, to) {
      const { rows } = await pool.query<{ org_id: string; day: string; deliveries: string }>(
        `SELECT org_id, day::TEXT AS day, deliveries FROM webhook_usage_days
         WHERE org_id = ANY($1::UUID[]) AND day >= $2::DATE AND day <= $3::DATE
           AND deliveries > 0
         ORDER BY day, org_id`,
        [orgIds, from, to],
      );
      return rows.map((r) => ({
        orgId: r.org_id,
        date: r.day,
        deliveries: Number(r.deliveries),
      }));
    },
  };
}
