/**
 * The reports a station sends of a job attempt, `received` and `result`, and their sending again
 * until the server accepts them (the journal remembers which it has).
 */
import type { AgentMessage } from '../gen/spool/v1/stations.js';
import type { Logger } from '../lib/logger.js';
import type { TraceCarrier } from '../lib/tracing.js';
import { type Confirmation, HANDED_OFF } from './backends/backend.js';
import type { Journal, JournalEntry } from './journal.js';

/** Sends the reports of job attempts on the link. */
export class JobReports {
  readonly #journal: Journal;
  readonly #send: (message: AgentMessage) => boolean;
  readonly #logger: Logger;

  /** `send` is false when no link is up: the journal keeps the report for later. */
  constructor(journal: Journal, send: (message: AgentMessage) => boolean, logger: Logger) {
    this.#journal = journal;
    this.#send = send;
    this.#logger = logger;
  }

  /** Sends every report the server has not accepted; a new link is up. */
  resendUnaccepted(): void {
    let sent = 0;
    for (const entry of this.#journal.entries()) {
      if (entry.state === 'withdrawn') continue;
      // A pool job's `received` is its claim, sent when its turn to print comes (job-claims.ts).
      const unclaimed = entry.claim && entry.state === 'received';
      if (!entry.receivedAccepted && !unclaimed && this.received(entry)) sent += 1;
      if (isFinal(entry) && !entry.resultAccepted && this.result(entry)) sent += 1;
    }
    if (sent > 0) this.#logger.info({ reports: sent }, 'sent again the reports not accepted');
  }

  /** Journals the attempt's end, printed or failed (`detail` says why), and reports it. */
  async finish(
    jobId: string,
    attempt: number,
    outcome: { confirmation: Confirmation } | { failure: string },
    trace: TraceCarrier,
  ): Promise<void> {
    const entry = await this.#journal.record(
      jobId,
      attempt,
      'confirmation' in outcome ? 'printed' : 'failed',
      'confirmation' in outcome
        ? { confirmation: outcome.confirmation }
        : { detail: outcome.failure },
    );
    this.result(entry, trace);
  }

  /** Sends `received`; false when no link is up. */
  received(entry: JournalEntry, trace: TraceCarrier = {}): boolean {
    return this.#send({
      received: {
        jobId: entry.jobId,
        attempt: entry.attempt,
        traceContext: trace,
        claim: entry.claim ?? false,
      },
    });
  }

  /** Sends the attempt's `result` as the journal has it; false when no link is up. */
  result(entry: JournalEntry, trace: TraceCarrier = {}): boolean {
    return this.#send({
      result: {
        jobId: entry.jobId,
        attempt: entry.attempt,
        printed: entry.state === 'printed',
        detail: entry.detail,
        traceContext: trace,
        // A printed entry journaled before confirmations were was handed off.
        confirmation: entry.state === 'printed' ? (entry.confirmation ?? HANDED_OFF) : undefined,
      },
    });
  }
}

function isFinal(entry: JournalEntry): boolean {
  return entry.state === 'printed' || entry.state === 'failed';
}
