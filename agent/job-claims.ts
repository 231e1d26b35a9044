/**
 * The claims of pool jobs (docs/station-link.md, "Pool jobs"): a pool job is journaled when it
 * arrives but prints only once the server has accepted the agent's claim, sent when the job's
 * turn comes and its printer can print. Until then the server may route the job to another
 * printer, and withdraws it here; a claim the server accepts makes the job this station's for
 * good. A claim not answered (the link was down, or the jobs service was) is sent again.
 */
import type { Logger } from '../lib/logger.js';
import type { JobReports } from './job-reports.js';
import { type JournalEntry, journalKey } from './journal.js';

/** How often an unanswered claim is sent again. */
export const CLAIM_RETRY_MS = 5_000;

interface Waiting {
  resolve(claimed: boolean): void;
  timer?: NodeJS.Timeout;
}

export class JobClaims {
  readonly #reports: JobReports;
  readonly #logger: Logger;
  readonly #retryMs: number;
  readonly #waiting = new Map<string, Waiting>();

  constructor(reports: JobReports, logger: Logger, retryMs = CLAIM_RETRY_MS) {
    this.#reports = reports;
    this.#logger = logger;
    this.#retryMs = retryMs;
  }

  /**
   * Waits for `ready` (the printer can print), then claims the attempt. Resolves true once the
   * server accepts the claim, false when the job is withdrawn first (routed elsewhere, cancelled)
   * or the agent stops.
   */
  async claim(entry: JournalEntry, ready: Promise<void>): Promise<boolean> {
    if (entry.receivedAccepted) return true;
    const key = journalKey(entry.jobId, entry.attempt);
    this.#settle(key, false);
    const waiting: Waiting = { resolve: () => undefined };
    const outcome = new Promise<boolean>((resolve) => {
      waiting.resolve = resolve;
    });
    this.#waiting.set(key, waiting);
    const first = await Promise.race([ready.then(() => 'ready' as const), outcome]);
    if (first !== 'ready') return first;
    if (this.#waiting.get(key) !== waiting) return outcome;
    const send = () => {
      if (!this.#reports.received(entry)) {
        this.#logger.debug({ job_id: entry.jobId }, 'no link to claim a pool job on; waiting');
      }
    };
    send();
    waiting.timer = setInterval(send, this.#retryMs);
    return outcome;
  }

  /** The server accepted the claim of `key`. */
  accepted(key: string): void {
    this.#settle(key, true);
  }

  /** The job of `key` was withdrawn: it does not print here. */
  withdrawn(key: string): void {
    this.#settle(key, false);
  }

  /** Every claim waiting ends unclaimed (the agent stops; the jobs are offered again). */
  stop(): void {
    for (const key of [...this.#waiting.keys()]) this.#settle(key, false);
  }

  #settle(key: string, claimed: boolean): void {
    const waiting = this.#waiting.get(key);
    if (!waiting) return;
    this.#waiting.delete(key);
    clearInterval(waiting.timer);
    waiting.resolve(claimed);
  }
}
