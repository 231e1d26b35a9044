/** When one link's re-read is tried again. */

/** A failed re-read is tried again after a random wait of up to this, doubling per failure… */
const RESYNC_RETRY_FIRST_MS = 500;
/** …up to this, until it succeeds, the link closes, or a round re-reads it anyway. */
const RESYNC_RETRY_CAP_MS = 30_000;

/**
 * The next try of a link's re-read: after a failure, with capped, jittered backoff; or once at a
 * given moment. At most one is waiting; none once the link has stopped.
 */
export class ResyncRetry {
  readonly #resync: () => void;
  /** Failed re-reads in a row. */
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  /** @param resync runs the re-read, which reports back through {@link succeeded} or {@link failed}. */
  constructor(resync: () => void) {
    this.#resync = resync;
  }

  /** Whether a try is waiting. */
  get waiting(): boolean {
    return this.#timer !== undefined;
  }

  /** A re-read starts now: the try waiting is not needed. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  succeeded(): void {
    this.#failures = 0;
  }

  failed(): void {
    this.#failures += 1;
    if (this.#timer) return;
    const ceiling = Math.min(
      RESYNC_RETRY_CAP_MS,
      RESYNC_RETRY_FIRST_MS * 2 ** Math.min(this.#failures - 1, 16),
    );
    // Full jitter: the links that failed together do not all come back in the same instant.
    this.after(Math.random() * ceiling);
  }

  /** Re-reads in `ms`. */
  after(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#resync();
    }, ms);
    this.#timer.unref();
  }

  /** The link closed. */
  stop(): void {
    this.#stopped = true;
    this.cancel();
  }
}
