/**
 * Logs a repeated failure as an outage rather than line by line: the first failure at warn, then a
 * count once a minute while it lasts, and one line when it works again. A NATS server away for a
 * minute, with jobs flowing, made thousands of "publish failed" lines and none saying it was over.
 */
import { type Clock, systemClock } from './clock.js';
import type { Logger } from './logger.js';

/** How often a failure that goes on is logged again, with what it has counted. */
const REMIND_MS = 60_000;

export class FailureLog {
  readonly #logger: Logger;
  readonly #what: string;
  readonly #clock: Clock;
  #failing: { since: number; failures: number; loggedAt: number } | undefined;

  /** `what` names the work, as in "outbox publish" ("… failed", "… works again"). */
  constructor(logger: Logger, what: string, clock: Clock = systemClock) {
    this.#logger = logger;
    this.#what = what;
    this.#clock = clock;
  }

  failed(err: unknown, fields: Record<string, unknown> = {}): void {
    const now = this.#clock.now().getTime();
    const failing = this.#failing;
    if (!failing) {
      this.#failing = { since: now, failures: 1, loggedAt: now };
      this.#logger.warn(
        { err, ...fields },
        `${this.#what} failed; will retry (until it works again, failures are counted each minute)`,
      );
      return;
    }
    failing.failures += 1;
    if (now - failing.loggedAt < REMIND_MS) return;
    failing.loggedAt = now;
    this.#logger.warn(
      {
        err,
        ...fields,
        failures: failing.failures,
        failing_s: Math.round((now - failing.since) / 1000),
      },
      `${this.#what} still failing; will retry`,
    );
  }

  succeeded(): void {
    const failing = this.#failing;
    if (!failing) return;
    this.#failing = undefined;
    this.#logger.info(
      {
        failures: failing.failures,
        failed_s: Math.round((this.#clock.now().getTime() - failing.since) / 1000),
      },
      `${this.#what} works again`,
    );
  }
}
