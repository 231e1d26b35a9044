/**
 * The delivery log's retention: deletes deliveries (and their attempts) that finished more than
 * `webhook_delivery_retention_days` ago (an installation setting, 30 days by default, set like the
 * job document retention through `PATCH /admin/v1/settings`). Every replica runs one; deleting a
 * row twice is harmless. Time comes from the injected clock, so tests move the clock and call
 * {@link DeliveryLogSweeper.runOnce} instead of waiting.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const BATCH = 500;

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

export interface DeliveryLogSweeperDeps {
  store: RetentionStore;
  /** The days a finished delivery is kept, from the installation's settings. */
  retentionDays: () => Promise<number>;
  clock: Clock;
  logger: Logger;
  /** How often a sweep runs; by default every ten minutes. */
  intervalMs?: number;
}

export class DeliveryLogSweeper {
  readonly #deps: DeliveryLogSweeperDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;

  constructor(deps: DeliveryLogSweeperDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#timer = setInterval(
      () => {
        this.runOnce().catch((err: unknown) =>
          this.#deps.logger.warn({ err }, 'delivery log retention sweep failed; will retry'),
        );
      },
      this.#deps.intervalMs ?? 10 * 60_000,
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => undefined);
  }

  /** One sweep; answers how many deliveries it deleted. Sweeps never overlap. */
  runOnce(): Promise<number> {
    this.#running ??= this.#sweep().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #sweep(): Promise<number> {
    const { store, clock } = this.#deps;
    const days = await this.#deps.retentionDays();
    const cutoff = new Date(clock.now().getTime() - days * DAY_MS);
    let deleted = 0;
    for (let n = BATCH; n === BATCH; ) {
      n = await store.deleteFinishedBefore(cutoff, BATCH);
      deleted += n;
    }
    if (deleted > 0) this.#deps.logger.info({ deleted, days }, 'delivery log retention');
    return deleted;
  }
}
