/**
 * What the agent does with the jobs that come down the link (docs/station-link.md, "A job"):
 * assembles and checks each document, consults the journal so an attempt prints at most once,
 * prints one job at a time per printer (printers in parallel), and reports `received` and
 * `result`, sending again whatever the server has not accepted.
 */
import { createHash, type Hash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  type AgentMessage,
  type DocumentChunk,
  type JobOffer,
  type JobWithdrawn,
  PrintOptions,
  type ReportAccepted,
  type ServerMessage,
  type Welcome,
} from '../gen/spool/v1/stations.js';
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
import { messageOf, NotSentError } from './backends/backend.js';
import { type Journal, type JournalEntry, journalKey } from './journal.js';

export interface JobRunnerOptions {
  journal: Journal;
  /** The backend of a printer by name, if the station has it. */
  backend(printer: string): Backend | undefined;
  /** Sends on the link; false when no link is up (the journal keeps the report for later). */
  send(message: AgentMessage): boolean;
  logger: Logger;
  /** A job this process printed has finished, printed or failed (`detail` says why). */
  onResult?(result: { jobId: string; printer: string; printed: boolean; detail: string }): void;
  /**
   * Resolves once `printer` reads as able to print again. A job none of which reached its printer
   * ({@link NotSentError}) waits on it and is then printed; without it, such a job fails.
   */
  untilPrintable?(printer: string): Promise<void>;
}

interface Assembly {
  offer: JobOffer;
  parts: Buffer[];
  size: number;
  hash: Hash;
}

interface QueuedJob {
  key: string;
  printer: string;
  printerId: string;
  backend: Backend;
  job: PrintJob;
  /** The offer's trace context: the print span continues it. */
  trace: TraceCarrier;
}

/** One printer's jobs, printed one at a time in the order they came. */
class PrinterQueue {
  readonly pending: QueuedJob[] = [];
  running: Promise<void> | undefined;
}

export class JobRunner {
  readonly #journal: Journal;
  readonly #backendOf: (printer: string) => Backend | undefined;
  readonly #send: (message: AgentMessage) => boolean;
  readonly #logger: Logger;
  readonly #assemblies = new Map<string, Assembly>();
  readonly #queues = new Map<string, PrinterQueue>();
  /** Keys of the attempts queued or printing in this process. */
  readonly #active = new Set<string>();
  /**
   * Job attempts the printer's spooler gave back on a withdrawal: their print then ends in an
   * error, which is the withdrawal's doing, not a printer's failure.
   */
  readonly #takenBack = new Set<string>();
  readonly #abort = new AbortController();
  #printerIds = new Map<string, string>();
  // Server messages are handled one after another, in the order they came.
  #chain: Promise<void> = Promise.resolve();
  #stopping = false;
  readonly #onResult: JobRunnerOptions['onResult'];
  readonly #untilPrintable: JobRunnerOptions['untilPrintable'];
  /** Ends the waits for printers when the runner stops. */
  #stopped!: () => void;
  readonly #stoppedPromise = new Promise<void>((resolve) => {
    this.#stopped = resolve;
  });

  constructor(options: JobRunnerOptions) {
    this.#journal = options.journal;
    this.#backendOf = options.backend;
    this.#send = options.send;
    this.#logger = options.logger;
    this.#onResult = options.onResult;
    this.#untilPrintable = options.untilPrintable;
  }

  /**
   * A new link is up: remember the printer ids and send every report not yet accepted. It waits
   * for the messages of the old link, so an acceptance that came just before it ended counts.
   */
  onWelcome(welcome: Welcome): void {
    this.#printerIds = new Map(Object.entries(welcome.printerIds).map(([name, id]) => [id, name]));
    this.#serially(() => {
      // A document half received on the old link is offered again from the start.
      this.#assemblies.clear();
      let sent = 0;
      for (const entry of this.#journal.entries()) {
        if (entry.state === 'withdrawn') continue;
        if (!entry.receivedAccepted && this.#sendReceived(entry)) sent += 1;
        if (isFinal(entry) && !entry.resultAccepted && this.#sendResult(entry)) sent += 1;
      }
      if (sent > 0) this.#logger.info({ reports: sent }, 'sent again the reports not accepted');
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
    this.#stopped();
    await this.#chain;
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

  async #handle(message: ServerMessage): Promise<void> {
    if (message.offer) this.#offer(message.offer);
    else if (message.chunk) await this.#chunk(message.chunk);
    else if (message.withdrawn) await this.#withdrawn(message.withdrawn);
    else if (message.accepted) await this.#accepted(message.accepted);
  }

  #offer(offer: JobOffer): void {
    // A second offer of a job restarts its document (the server sends it from offset 0 again).
    this.#assemblies.set(offer.jobId, {
      offer,
      parts: [],
      size: 0,
      hash: createHash('sha256'),
    });
  }

  async #chunk(chunk: DocumentChunk): Promise<void> {
    const assembly = this.#assemblies.get(chunk.jobId);
    if (!assembly) {
      this.#logger.debug({ job_id: chunk.jobId }, 'ignoring a chunk of a job not offered');
      return;
    }
    const { offer } = assembly;
    const drop = (why: string) => {
      this.#assemblies.delete(chunk.jobId);
      this.#logger.warn(
        { job_id: offer.jobId, attempt: offer.attempt, why },
        'dropping a job whose document does not match its offer; waiting for the next offer',
      );
    };
    if (chunk.offset !== assembly.size)
      return drop(`chunk at ${chunk.offset}, expected ${assembly.size}`);
    assembly.parts.push(chunk.data);
    assembly.hash.update(chunk.data);
    assembly.size += chunk.data.length;
    if (assembly.size > offer.size) return drop(`more than the ${offer.size} bytes offered`);
    if (!chunk.last) return;
    this.#assemblies.delete(chunk.jobId);
    if (assembly.size !== offer.size) return drop(`${assembly.size} bytes, ${offer.size} offered`);
    const digest = assembly.hash.digest('hex');
    if (digest !== offer.sha256.toLowerCase())
      return drop(`SHA-256 ${digest}, ${offer.sha256} offered`);
    await this.#accept(offer, Buffer.concat(assembly.parts, assembly.size));
  }

  async #accept(offer: JobOffer, document: Buffer): Promise<void> {
    const { jobId, attempt } = offer;
    const key = journalKey(jobId, attempt);
    const log = this.#logger.child({ job_id: jobId, attempt });
    const printer = offer.printerName || this.#printerIds.get(offer.printerId) || offer.printerId;
    const entry = this.#journal.get(jobId, attempt);

    if (entry === undefined) {
      const recorded = await this.#journal.record(jobId, attempt, 'received', { printer });
      this.#sendReceived(recorded, offer.traceContext);
      log.info({ printer }, 'job received');
      await this.#queue(key, printer, offer, document, log);
      return;
    }
    // Seen before: never print again; say again what the server has not accepted.
    switch (entry.state) {
      case 'withdrawn':
        log.info('ignoring an offer of a withdrawn job');
        return;
      case 'received':
        if (!entry.receivedAccepted) this.#sendReceived(entry);
        // Received before a restart and never begun: it has not printed, so it may print now.
        if (!this.#active.has(key)) await this.#queue(key, printer, offer, document, log);
        return;
      case 'printing':
        if (!entry.receivedAccepted) this.#sendReceived(entry);
        return;
      case 'printed':
      case 'failed':
        log.info(
          { state: entry.state },
          'job offered again after its result; sending the result again',
        );
        if (!entry.receivedAccepted) this.#sendReceived(entry);
        // Even an accepted result is sent again: an offer means the server still waits for one.
        this.#sendResult(entry);
        return;
    }
  }

  async #queue(
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
      await this.#finish(offer.jobId, offer.attempt, false, detail, offer.traceContext);
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
    queue.pending.push({
      key,
      printer,
      printerId: offer.printerId,
      backend,
      job,
      trace: offer.traceContext,
    });
    log.debug({ printer, queued: queue.pending.length }, 'job queued');
    if (!queue.running) queue.running = this.#drain(queue);
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

  async #printInSpan(
    { key, printer, backend, job }: QueuedJob,
    span: Span,
  ): Promise<'done' | 'not sent'> {
    const log = this.#logger.child({ job_id: job.id, attempt: job.attempt, printer });
    let waits = false;
    try {
      // Journaled before the backend sees the job: after a crash this attempt is never printed again.
      await this.#journal.record(job.id, job.attempt, 'printing', { printer });
      let failure: string | undefined;
      const started = performance.now();
      try {
        await backend.print(
          {
            ...job,
            // What the printer's spooler calls it, so that a restart can ask it about the job.
            submitted: (ref) =>
              this.#journal.record(job.id, job.attempt, 'printing', { printer, ref }),
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
      await this.#finish(job.id, job.attempt, failure === undefined, failure ?? '', traceCarrier());
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
    }
    return 'done';
  }

  async #finish(
    jobId: string,
    attempt: number,
    printed: boolean,
    detail: string,
    trace: TraceCarrier,
  ): Promise<void> {
    const entry = await this.#journal.record(jobId, attempt, printed ? 'printed' : 'failed', {
      detail,
    });
    this.#sendResult(entry, trace);
  }

  async #withdrawn({ jobId, attempt }: JobWithdrawn): Promise<void> {
    const key = journalKey(jobId, attempt);
    if (this.#assemblies.get(jobId)?.offer.attempt === attempt) this.#assemblies.delete(jobId);
    const entry = this.#journal.get(jobId, attempt);
    const log = this.#logger.child({ job_id: jobId, attempt });
    if (entry === undefined) {
      // Journaled even unseen, so an offer that was overtaken by its withdrawal never prints.
      await this.#journal.record(jobId, attempt, 'withdrawn');
      log.info('job withdrawn before it was offered');
      return;
    }
    if (entry.state === 'printing' && entry.ref !== undefined) {
      // Still in the printer's own queue (CUPS holding it): take it back if it has not printed.
      const backend = this.#backendOf(entry.printer);
      this.#takenBack.add(key);
      if (await backend?.cancel?.({ id: jobId, attempt, ref: entry.ref })) {
        log.info('job withdrawn: taking it back from the printer before it prints');
        return;
      }
      this.#takenBack.delete(key);
    }
    if (entry.state !== 'received') {
      log.info({ state: entry.state }, 'job withdrawn too late to drop; it is reported as it ends');
      return;
    }
    for (const queue of this.#queues.values()) {
      const i = queue.pending.findIndex((j) => j.key === key);
      if (i >= 0) queue.pending.splice(i, 1);
    }
    this.#active.delete(key);
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
  }

  #sendReceived(entry: JournalEntry, trace: TraceCarrier = {}): boolean {
    return this.#send({
      received: { jobId: entry.jobId, attempt: entry.attempt, traceContext: trace },
    });
  }

  #sendResult(entry: JournalEntry, trace: TraceCarrier = {}): boolean {
    return this.#send({
      result: {
        jobId: entry.jobId,
        attempt: entry.attempt,
        printed: entry.state === 'printed',
        detail: entry.detail,
        traceContext: trace,
      },
    });
  }
}

function isFinal(entry: JournalEntry): boolean {
  return entry.state === 'printed' || entry.state === 'failed';
}
