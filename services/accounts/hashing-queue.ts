/**
 * The queue password hashing waits in. A scrypt hash is about 120 ms of CPU on libuv's threadpool:
 * unbounded, a burst of sign-ins queues every hash at once, each waits behind all the others, and
 * the callers' deadlines pass before most are done (`504 timeout` for everyone). Bounded, a few
 * hashes run at once, a few more wait their turn, and a hash that would wait longer than a caller
 * could is refused at once with `429 rate_limited` and `Retry-After`. The estimate that admitted a
 * hash can be wrong (a machine suddenly busy makes every hash slower): one whose turn comes after
 * twice the longest wait is refused then, as it would have been at once, rather than started so
 * late that its caller's deadline passes (`504`).
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { SpoolError } from '../../lib/errors.js';

export interface HashingQueueOptions {
  /** Hashes that run at once. */
  concurrency: number;
  /** Hashes that may wait for a turn, at most. */
  maxWaiting: number;
  /** The longest a hash should wait for its turn, by the durations measured so far. */
  maxWaitMs: number;
  /** Milliseconds on a monotonic clock (`performance.now` unless a test gives its own). */
  now?: () => number;
}

/** What a hash costs before any has been measured. */
const FIRST_ESTIMATE_MS = 120;
/** The weight of the latest duration in the running estimate. */
const ESTIMATE_WEIGHT = 0.2;
/** A hash whose turn comes after this many times `maxWaitMs` is refused rather than run. */
const LATE_FACTOR = 2;
/** libuv's threadpool has 4 threads unless configured; more hashes at once only queue there. */
const THREADPOOL_SIZE = 4;

/**
 * Hashes at once: one per core, up to the size of libuv's threadpool; a quarter of the gRPC
 * deadline (5 s) as the longest wait, so that a hash admitted is done well before it.
 */
export function defaultHashingOptions(cores = availableParallelism()): HashingQueueOptions {
  const concurrency = Math.max(1, Math.min(cores, THREADPOOL_SIZE));
  return { concurrency, maxWaiting: 8 * concurrency, maxWaitMs: 1_250 };
}

/** The state the admission of one more hash is decided on. */
export interface HashingLoad {
  running: number;
  waiting: number;
  /** The running estimate of one hash's duration. */
  estimateMs: number;
}

/**
 * Whether one more hash may run or wait: it runs when a slot is free; else it waits when there is
 * room in the queue and the hashes ahead of it, `concurrency` at a time, should be done within
 * `maxWaitMs`.
 */
export function admits(load: HashingLoad, options: HashingQueueOptions): boolean {
  if (load.running < options.concurrency) return true;
  if (load.waiting >= options.maxWaiting) return false;
  const rounds = Math.ceil((load.waiting + 1) / options.concurrency);
  return rounds * load.estimateMs <= options.maxWaitMs;
}

/** The running estimate after a hash took `durationMs`. */
export function nextEstimate(estimateMs: number, durationMs: number): number {
  return estimateMs + ESTIMATE_WEIGHT * (durationMs - estimateMs);
}

/** The refusal of a hash the queue has no room for. */
export function hashingBusy(): SpoolError {
  return new SpoolError(
    'rate_limited',
    'too many passwords are being checked at once: try again in a second',
    { retryAfter: 1 },
  );
}

export interface HashingQueue {
  /**
   * Runs `hash` when a slot is free, or throws `rate_limited` at once when the queue is full.
   * `hash` must use the CPU only while it runs: it is timed for the estimate.
   */
  run<T>(hash: () => Promise<T>): Promise<T>;
  /** The hashes running and waiting now, and the estimate of one. */
  load(): HashingLoad;
}

export function createHashingQueue(options: HashingQueueOptions): HashingQueue {
  let running = 0;
  let estimateMs = FIRST_ESTIMATE_MS;
  const waiting: Array<() => void> = [];
  const now = options.now ?? (() => performance.now());
  const load = (): HashingLoad => ({ running, waiting: waiting.length, estimateMs });

  async function turn(): Promise<void> {
    if (!admits(load(), options)) throw hashingBusy();
    if (running < options.concurrency) {
      running++;
      return;
    }
    // The slot passes straight from the hash that ends to the one that waited longest.
    const since = now();
    await new Promise<void>((resolve) => waiting.push(resolve));
    if (now() - since > LATE_FACTOR * options.maxWaitMs) {
      // Too late to be done in time: the slot goes on to the next, which checks the same.
      done();
      throw hashingBusy();
    }
  }

  function done(): void {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }

  return {
    async run(hash) {
      await turn();
      const started = now();
      try {
        return await hash();
      } finally {
        estimateMs = nextEstimate(estimateMs, now() - started);
        done();
      }
    },
    load,
  };
}
