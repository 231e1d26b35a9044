/**
 * The station's printers: one backend per `--printer` (and per queue a `cups:*` finds), their
 * last known status, and what reads them again: the printers' events where their servers send
 * them (agent/printer-events.ts), and a timed poll, which runs often only while some printer is
 * not watched or a job waits for its printer.
 */
import type { PrinterCapabilities, PrinterReport } from '../gen/spool/v1/stations.js';
import { REAL_TIMERS, type Timers } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { cannotPrint, takesPoolJobs } from '../lib/printer-status.js';
import {
  AS_IS_CAPABILITIES,
  type Backend,
  messageOf,
  type PrinterStatus,
} from './backends/backend.js';
import {
  CUPS_CAPABILITIES,
  type CupsOptions,
  createCupsBackend,
  discoverCupsQueues,
} from './backends/cups.js';
import { createFileBackend } from './backends/file.js';
import { createIppPrinterBackend } from './backends/ipp-printer.js';
import { createRawBackend } from './backends/raw.js';
import {
  EVENT_DEFAULTS,
  type EventFeed,
  ippEventFeed,
  type PrinterEventOptions,
  PrinterEventWatch,
} from './printer-events.js';
import {
  ALL_CUPS_QUEUES,
  type BackendSpec,
  discoveredPrinterName,
  type PrinterSpec,
} from './printer-spec.js';

export interface PrinterSetOptions {
  specs: PrinterSpec[];
  logger: Logger;
  cups?: CupsOptions;
  /** How often statuses are read while some printer is not watched (default 5 s). */
  statusIntervalMs?: number;
  /**
   * How often statuses are read while every printer's server sends its changes and no job waits
   * for its printer (default 60 s): the events say when to read, this is the safety net.
   */
  watchedStatusIntervalMs?: number;
  /** Printer events: whether and how the set subscribes to them. */
  events?: PrinterEventOptions;
  /** The poll's and the events' timers; tests fire them. */
  timers?: Timers;
  /** How long one status read may take before the printer counts as `unknown` (default 15 s). */
  statusTimeoutMs?: number;
  /** Builds a backend; tests replace it. */
  createBackend?: (spec: BackendSpec) => Backend;
}

const DEFAULTS = {
  statusIntervalMs: 5_000,
  watchedStatusIntervalMs: 60_000,
  statusTimeoutMs: 15_000,
};

export class PrinterSet {
  readonly #specs: PrinterSpec[];
  readonly #logger: Logger;
  readonly #cups: CupsOptions;
  readonly #statusIntervalMs: number;
  readonly #watchedStatusIntervalMs: number;
  readonly #statusTimeoutMs: number;
  readonly #events: PrinterEventOptions;
  readonly #timers: Timers;
  readonly #createBackend: (spec: BackendSpec) => Backend;
  /** Backends by printer name, in report order. */
  #backends = new Map<string, Backend>();
  /**
   * The capabilities each printer last reported. A status read that fails or times out says
   * nothing of what the printer can do, so it reports these again: reporting none would make the
   * server refuse `copies` or `paper` while a printer is briefly unreachable.
   */
  #capabilities = new Map<string, PrinterCapabilities>();
  /** The queues each `cups:*` spec found last time. */
  readonly #discovered = new Map<PrinterSpec, string[]>();
  #reports: PrinterReport[] = [];
  /** Each printer's backend's own words for its state, from the last read (see {@link raw}). */
  #raw = new Map<string, string>();
  #timer: unknown;
  /** The interval {@link #timer} was set for. */
  #timerMs = 0;
  #stopped = false;
  #onChange: ((reports: PrinterReport[]) => void) | undefined;
  /** The list `onChange` was last given (or the one there was at start). */
  #reported: PrinterReport[] = [];
  /** One watch per subscription (a CUPS server, an IPP printer). */
  #watches: PrinterEventWatch[] = [];
  /** Whether every printer has a watch; one without is only ever polled. */
  #allWatched = false;
  /** A read asked for by events; `#readAgain` when another came while it ran. */
  #eventRead: Promise<void> | undefined;
  #readAgain = false;
  #refreshing: Promise<boolean> | undefined;
  /** Status reads begun so far: a waiter counts only a read begun after it asked. */
  #readsBegun = 0;
  /** Those waiting for a printer to read as able to print (see {@link untilPrintable}). */
  #waiters: Array<{ name: string; after: number; resolve: () => void }> = [];

  constructor(options: PrinterSetOptions) {
    this.#specs = options.specs;
    this.#logger = options.logger;
    this.#cups = { ...options.cups, logger: options.logger };
    this.#statusIntervalMs = options.statusIntervalMs ?? DEFAULTS.statusIntervalMs;
    this.#watchedStatusIntervalMs =
      options.watchedStatusIntervalMs ?? DEFAULTS.watchedStatusIntervalMs;
    this.#events = options.events ?? {};
    this.#timers = options.timers ?? REAL_TIMERS;
    this.#statusTimeoutMs = options.statusTimeoutMs ?? DEFAULTS.statusTimeoutMs;
    this.#createBackend = options.createBackend ?? ((spec) => defaultBackend(spec, this.#cups));
  }

  backend(name: string): Backend | undefined {
    return this.#backends.get(name);
  }

  /** The whole list, as `hello` and `printers` carry it; a new array whenever it changed. */
  reports(): PrinterReport[] {
    return this.#reports;
  }

  /** What `name`'s backend last said of its state in its own words, for a diagnosis; or ''. */
  raw(name: string): string {
    return this.#raw.get(name) ?? '';
  }

  /** Finds printers and reads every status; resolves true when the reports changed. */
  refresh(): Promise<boolean> {
    if (!this.#refreshing) {
      const read = ++this.#readsBegun;
      this.#refreshing = this.#refresh().finally(() => {
        this.#refreshing = undefined;
        this.#wake(read);
      });
    }
    return this.#refreshing;
  }

  /** Whether `name` reads as able to take a pool job now (ready, or printing). */
  printable(name: string): boolean {
    const report = this.#reports.find((r) => r.name === name);
    return report !== undefined && takesPoolJobs(report.status);
  }

  /**
   * Resolves once a status read begun after this call finds `name` neither `offline` nor in
   * `error` (or no longer there), or when the set stops. A job the printer could not take waits on
   * it: the read that last said `ready` may be older than what went wrong.
   */
  untilPrintable(name: string): Promise<void> {
    const waiting = new Promise<void>((resolve) => {
      if (this.#stopped) resolve();
      else this.#waiters.push({ name, after: this.#readsBegun, resolve });
    });
    // A printer that did not take a job may have said so to nobody (a CUPS queue refusing jobs
    // sends no event when lp is refused): it is read at the short interval while its jobs wait.
    this.#intervalMayHaveChanged();
    return waiting;
  }

  #wake(read: number): void {
    const before = this.#waiters.length;
    this.#waiters = this.#waiters.filter((w) => {
      if (w.after >= read) return true;
      const report = this.#reports.find((r) => r.name === w.name);
      if (report && cannotPrint(report.status)) return true;
      w.resolve();
      return false;
    });
    if (this.#waiters.length !== before) this.#intervalMayHaveChanged();
  }

  /**
   * Reads statuses when a printer's server says something changed, and at an interval besides,
   * and calls `onChange` with the whole list whenever it changed.
   */
  start(onChange: (reports: PrinterReport[]) => void): void {
    this.#onChange = onChange;
    this.#reported = this.#reports;
    this.#startWatches();
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timers.clear(this.#timer);
    for (const w of this.#waiters.splice(0)) w.resolve();
    await Promise.all(this.#watches.map((w) => w.stop()));
    await this.#eventRead;
    await this.#refreshing?.catch(() => {});
  }

  /** The poll's interval now: long only while every printer is watched and no job waits. */
  #interval(): number {
    const watched =
      this.#allWatched && this.#waiters.length === 0 && this.#watches.every((w) => w.watching);
    return watched ? this.#watchedStatusIntervalMs : this.#statusIntervalMs;
  }

  #schedule(): void {
    this.#timers.clear(this.#timer);
    if (this.#stopped || !this.#onChange) return;
    this.#timerMs = this.#interval();
    this.#timer = this.#timers.set(() => void this.#tick(), this.#timerMs);
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    await this.#read();
    this.#schedule();
  }

  /** A watch began or ceased to work, or jobs began or ceased to wait: poll at the new interval. */
  #intervalMayHaveChanged(): void {
    // While a tick reads, it sets the next timer itself when it is done.
    if (this.#timer !== undefined && this.#interval() !== this.#timerMs) this.#schedule();
  }

  /** Reads every status, and tells `onChange` when the list is not the one it was last given. */
  async #read(): Promise<void> {
    try {
      await this.refresh();
    } catch (err) {
      this.#logger.error({ err }, 'reading printer statuses failed');
    }
    if (this.#reports !== this.#reported && !this.#stopped) {
      this.#reported = this.#reports;
      this.#onChange?.(this.#reports);
    }
  }

  /** A server said something changed: read the statuses now, after any read already under way. */
  #onEvent(): void {
    if (this.#stopped) return;
    if (this.#eventRead) {
      this.#readAgain = true;
      return;
    }
    this.#eventRead = (async () => {
      do {
        this.#readAgain = false;
        // A read under way may have begun before the change: this one begins after it ends.
        await this.#refreshing?.catch(() => {});
        await this.#read();
      } while (this.#readAgain && !this.#stopped);
    })().finally(() => {
      this.#eventRead = undefined;
    });
  }

  /** A watch per distinct feed of the printers' (one per CUPS server, one per IPP printer). */
  #startWatches(): void {
    if (this.#events.enabled === false) return;
    const feedOf = this.#events.feed ?? ((spec: BackendSpec) => ippEventFeed(spec, this.#cups));
    const feeds = new Map<string, EventFeed>();
    let allWatched = true;
    for (const spec of this.#specs) {
      const feed = feedOrNone(() => feedOf(spec.backend));
      if (feed) {
        if (!feeds.has(feed.key)) feeds.set(feed.key, feed);
      } else allWatched = false;
    }
    this.#allWatched = allWatched;
    this.#watches = [...feeds.values()].map(
      (feed) =>
        new PrinterEventWatch(feed, {
          logger: this.#logger,
          timers: this.#timers,
          askEveryMs: this.#events.askEveryMs ?? EVENT_DEFAULTS.askEveryMs,
          leaseSeconds: this.#events.leaseSeconds ?? EVENT_DEFAULTS.leaseSeconds,
          backoff: this.#events.backoff ?? EVENT_DEFAULTS.backoff,
          pollMs: this.#statusIntervalMs,
          onEvent: () => this.#onEvent(),
          onMode: () => this.#intervalMayHaveChanged(),
          ...(this.#events.random ? { random: this.#events.random } : {}),
        }),
    );
    for (const watch of this.#watches) watch.start();
  }

  async #refresh(): Promise<boolean> {
    const next = new Map<string, Backend>();
    const capabilities = new Map<string, PrinterCapabilities>();
    const add = (name: string, spec: BackendSpec) => {
      if (next.has(name)) {
        this.#logger.warn({ printer: name }, 'two printers have the same name; keeping the first');
        return;
      }
      next.set(name, this.#backends.get(name) ?? this.#createBackend(spec));
      capabilities.set(name, this.#capabilities.get(name) ?? baseCapabilities(spec));
    };
    for (const spec of this.#specs) {
      const { backend } = spec;
      if (backend.kind === 'cups' && backend.queue === ALL_CUPS_QUEUES) {
        for (const queue of await this.#discover(spec)) {
          add(discoveredPrinterName(spec.name, queue), { kind: 'cups', queue });
        }
      } else {
        add(spec.name, backend);
      }
    }
    this.#backends = next;
    this.#capabilities = capabilities;
    const raw = new Map<string, string>();
    const reports = await Promise.all(
      [...next].map(async ([name, backend]): Promise<PrinterReport> => {
        // The backend's own words stay here: the link reports only status and detail.
        const { raw: words, ...status } = await this.#status(name, backend);
        if (words) raw.set(name, words);
        return { name, ...status };
      }),
    );
    this.#raw = raw;
    // The list is replaced only when it changed, so callers may compare lists by identity.
    if (JSON.stringify(reports) === JSON.stringify(this.#reports)) return false;
    this.#reports = reports;
    return true;
  }

  async #discover(spec: PrinterSpec): Promise<string[]> {
    try {
      const queues = await discoverCupsQueues(this.#cups);
      this.#discovered.set(spec, queues);
      return queues;
    } catch (err) {
      // Keep the printers found before rather than report them gone while CUPS is away.
      this.#logger.warn({ err: messageOf(err), printer: spec.name }, 'cannot list the CUPS queues');
      return this.#discovered.get(spec) ?? [];
    }
  }

  async #status(name: string, backend: Backend): Promise<PrinterStatus> {
    const known = this.#capabilities.get(name) ?? AS_IS_CAPABILITIES;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.#statusTimeoutMs);
    });
    try {
      const status = await Promise.race([backend.status(), timeout]);
      if (status === undefined) {
        return {
          status: 'unknown',
          detail: `no status in ${this.#statusTimeoutMs} ms`,
          capabilities: known,
        };
      }
      this.#capabilities.set(name, status.capabilities);
      return status;
    } catch (err) {
      this.#logger.warn({ err: messageOf(err), printer: name }, 'reading a printer status failed');
      return { status: 'unknown', detail: messageOf(err), capabilities: known };
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * A printer's feed; none for one whose address cannot be read (a URI with a password in it): its
 * status reads say what is wrong with it, at the short interval.
 */
function feedOrNone(make: () => EventFeed | undefined): EventFeed | undefined {
  try {
    return make();
  } catch {
    return undefined;
  }
}

/** What a printer can do before its backend has said: what every printer of its kind can do. */
function baseCapabilities(spec: BackendSpec): PrinterCapabilities {
  return spec.kind === 'cups' ? CUPS_CAPABILITIES : AS_IS_CAPABILITIES;
}

function defaultBackend(spec: BackendSpec, cups: CupsOptions): Backend {
  switch (spec.kind) {
    case 'file':
      return createFileBackend(spec.dir);
    case 'raw':
      return createRawBackend({ host: spec.host, port: spec.port });
    case 'cups':
      return createCupsBackend(spec.queue, cups);
    case 'ipp':
      return createIppPrinterBackend(spec.uri, { ...(cups.logger ? { logger: cups.logger } : {}) });
  }
}
