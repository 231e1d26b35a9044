/**
 * What the agent does with the jobs that come down the link (docs/station-link.md, "A job"):
 * assembles and checks each document (`job-documents.ts`), consults the journal so an attempt
 * prints at most once, prints one job at a time per printer, printers in parallel
 * (`print-queues.ts`), and reports `received` and `result`, sending again whatever the server has
 * not accepted (`job-reports.ts`). The runner decides; those carry it out.
 */
import type {
  AgentMessage,
  JobOffer,
  JobWithdrawn,
  ReportAccepted,
  ServerMessage,
  Welcome,
} from '../gen/spool/v1/stations.js';
import type { Logger } from '../lib/logger.js';
import type { Backend } from './backends/backend.js';
import { JobClaims } from './job-claims.js';
import { DocumentAssembler } from './job-documents.js';
import { JobReports } from './job-reports.js';
import { type Journal, journalKey } from './journal.js';
import { PrintQueues, type PrintQueuesOptions } from './print-queues.js';

export interface JobRunnerOptions {
  journal: Journal;
  /** The backend of a printer by name, if the station has it. */
  backend(printer: string): Backend | undefined;
  /** Sends on the link; false when no link is up (the journal keeps the report for later). */
  send(message: AgentMessage): boolean;
  logger: Logger;
  /** A job this process printed has finished, printed or failed (`detail` says why). */
  onResult?: PrintQueuesOptions['onResult'];
  /**
   * Resolves once `printer` reads as able to print again. A job none of which reached its printer
   * (`NotSentError`) waits on it and is then printed; without it, such a job fails.
   */
  untilPrintable?: PrintQueuesOptions['untilPrintable'];
  /** Whether a printer reads as able to print now (a pool job is claimed only then). */
  printable?: PrintQueuesOptions['printable'];
  /** How often an unanswered claim of a pool job is sent again (default 5 s). */
  claimRetryMs?: number;
}

/** Takes the server's messages about jobs, one after another, and acts on each. */
export class JobRunner {
  readonly #journal: Journal;
  readonly #logger: Logger;
  readonly #documents: DocumentAssembler;
  readonly #reports: JobReports;
  readonly #printing: PrintQueues;
  readonly #claims: JobClaims;
  #printerIds = new Map<string, string>();
  // Server messages are handled one after another, in the order they came.
  #chain: Promise<void> = Promise.resolve();
  #stopping = false;

  constructor(options: JobRunnerOptions) {
    this.#journal = options.journal;
    this.#logger = options.logger;
    this.#documents = new DocumentAssembler(options.logger);
    this.#reports = new JobReports(options.journal, options.send, options.logger);
    this.#claims = new JobClaims(this.#reports, options.logger, options.claimRetryMs);
    this.#printing = new PrintQueues({
      claims: this.#claims,
      ...(options.printable ? { printable: options.printable } : {}),
      journal: options.journal,
      reports: this.#reports,
      backend: options.backend,
      logger: options.logger,
      ...(options.onResult ? { onResult: options.onResult } : {}),
      ...(options.untilPrintable ? { untilPrintable: options.untilPrintable } : {}),
    });
  }

  /**
   * A new link is up: remember the printer ids and send every report not yet accepted. It waits
   * for the messages of the old link, so an acceptance that came just before it ended counts.
   */
  onWelcome(welcome: Welcome): void {
    this.#printerIds = new Map(Object.entries(welcome.printerIds).map(([name, id]) => [id, name]));
    this.#serially(() => {
      this.#documents.clear();
      this.#reports.resendUnaccepted();
    });
  }

  /** The jobs the journal holds unfinished (received, or in the printer's queue), for the hello. */
  held(): Array<{ jobId: string; attempt: number }> {
    return [...this.#journal.entries()]
      .filter((entry) => entry.state === 'received' || entry.state === 'printing')
      .map((entry) => ({ jobId: entry.jobId, attempt: entry.attempt }));
  }

  handle(message: ServerMessage): void {
    if (this.#stopping) return;
    this.#serially(() => this.#handle(message));
  }

  #serially(work: () => void | Promise<void>): void {
    this.#chain = this.#chain
      .then(work)
      .catch((err: unknown) => this.#logger.error({ err }, 'handling a server message failed'));
  }

  /**
   * Stops taking jobs: queued ones are dropped (they stay `received` and are offered again), jobs
   * printing get `graceMs` to finish and are then abandoned (reported interrupted after a restart).
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    this.#printing.halt();
    this.#claims.stop();
    await this.#chain;
    await this.#printing.stop(graceMs);
  }

  async #handle(message: ServerMessage): Promise<void> {
    if (message.offer) this.#documents.offer(message.offer);
    else if (message.chunk) {
      const whole = this.#documents.chunk(message.chunk);
      if (whole) await this.#accept(whole.offer, whole.document);
    } else if (message.withdrawn) await this.#withdrawn(message.withdrawn);
    else if (message.accepted) await this.#accepted(message.accepted);
  }

  async #accept(offer: JobOffer, document: Buffer): Promise<void> {
    const { jobId, attempt } = offer;
    const key = journalKey(jobId, attempt);
    const log = this.#logger.child({ job_id: jobId, attempt });
    const printer = offer.printerName || this.#printerIds.get(offer.printerId) || offer.printerId;
    const entry = this.#journal.get(jobId, attempt);

    // A pool job withdrawn before its claim never printed here: routed back, it may print now.
    const fresh = entry === undefined || (offer.claim && entry.state === 'withdrawn');
    if (fresh) {
      const { claim } = offer;
      const recorded = await this.#journal.record(jobId, attempt, 'received', { printer, claim });
      // A pool job's `received` is its claim, sent when its turn comes (job-claims.ts).
      if (!claim) this.#reports.received(recorded, offer.traceContext);
      log.info({ printer, claim }, 'job received');
      await this.#printing.enqueue(key, printer, offer, document, log);
      return;
    }
    // Seen before: never print again; say again what the server has not accepted.
    switch (entry.state) {
      case 'withdrawn':
        log.info('ignoring an offer of a withdrawn job');
        return;
      case 'received':
        if (!entry.receivedAccepted && !entry.claim) this.#reports.received(entry);
        // Received before a restart and never begun: it has not printed, so it may print now.
        if (!this.#printing.isActive(key))
          await this.#printing.enqueue(key, printer, offer, document, log);
        return;
      case 'printing':
        if (!entry.receivedAccepted) this.#reports.received(entry);
        return;
      case 'printed':
      case 'failed':
        log.info(
          { state: entry.state },
          'job offered again after its result; sending the result again',
        );
        if (!entry.receivedAccepted) this.#reports.received(entry);
        // Even an accepted result is sent again: an offer means the server still waits for one.
        this.#reports.result(entry);
        return;
    }
  }

  async #withdrawn({ jobId, attempt }: JobWithdrawn): Promise<void> {
    const key = journalKey(jobId, attempt);
    this.#documents.withdraw(jobId, attempt);
    this.#claims.withdrawn(key);
    const entry = this.#journal.get(jobId, attempt);
    const log = this.#logger.child({ job_id: jobId, attempt });
    if (entry === undefined) {
      // Journaled even unseen, so an offer that was overtaken by its withdrawal never prints.
      await this.#journal.record(jobId, attempt, 'withdrawn');
      log.info('job withdrawn before it was offered');
      return;
    }
    // Still in the printer's own queue (CUPS holding it): take it back if it has not printed.
    if (entry.state === 'printing' && (await this.#printing.takeBack(key, entry))) {
      log.info('job withdrawn: taking it back from the printer before it prints');
      return;
    }
    // Withdrawn already (a pool job's refused claim follows its withdrawal): nothing more to do.
    if (entry.state === 'withdrawn') return;
    if (entry.state !== 'received') {
      log.info({ state: entry.state }, 'job withdrawn too late to drop; it is reported as it ends');
      return;
    }
    this.#printing.drop(key);
    await this.#journal.record(jobId, attempt, 'withdrawn');
    log.info('job withdrawn; it will not print');
  }

  async #accepted({ jobId, attempt, kind }: ReportAccepted): Promise<void> {
    if (kind !== 'received' && kind !== 'result') {
      this.#logger.warn(
        { job_id: jobId, attempt, kind },
        'ignoring an acceptance of an unknown kind',
      );
      return;
    }
    await this.#journal.accept(jobId, attempt, kind);
    if (kind === 'received') this.#claims.accepted(journalKey(jobId, attempt));
  }
}
