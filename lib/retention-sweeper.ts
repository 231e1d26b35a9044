/**
 * A retention sweep: on a timer apart from the requests that write the rows, deletes those older
 * than a number of days read from the installation's settings at each sweep, in small batches so
 * that no transaction holds many rows. Every replica runs one; deleting a row twice is harmless.
 * Time comes from the injected clock, so tests move the clock and call
 * {@link RetentionSweeper.runOnce} instead of waiting. The audit log and the webhook delivery log
 * use it.
 */
import type { Clock } from './clock.js';
import { FailureLog } from './failure-log.js';
import type { Logger } from './logger.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Rows one statement deletes at most. */
export const RETENTION_BATCH = 500;

export interface RetentionSweeperDeps {
  /** What is swept, for the log: `audit log`. */
  what: string;
  /** Deletes up to `limit` rows, the oldest first, from before `cutoff`; answers how many. */
  deleteBefore(cutoff: Date, limit: number): Promise<number>;
  /** The days a row is kept, from the installation's settings. */
  retentionDays: () => Promise<number>;
  clock: Clock;
  logger: Logger;
  /** How often a sweep runs; by default every ten minutes. */
  intervalMs?: number;
}

export class RetentionSweeper {
  readonly #deps: RetentionSweeperDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;

  constructor(deps: RetentionSweeperDeps) {
    this.#deps = deps;
  }

  start(): void {
    const sweeps = new FailureLog(this.#deps.logger, `the ${this.#deps.what} retention sweep`);
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

  /** One sweep; answers how many rows it deleted. Sweeps never overlap. */
  runOnce(): Promise<number> {
    this.#running ??= this.#sweep().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #sweep(): Promise<number> {
    const { clock, what } = this.#deps;
    const days = await this.#deps.retentionDays();
    const cutoff = new Date(clock.now().getTime() - days * DAY_MS);
    let deleted = 0;
    for (let n = RETENTION_BATCH; n === RETENTION_BATCH; ) {
      n = await this.#deps.deleteBefore(cutoff, RETENTION_BATCH);
      deleted += n;
    }
    if (deleted > 0) this.#deps.logger.info({ deleted, days }, `${what} retention`);
    return deleted;
  }
}
