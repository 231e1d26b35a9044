/**
 * The webhooks service's usage rollup (lib/rollup.ts): every minute, the deliveries that
 * succeeded since its mark are added to `webhook_usage_days`, per organization and UTC day
 * (usage-store.ts says what counts). The delivery log's retention deletes deliveries days after
 * they finish; the rollup has counted them long before.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { rollupMarks, WindowedRollup } from '../../lib/rollup.js';
import { type DeliveryUsageStore, USAGE_ROLLUPS_TABLE } from './usage-store.js';

export interface DeliveryUsageRollupDeps {
  pool: pg.Pool;
  store: DeliveryUsageStore;
  clock: Clock;
  logger: Logger;
  /** How often a round starts (default a minute). */
  intervalMs?: number;
}

export function createDeliveryUsageRollup(deps: DeliveryUsageRollupDeps): WindowedRollup {
  const { store } = deps;
  return new WindowedRollup({
    what: 'the webhook deliveries usage rollup',
    pool: deps.pool,
    marks: rollupMarks(deps.pool, USAGE_ROLLUPS_TABLE, 'deliveries'),
    clock: deps.clock,
    logger: deps.logger,
    ...(deps.intervalMs === undefined ? {} : { intervalMs: deps.intervalMs }),
    work: {
      firstActivity: () => store.firstDelivery(),
      nextActivity: (at) => store.nextDelivery(at),
      apply: (tx, window) => store.countDeliveries(tx, window),
    },
  });
}
