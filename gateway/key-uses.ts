/**
 * When each API key was last used. A request noting its key costs a map entry; what was noted is
 * written every `flushMs` (a minute by default), a chunk of keys a call, and once more as the
 * gateway closes, so that `last_used_at` is right to about the minute without a write per
 * request. A write that fails keeps what it had left for the next one, up to a bound.
 */
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

export interface KeyUse {
  orgId: string;
  keyId: string;
  at: Date;
}

/** Keys noted before a write is made at once, however soon after the last. */
const FLUSH_AT = 5_000;

/** Uses sent in one call; the accounts service takes up to 10,000. */
const CHUNK = 1_000;

/** Keys kept at most after failed writes; beyond, the uses of further keys are dropped. */
const MAX_KEPT = 50_000;

export class KeyUses {
  readonly #record: (uses: KeyUse[]) => Promise<void>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #pending = new Map<string, KeyUse>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;

  constructor(options: {
    record(uses: KeyUse[]): Promise<void>;
    clock: Clock;
    logger: Logger;
  }) {
    this.#record = options.record;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  /** The key was used now. */
  note(orgId: string, keyId: string): void {
    this.#pending.set(keyId, { orgId, keyId, at: this.#clock.now() });
    // One write at a time: while one is under way, the uses wait for the next.
    if (this.#pending.size >= FLUSH_AT && !this.#flushing) void this.flush();
  }

  start(flushMs = 60_000): void {
    this.#timer = setInterval(() => void this.flush(), flushMs);
    this.#timer.unref();
  }

  /**
   * Writes what was noted, a chunk a call, sorted by key; one write at a time, a second call
   * waiting for the first and then writing what came meanwhile.
   */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#pending.size === 0) return;
    const uses = [...this.#pending.values()].sort((a, b) => (a.keyId < b.keyId ? -1 : 1));
    this.#pending = new Map();
    this.#flushing = this.#write(uses).finally(() => {
      this.#flushing = undefined;
    });
    await this.#flushing;
  }

  async #write(uses: KeyUse[]): Promise<void> {
    for (let i = 0; i < uses.length; i += CHUNK) {
      try {
        await this.#record(uses.slice(i, i + CHUNK));
      } catch (err) {
        // What is left is kept for the next write, unless a later use was noted meanwhile.
        const left = uses.slice(i);
        for (const use of left) {
          if (this.#pending.size >= MAX_KEPT) break;
          if (!this.#pending.has(use.keyId)) this.#pending.set(use.keyId, use);
        }
        this.#logger.warn({ err, keys: left.length }, 'could not record when API keys were used');
        return;
      }
    }
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}
