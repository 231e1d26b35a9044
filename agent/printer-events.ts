/**
 * Printer events: the agent subscribes to what a CUPS server (one subscription for all its queues)
 * or an IPP printer (one each) says has changed, and the printers' statuses are read as soon as
 * something did (docs/agent.md, "When statuses are read"). A watch only ever asks for a read; the timed status
 * poll stays, and the printer set runs it less often while every printer is watched.
 *
 * A watch that cannot subscribe or loses its subscription (a server without them, a dropped
 * connection, a lease gone with a restart) says so once, and tries again with backoff; a
 * subscription the server forgot is made again at once.
 */
import type { Timers } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { messageOf } from './backends/backend.js';
import type { CupsOptions } from './backends/cups.js';
import { ippServerFor } from './backends/cups.js';
import { cupsSubscriptionTarget } from './backends/cups-ipp.js';
import { ippPrinterSubscriptionTarget } from './backends/ipp-printer.js';
import { type BackoffOptions, backoffDelay } from './backoff.js';
import { describe } from './ipp/client.js';
import {
  cancelSubscription,
  createSubscription,
  getNotifications,
  type Lease,
  type Notifications,
  renewSubscription,
  type SubscriptionTarget,
  subscriptionGone,
} from './ipp/subscriptions.js';
import type { BackendSpec } from './printer-spec.js';

/** One subscription's protocol: IPP's, or a test's. */
export interface EventFeed {
  /** Names the server or printer; printers whose feeds have the same key share one subscription. */
  readonly key: string;
  subscribe(leaseSeconds: number, signal: AbortSignal): Promise<Lease>;
  /** The events from `sequence` on; a server may hold the request until there is one. */
  notifications(id: number, sequence: number, signal: AbortSignal): Promise<Notifications>;
  /** Resolves with the lease granted, in seconds. */
  renew(id: number, leaseSeconds: number, signal: AbortSignal): Promise<number>;
  cancel(id: number): Promise<void>;
}

export interface PrinterEventOptions {
  /** Subscribe at all (default true); without, statuses are only polled. */
  enabled?: boolean;
  /**
   * How long after an answer without events a server is asked again (default 1 s). A server
   * that holds the request until something happens answers only then; CUPS answers at once, so
   * this is how soon a change in CUPS reaches the agent.
   */
  askEveryMs?: number;
  /** The lease asked for, in seconds (default 300); renewed when half of it has gone. */
  leaseSeconds?: number;
  /** The waits between attempts while subscribing fails (default 1 s doubling to 5 min, jittered). */
  backoff?: BackoffOptions;
  /** A printer's feed, or undefined for a printer that sends no events; tests replace it. */
  feed?: (spec: BackendSpec) => EventFeed | undefined;
  /** The backoff's jitter (default Math.random). */
  random?: () => number;
}

export const EVENT_DEFAULTS = {
  askEveryMs: 1_000,
  leaseSeconds: 300,
  backoff: { initialMs: 1_000, maxMs: 300_000 } satisfies BackoffOptions,
};

/** How long a held Get-Notifications may go unanswered before the connection counts as lost. */
const HELD_TIMEOUT_MS = 120_000;
/** How long subscribing and renewing may take. */
const REQUEST_TIMEOUT_MS = 10_000;
/** How long the cancel at a stop may hold the stop up. */
const CANCEL_TIMEOUT_MS = 2_000;

/**
 * The IPP feed of a printer: its CUPS server's for `cups:` (every queue of one server shares it),
 * the printer's own for `ipp:`; none for `file:` and `raw:`, which have no such thing.
 */
export function ippEventFeed(spec: BackendSpec, cups: CupsOptions): EventFeed | undefined {
  switch (spec.kind) {
    case 'cups': {
      const server = ippServerFor(cups);
      return targetFeed(`CUPS at ${server}`, cupsSubscriptionTarget(server));
    }
    case 'ipp': {
      const target = ippPrinterSubscriptionTarget(spec.uri);
      return targetFeed(describe(target.endpoint), target);
    }
    default:
      return undefined;
  }
}

function targetFeed(key: string, target: SubscriptionTarget): EventFeed {
  return {
    key,
    subscribe: (seconds, signal) =>
      createSubscription(target, seconds, { signal, timeoutMs: REQUEST_TIMEOUT_MS }),
    notifications: (id, sequence, signal) =>
      getNotifications(target, id, sequence, { signal, timeoutMs: HELD_TIMEOUT_MS }),
    renew: (id, seconds, signal) =>
      renewSubscription(target, id, seconds, { signal, timeoutMs: REQUEST_TIMEOUT_MS }),
    cancel: (id) => cancelSubscription(target, id, { timeoutMs: CANCEL_TIMEOUT_MS }),
  };
}

export interface PrinterEventWatchOptions {
  logger: Logger;
  timers: Timers;
  askEveryMs: number;
  leaseSeconds: number;
  backoff: BackoffOptions;
  /** The status poll's interval while this watch does not work, for what the log says. */
  pollMs: number;
  /** Something changed, or may have while nothing could tell: read the statuses. */
  onEvent(): void;
  /** {@link PrinterEventWatch.watching} changed. */
  onMode(): void;
  random?: () => number;
}

/** One subscription, kept alive for as long as the agent runs. */
export class PrinterEventWatch {
  readonly #feed: EventFeed;
  readonly #options: PrinterEventWatchOptions;
  readonly #abort = new AbortController();
  #lease: (Lease & { answered: boolean }) | undefined;
  #sequence = 1;
  #watching = false;
  /** What the log last said: that the feed works, or that it does not. */
  #said: 'works' | 'fails' | undefined;
  #renewal: unknown;
  #loop: Promise<void> | undefined;

  constructor(feed: EventFeed, options: PrinterEventWatchOptions) {
    this.#feed = feed;
    this.#options = options;
  }

  get key(): string {
    return this.#feed.key;
  }

  /** Whether the subscription works: its server answered for it last time it was asked. */
  get watching(): boolean {
    return this.#watching;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Ends any request under way at once, and cancels the subscription while its server answers. */
  async stop(): Promise<void> {
    this.#abort.abort();
    this.#options.timers.clear(this.#renewal);
    await this.#loop;
    const lease = this.#lease;
    this.#lease = undefined;
    if (lease && this.#watching) await this.#feed.cancel(lease.id).catch(() => {});
  }

  get #stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  async #run(): Promise<void> {
    const { signal } = this.#abort;
    let failures = 0;
    while (!this.#stopped) {
      try {
        let lease = this.#lease;
        if (!lease) {
          const made = await this.#feed.subscribe(this.#options.leaseSeconds, signal);
          lease = { ...made, answered: false };
          this.#lease = lease;
          this.#sequence = 1;
          this.#renewIn(lease);
        }
        const got = await this.#feed.notifications(lease.id, this.#sequence, signal);
        failures = 0;
        const last = got.sequences.at(-1);
        if (last !== undefined) this.#sequence = last + 1;
        // What changed before the subscription was made, or while the server could not be asked,
        // has no event: the first answer for a new subscription, or after a failure, reads too.
        const catchUp = !lease.answered || !this.#watching;
        lease.answered = true;
        if (got.ended) this.#drop(lease);
        this.#mode(true);
        if (catchUp || last !== undefined) this.#options.onEvent();
        if (last === undefined) await this.#wait(this.#options.askEveryMs);
      } catch (error) {
        if (this.#stopped) break;
        const lease = this.#lease;
        // A subscription that worked and is gone (its lease ended, or the server restarted) is
        // made again at once; the server still takes them.
        if (lease && subscriptionGone(error)) {
          this.#drop(lease);
          if (lease.answered) continue;
        }
        this.#mode(false, error);
        await this.#wait(backoffDelay(failures++, this.#options.backoff, this.#options.random));
      }
    }
  }

  #drop(lease: Lease): void {
    if (this.#lease !== lease) return;
    this.#lease = undefined;
    this.#options.timers.clear(this.#renewal);
  }

  /** Renews `lease` when half of it has gone (a lease of 0 does not end). */
  #renewIn(lease: Lease & { answered: boolean }, ms = (lease.seconds * 1000) / 2): void {
    this.#options.timers.clear(this.#renewal);
    if (lease.seconds <= 0 || this.#stopped) return;
    this.#renewal = this.#options.timers.set(() => void this.#renew(lease), ms);
  }

  async #renew(lease: Lease & { answered: boolean }): Promise<void> {
    if (this.#lease !== lease || this.#stopped) return;
    try {
      lease.seconds = await this.#feed.renew(
        lease.id,
        this.#options.leaseSeconds,
        this.#abort.signal,
      );
      if (this.#lease === lease) this.#renewIn(lease);
    } catch (error) {
      if (this.#stopped || this.#lease !== lease) return;
      // Gone: the next Get-Notifications hears the same and subscribes again. Otherwise the
      // server is away; it is asked again well before the lease ends.
      if (subscriptionGone(error)) this.#drop(lease);
      else this.#renewIn(lease, (lease.seconds * 1000) / 8);
    }
  }

  /** Records whether the feed works; the log says so once per change, not per attempt. */
  #mode(works: boolean, error?: unknown): void {
    const { logger, pollMs } = this.#options;
    const key = this.#feed.key;
    if (works !== this.#watching) {
      this.#watching = works;
      this.#options.onMode();
    }
    const said = works ? 'works' : 'fails';
    if (said === this.#said) return;
    const before = this.#said;
    this.#said = said;
    const every = `every ${pollMs / 1000} s`;
    if (works) {
      logger.info(
        { events_from: key },
        `printer events from ${key}: statuses are read as they change`,
      );
    } else if (before === 'works') {
      logger.warn(
        { events_from: key, err: messageOf(error) },
        `printer events from ${key} stopped: statuses are read ${every} until they come back`,
      );
    } else {
      logger.info(
        { events_from: key, err: messageOf(error) },
        `no printer events from ${key}: statuses are read ${every}`,
      );
    }
  }

  /** Waits `ms` on the watch's timers, or less when it stops. */
  #wait(ms: number): Promise<void> {
    const { timers } = this.#options;
    const signal = this.#abort.signal;
    if (ms <= 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        timers.clear(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = timers.set(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
