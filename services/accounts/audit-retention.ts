/**
 * The audit log's retention: deletes entries older than `audit_retention_days` (an installation
 * setting, 365 days by default, set through `PATCH /admin/v1/settings`). It runs on a timer apart
 * from the requests that write entries, and deletes in small batches so that no transaction holds
 * many rows; every replica runs one, and deleting a row twice is harmless. Time comes from the
 * injected clock, so tests move the clock and call {@link AuditLogSweeper.runOnce} instead of
 * waiting.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { FailureLog } from '../../lib/failure-log.js';
import type { Logger } from '../../lib/logger.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const BATCH = 500;

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

export interface AuditLogSweeperDeps {
  store: AuditRetentionStore;
  /** The days an entry is kept, from the installation's settings. */
  retentionDays: () => Promise<number>;
  clock: Clock;
  logger: Logger;
  /** How often a sweep runs; by default every ten minutes. */
  intervalMs?: number;
}

export class AuditLogSweeper {
  readonly #deps: AuditLogSweeperDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;

  constructor(deps: AuditLogSweeperDeps) {
    this.#deps = deps;
  }

  start(): void {
    const sweeps = new FailureLog(this.#deps.logger, 'the audit log retention sweep');
    this.#timer = setInterval(
      () => {
        this.runOnce().then(
          () => sweeps.succeeded(),
          (err: unknown) => sweeps.failed(err),
        );
      },
      this.#deps.intervalMs ?? 10 * 60_000,
    );
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => undefined);
  }

  /** One sweep; answers how many entries it deleted. Sweeps never overlap. */
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
      n = await store.deleteBefore(cutoff, BATCH);
      deleted += n;
    }
    if (deleted > 0) this.#deps.logger.info({ deleted, days }, 'audit log retention');
    return deleted;
  }
}
