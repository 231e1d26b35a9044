/**
 * The jobs a link offers its agent: each attempt once, to a printer the agent reports able to
 * print, with its document in chunks; and their withdrawals.
 */
import type { Context } from '@opentelemetry/api';
import type { Job } from '../../gen/spool/v1/jobs.js';
import { type PrinterReport, PrintOptions } from '../../gen/spool/v1/stations.js';
import type { DispatchMessage, DispatchOffer } from '../../lib/contracts/dispatch.js';
import { DEFAULT_PRIORITY, jobJson } from '../../lib/job-view.js';
import type { Logger } from '../../lib/logger.js';
import { cannotPrint } from '../../lib/printer-status.js';
import { contextFrom, inSpan, SpanKind, spoolAttributes, traceCarrier } from '../../lib/tracing.js';
import { attemptKey, type JobAttempt, type LinkDeps } from './link-deps.js';
import type { AgentOutbound } from './link-outbound.js';
import type { AgentReport } from './link-reports.js';
import type { LinkStation } from './link-station.js';

/** The job fields a session needs to offer a job. */
type OfferedJob = DispatchOffer['job'];

/**
 * The ids of the printers in `reports` that are offered no job ({@link cannotPrint}). Their jobs
 * stay queued, their detail saying why (services/jobs/printer-waits.ts), and are offered when the
 * agent reports the printer able to print again.
 */
function heldPrinters(reports: PrinterReport[], ids: Record<string, string>): Set<string> {
  const held = new Set<string>();
  for (const report of reports) {
    const id = ids[report.name];
    if (id !== undefined && cannotPrint(report.status)) held.add(id);
  }
  return held;
}

export interface LinkOffersOptions {
  deps: Pick<LinkDeps, 'jobs' | 'documents'>;
  station: LinkStation;
  logger: Logger;
  outbound: AgentOutbound;
  closed: () => boolean;
  /** Publishes a report of the station's: a job whose document is gone fails. */
  report: (report: AgentReport) => Promise<void>;
  /** The job attempts the agent said in its hello it holds without a result. */
  held: JobAttempt[];
  /** The printers the agent reported as the link opened, and their ids by name. */
  printers: PrinterReport[];
  printerIds: Record<string, string>;
}

/** One link's offers: what it offered, what the agent holds unfinished, which printers take jobs. */
export class LinkOffers {
  /** What the offers need for the link's life: not the hello's printers and attempts. */
  readonly #options: Omit<LinkOffersOptions, 'held' | 'printers' | 'printerIds'>;
  #printerIds: Record<string, string>;
  /** Printers whose jobs are not offered now, by id: the agent reports them unable to print. */
  #heldPrinters: Set<string>;
  /** Job attempts already offered on this link, so a job is not sent twice over one link. */
  readonly #offered = new Set<string>();
  /**
   * Job attempts the agent holds without a result yet, by key: those it named in its hello and
   * those offered since. A withdrawal it may have missed (sent while it was away, or while NATS
   * was) is sent again when a re-read finds one of them no longer pending.
   */
  readonly #unfinished = new Map<string, JobAttempt>();

  constructor(options: LinkOffersOptions) {
    const { held, printers, printerIds, ...kept } = options;
    this.#options = kept;
    for (const { jobId, attempt } of held) {
      this.#unfinished.set(attemptKey(jobId, attempt), { jobId, attempt });
    }
    this.#printerIds = printerIds;
    this.#heldPrinters = heldPrinters(printers, printerIds);
  }

  /** The ids of the agent's printers, by name. */
  get printerIds(): Record<string, string> {
    return this.#printerIds;
  }

  /**
   * The agent reports its printers anew (`ids`: as the store now knows them). Answers whether a
   * printer whose jobs waited here can now be offered them: reported again (or anew), or able to
   * print again.
   */
  printersReported(printers: PrinterReport[], ids: Record<string, string>): boolean {
    const offering = new Set(
      Object.values(this.#printerIds).filter((id) => !this.#heldPrinters.has(id)),
    );
    this.#printerIds = ids;
    this.#heldPrinters = heldPrinters(printers, ids);
    return Object.values(ids).some((id) => !offering.has(id) && !this.#heldPrinters.has(id));
  }

  /** The job attempts the agent holds without a result, as of now. */
  unfinishedNow(): JobAttempt[] {
    return [...this.#unfinished.values()];
  }

  /** The agent reported the attempt's result. */
  finished(key: string): void {
    this.#unfinished.delete(key);
  }

  /**
   * Withdraws the job attempts of `unfinished` (what the agent held as the re-read began) that
   * are not among the station's pending `items`: they were cancelled, retried or ended while a
   * withdrawal could not reach the agent. An agent drops a withdrawn job unless it has printed.
   */
  withdrawUnless(items: Job[], unfinished: JobAttempt[]): void {
    if (this.#options.closed() || unfinished.length === 0) return;
    const pending = new Set(items.map((job) => attemptKey(job.id, job.attempt)));
    for (const { jobId, attempt } of unfinished) {
      const key = attemptKey(jobId, attempt);
      if (pending.has(key) || !this.#unfinished.has(key)) continue;
      this.#unfinished.delete(key);
      this.#options.logger.info({ jobId, attempt }, 'withdrawing a job no longer pending');
      void this.#options.outbound.send({ withdrawn: { jobId, attempt } });
    }
  }

  /** Offers the station's pending jobs that this link has not offered yet. */
  offerJobs(items: Job[]): void {
    if (this.#options.closed()) return;
    for (const job of items) {
      this.#offer({
        ...jobJson(job),
        sha256: job.sha256,
        options: PrintOptions.fromPartial(job.options ?? {}),
        trace_context: job.traceContext,
        ...(job.documentInline ? { document_inline: true } : {}),
      });
    }
  }

  /** An offer or a withdrawal from `dispatch.<org>.<station>`. */
  dispatch(message: DispatchMessage, trace: Context): void {
    if (message.kind === 'offer') {
      this.#offer(message.job, trace);
      return;
    }
    const key = attemptKey(message.job_id, message.attempt);
    this.#unfinished.delete(key);
    // A job moved away may be routed back to this station later, and is offered again then.
    this.#offered.delete(key);
    void this.#options.outbound.send({
      withdrawn: { jobId: message.job_id, attempt: message.attempt },
    });
  }

  /** Offers a job; its push continues `trace`, or else the job's own trace. */
  #offer(job: OfferedJob, trace = contextFrom(job.trace_context)): void {
    const { closed, logger, outbound } = this.#options;
    const key = attemptKey(job.id, job.attempt);
    const printerId = job.printer_id;
    // A pool job not routed yet has no printer, and no station to offer it to.
    if (!printerId || this.#offered.has(key) || closed() || this.#heldPrinters.has(printerId)) {
      return;
    }
    this.#offered.add(key);
    const printerName = Object.entries(this.#printerIds).find(([, id]) => id === printerId)?.[0];
    if (printerName === undefined) {
      this.#offered.delete(key);
      logger.warn({ jobId: job.id }, 'job for a printer this agent does not report; it waits');
      return;
    }
    this.#unfinished.set(key, { jobId: job.id, attempt: job.attempt });
    void outbound.queue(
      () => this.#push(job, printerName, trace),
      (err: unknown) => {
        this.#offered.delete(key);
        logger.warn({ err, jobId: job.id }, 'could not send a job; it is sent again on reconnect');
      },
    );
  }

  #push(job: OfferedJob, printerName: string, trace: Context): Promise<void> {
    const { station } = this.#options;
    const attributes = spoolAttributes({
      orgId: station.orgId,
      stationId: station.id,
      jobId: job.id,
      printerId: job.printer_id ?? undefined,
      attempt: job.attempt,
    });
    return inSpan('push job', { kind: SpanKind.PRODUCER, parent: trace, attributes }, () =>
      this.#sendJob(job, printerName),
    );
  }

  /**
   * The document's bytes: in the offer itself, kept with the job (asked of the jobs service), or
   * streamed from the object store.
   */
  async #document(
    job: OfferedJob,
  ): Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array> | undefined> {
    if (job.document !== undefined) return [Buffer.from(job.document, 'base64')];
    const { deps, station } = this.#options;
    if (job.document_inline) {
      try {
        const { data } = await deps.jobs.getJobDocument({ orgId: station.orgId, jobId: job.id });
        return [data];
      } catch (err) {
        if ((err as { code?: string }).code === 'content_deleted') return undefined;
        throw err;
      }
    }
    return (await deps.documents.get(job.id))?.data;
  }

  async #sendJob(job: OfferedJob, printerName: string): Promise<void> {
    const { outbound } = this.#options;
    const document = await this.#document(job);
    if (!document) {
      await this.#options.report({
        kind: 'result',
        job_id: job.id,
        attempt: job.attempt,
        printed: false,
        detail: 'the document is no longer stored',
      });
      return;
    }
    await outbound.write({
      offer: {
        jobId: job.id,
        attempt: job.attempt,
        printerId: job.printer_id ?? '',
        printerName,
        title: job.title,
        contentType: job.content_type,
        size: job.size,
        sha256: job.sha256,
        options: PrintOptions.fromPartial(job.options),
        traceContext: traceCarrier(),
        claim: Boolean(job.pool_id),
        priority: job.priority ?? DEFAULT_PRIORITY,
      },
    });
    let offset = 0;
    for await (const part of document) {
      await outbound.write({
        chunk: {
          jobId: job.id,
          offset,
          data: Buffer.from(part.buffer, part.byteOffset, part.length),
          last: false,
        },
      });
      offset += part.length;
    }
    await outbound.write({ chunk: { jobId: job.id, offset, data: Buffer.alloc(0), last: true } });
  }
}
