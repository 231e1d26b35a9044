/**
 * The printing of a station's jobs: one job at a time per printer, the highest priority first and
 * then in the order they came, printers in parallel. Each attempt is journaled `printing` before
 * its backend sees it, so that after a crash it is never printed again; its end is journaled and
 * reported. A pool job is claimed first, once its printer can print (job-claims.ts).
 */
import { performance } from 'node:perf_hooks';
import { type JobOffer, PrintOptions } from '../gen/spool/v1/stations.js';
import type { Logger } from '../lib/logger.js';
import { spoolMetrics } from '../lib/metrics.js';
import {
  contextFrom,
  inSpan,
  recordError,
  type Span,
  SpanKind,
  spoolAttributes,
  type TraceCarrier,
  traceCarrier,
} from '../lib/tracing.js';
import type { Backend, PrintJob } from './backends/backend.js';
import { type Confirmation, HANDED_OFF, messageOf, NotSentError } from './backends/backend.js';
import type { JobClaims } from './job-claims.js';
import type { JobReports } from './job-reports.js';
import type { Journal, JournalEntry } from './journal.js';

/** A printed or failed job, as its owner hears of it. */
export interface PrintResult {
  jobId: string;
  printer: string;
  printed: boolean;
  detail: string;
}

export interface PrintQueuesOptions {
  journal: Journal;
  reports: JobReports;
  /** The backend of a printer by name, if the station has it. */
  backend(printer: string): Backend | undefined;
  logger: Logger;
  /** A job this process printed has finished, printed or failed (`detail` says why). */
  onResult?(result: PrintResult): void;
  /**
   * Resolves once `printer` reads as able to print again. A job none of which reached its printer
   * ({@link NotSentError}) waits on it and is then printed; without it, such a job fails.
   */
  untilPrintable?(printer: string): Promise<void>;
  /** Whether `printer` reads as able to print now; without it, every printer is. */
  printable?(printer: string): boolean;
  /** The claims of pool jobs. */
  claims: JobClaims;
}

interface QueuedJob {
  key: string;
  printer: string;
  printerId: string;
  backend: Backend;
  job: PrintJob;
  /** The offer's trace context: the print span continues it. */
  trace: TraceCarrier;
  /** A pool job: claimed before it prints. */
  claim: boolean;
  priority: number;
}

/** One printer's jobs, printed one at a time, the highest priority first, then in the order they came. */
class PrinterQueue {
  readonly pending: QueuedJob[] = [];
  running: Promise<void> | undefined;
}

/** The print queues of a station's printers. */
export class PrintQueues {
  readonly #journal: Journal;
  readonly #reports: JobReports;
  readonly #backendOf: (printer: string) => Backend | undefined;
  readonly #logger: Logger;
  readonly #onResult: PrintQueuesOptions['onResult'];
  readonly #untilPrintable: PrintQueuesOptions['untilPrintable'];
  readonly #printable: PrintQueuesOptions['printable'];
  readonly #claims: JobClaims;
  readonly #queues = new Map<string, PrinterQueue>();
  /** Keys of the attempts queued or printing in this process. */
  readonly #active = new Set<string>();
  /**
   * Job attempts the printer's spooler gave back on a withdrawal: their print then ends in an
   * error, which is the withdrawal's doing, not a printer's failure.
   */
  readonly #takenBack = new Set<string>();
  /**
   * Job attempts withdrawn while being handed to the printer's spooler, before it said what it
   * calls them: taken back as soon as it does.
   */
  readonly #takeBackOnSubmit = new Set<string>();
  readonly #abort = new AbortController();
  #stopping = false;
  /** Ends the waits for printers when the queues stop. */
  #stopped!: () => void;
  readonly #stoppedPromise = new Promise<void>((resolve) => {
    this.#stopped = resolve;
  });

  constructor(options: PrintQueuesOptions) {
    this.#journal = options.journal;
    this.#reports = options.reports;
    this.#backendOf = options.backend;
    this.#logger = options.logger;
    this.#onResult = options.onResult;
    this.#untilPrintable = options.untilPrintable;
    this.#printable = options.printable;
    this.#claims = options.claims;
  }

  /** Whether the attempt of `key` is queued or printing in this process. */
  isActive(key: string): boolean {
    return this.#active.has(key);
  }

  /** Puts a received job in its printer's line; a printer the station lacks fails it. */
  async enqueue(
    key: string,
    printer: string,
    offer: JobOffer,
    document: Buffer,
    log: Logger,
  ): Promise<void> {
    const backend = this.#backendOf(printer);
    if (!backend) {
      const detail = `the station has no printer named ${JSON.stringify(printer)}`;
      log.warn({ printer }, 'job for a printer the station does not have');
      await this.#reports.finish(
        offer.jobId,
        offer.attempt,
        { failure: detail },
        offer.traceContext,
      );
      return;
    }
    const job: PrintJob = {
      id: offer.jobId,
      attempt: offer.attempt,
      title: offer.title,
      contentType: offer.contentType,
      document,
      options: offer.options ?? PrintOptions.fromPartial({ copies: 1 }),
    };
    let queue = this.#queues.get(printer);
    if (!queue) {
      queue = new PrinterQueue();
      this.#queues.set(printer, queue);
    }
    this.#active.add(key);
    const priority = offer.priority || 50;
    const queued: QueuedJob = {
      key,
      printer,
      printerId: offer.printerId,
      backend,
      job,
      trace: offer.traceContext,
      claim: offer.claim,
      priority,
    };
    // Behind every job of the same or a higher priority.
    const before = queue.pending.findIndex((j) => j.priority < priority);
    if (before < 0) queue.pending.push(queued);
    else queue.pending.splice(before, 0, queued);
    log.debug({ printer, queued: queue.pending.length }, 'job queued');
    if (!queue.running) queue.running = this.#drain(queue);
  }

  /**
   * Asks the printer's spooler to give back a withdrawn job it still holds (CUPS holding it);
   * true when it did, and the print then ends as withdrawn. A job being handed to the spooler
   * now, which has not yet said what it calls it, is asked back as soon as it does (true too).
   */
  async takeBack(key: string, entry: JournalEntry): Promise<boolean> {
    const backend = this.#backendOf(entry.printer);
    if (!backend?.cancel) return false;
    if (entry.ref === undefined) {
      // Being handed over in this process: the spooler's answer, with its reference, is near.
      if (!this.#active.has(key)) return false;
      this.#takeBackOnSubmit.add(key);
      return true;
    }
    this.#takenBack.add(key);
    const { jobId, attempt, ref } = entry;
    if (await backend.cancel({ id: jobId, attempt, ref })) return true;
    this.#takenBack.delete(key);
    return false;
  }

  /** Takes a withdrawn job that has not begun out of its printer's line. */
  drop(key: string): void {
    for (const queue of this.#queues.values()) {
      const i = queue.pending.findIndex((j) => j.key === key);
      if (i >= 0) queue.pending.splice(i, 1);
    }
    this.#active.delete(key);
  }

  /** Starts no job after the one printing; ends the waits for printers. */
  halt(): void {
    this.#stopping = true;
    this.#stopped();
  }

  /**
   * Queued jobs are dropped (they stay `received` and are offered again), jobs printing get
   * `graceMs` to finish and are then abandoned (reported interrupted after a restart).
   */
  async stop(graceMs: number): Promise<void> {
    this.halt();
    for (const queue of this.#queues.values()) {
      for (const job of queue.pending.splice(0)) this.#active.delete(job.key);
    }
    const running = [...this.#queues.values()].flatMap((q) => (q.running ? [q.running] : []));
    if (running.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all(running), grace]);
    clearTimeout(timer);
    this.#abort.abort();
    await Promise.all(running);
  }

  async #drain(queue: PrinterQueue): Promise<void> {
    for (let next = queue.pending.shift(); next; next = queue.pending.shift()) {
      if ((await this.#print(next)) === 'not sent' && this.#untilPrintable && !this.#stopping) {
        // First in line again, behind nothing: it goes when the printer is back, unless withdrawn
        // meanwhile (which takes it out of the line).
        queue.pending.unshift(next);
        await Promise.race([this.#untilPrintable(next.printer), this.#stoppedPromise]);
        // Stopping drops the line, the waiting job with it: it is offered again after a restart.
        if (this.#stopping) break;
      }
    }
    queue.running = undefined;
  }

  /** Prints one job in a span that continues the offer's trace; its result carries the span. */
  #print(queued: QueuedJob): Promise<'done' | 'not sent'> {
    const { job, printer } = queued;
    const attributes = {
      ...spoolAttributes({ jobId: job.id, attempt: job.attempt, printerId: queued.printerId }),
      'spool.printer.name': printer,
    };
    return inSpan(
      'print job',
      { kind: SpanKind.CONSUMER, parent: contextFrom(queued.trace), attributes },
      (span) => this.#printInSpan(queued, span),
    );
  }

  /** Resolves once `printer` reads as able to print, or the queues stop. */
  async #untilAble(printer: string): Promise<void> {
    while (
      this.#printable &&
      !this.#printable(printer) &&
      this.#untilPrintable &&
      !this.#stopping
    ) {
      await Promise.race([this.#untilPrintable(printer), this.#stoppedPromise]);
    }
  }

  async #printInSpan(
    { key, printer, backend, job, claim }: QueuedJob,
    span: Span,
  ): Promise<'done' | 'not sent'> {
    const log = this.#logger.child({ job_id: job.id, attempt: job.attempt, printer });
    let waits = false;
    try {
      const entry = this.#journal.get(job.id, job.attempt);
      if (claim && entry && !(await this.#claims.claim(entry, this.#untilAble(printer)))) {
        log.info(
          'pool job not claimed (routed elsewhere, withdrawn, or the agent stops); not printed',
        );
        return 'done';
      }
      // Journaled before the backend sees the job: after a crash this attempt is never printed again.
      await this.#journal.record(job.id, job.attempt, 'printing', { printer });
      let failure: string | undefined;
      let confirmation: Confirmation = HANDED_OFF;
      const started = performance.now();
      try {
        confirmation = await backend.print(
          {
            ...job,
            // What the printer's spooler calls it, so that a restart can ask it about the job.
            submitted: async (ref) => {
              await this.#journal.record(job.id, job.attempt, 'printing', { printer, ref });
              if (!this.#takeBackOnSubmit.delete(key)) return;
              this.#takenBack.add(key);
              const given = { id: job.id, attempt: job.attempt, ref };
              if (!(await backend.cancel?.(given))) this.#takenBack.delete(key);
            },
          },
          this.#abort.signal,
        );
      } catch (error) {
        if (this.#abort.signal.aborted) {
          // What became of it is known only at the restart: the backend is asked then (a job its
          // spooler still holds is taken back and prints when offered again).
          log.warn(
            'the agent stopped while the job was with the printer; at the next start the printer is asked what became of it',
          );
          recordError(span, new Error('interrupted: the agent stopped while printing'));
          return 'done';
        }
        if (this.#takeBackOnSubmit.delete(key)) {
          // Withdrawn while being handed over, which failed: it is not to print anyway.
          await this.#journal.record(job.id, job.attempt, 'withdrawn');
          log.info('job withdrawn as it was handed to the printer, which did not take it');
          return 'done';
        }
        if (error instanceof NotSentError && this.#untilPrintable && !this.#stopping) {
          // Nothing reached the printer: the job is as it was when received, and waits.
          await this.#journal.record(job.id, job.attempt, 'received', { printer });
          log.warn({ detail: error.message }, 'the printer did not take the job; it waits for it');
          recordError(span, error);
          waits = true;
          return 'not sent';
        }
        if (this.#takenBack.delete(key)) {
          await this.#journal.record(job.id, job.attempt, 'withdrawn');
          log.info('job withdrawn: taken back from the printer; it did not print');
          return 'done';
        }
        failure = messageOf(error) || 'the printer failed';
        recordError(span, new Error(failure));
      }
      this.#takenBack.delete(key);
      const metrics = spoolMetrics();
      metrics.agentPrintDuration.record((performance.now() - started) / 1000);
      metrics.agentPrints.add(1, { 'spool.print.outcome': failure ? 'failed' : 'printed' });
      await this.#reports.finish(
        job.id,
        job.attempt,
        failure === undefined ? { confirmation } : { failure },
        traceCarrier(),
      );
      if (failure === undefined) log.info('job printed');
      else log.warn({ detail: failure }, 'job failed');
      this.#onResult?.({
        jobId: job.id,
        printer,
        printed: failure === undefined,
        detail: failure ?? '',
      });
    } catch (err) {
      recordError(span, err);
      log.error({ err }, 'could not journal a job');
    } finally {
      if (!waits) this.#active.delete(key);
      // A withdrawal still waiting for the spooler's reference came too late: the print ended.
      this.#takeBackOnSubmit.delete(key);
    }
    return 'done';
  }
}
