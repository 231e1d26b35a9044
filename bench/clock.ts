/**
 * The harness's one clock: wall-clock milliseconds with sub-millisecond precision. Every bench
 * process runs on the same machine, so a time taken in one process (a POST sent) can be compared
 * with a time taken in another (an offer or a webhook received).
 */
import { performance } from 'node:perf_hooks';

/** Milliseconds since the epoch, to a microsecond or so. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
