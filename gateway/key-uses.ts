/**
 * When each API key was last used. A request noting its key costs a map entry; what was noted is
 * written every `flushMs` (a minute by default) in one call for every key, and once more as the
 * gateway closes, so that `last_used_at` is right to about the minute without a write per
 * request. A write that fails keeps what it held for the next one.
 */
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

export interface KeyUse {
  orgId: string;
  keyId: string;
  at: Date;
}

/** Keys noted at most before a write is made at once, however soon after the last. */
const MAX_PENDING = 10_000;

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
    if (this.#pending.size >= MAX_PENDING) void this.flush();
  }

  start(flushMs = 60_000): void {
    this.#timer = setInterval(() => void this.flush(), flushMs);
    this.#timer.unref();
  }

  /** Writes what was noted; one write at a time, a second call waiting for the first. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#pending.size === 0) return;
    const uses = [...this.#pending.values()];
    this.#pending = new Map();
    this.#flushing = this.#record(uses)
      .catch((err: unknown) => {
        // Kept for the next write, unless a later use of the key was noted meanwhile.
        for (const use of uses)
          if (!this.#pending.has(use.keyId)) this.#pending.set(use.keyId, use);
        this.#logger.warn({ err, keys: uses.length }, 'could not record when API keys were used');
      })
      .finally(() => {
        this.#flushing = undefined;
      });
    await this.#flushing;
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}
