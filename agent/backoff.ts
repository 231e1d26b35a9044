/**
 * Capped exponential backoff with full jitter: the n-th wait (from 0) is uniformly random in
 * `[0, min(maxMs, initialMs · 2ⁿ))`, so a fleet of agents cut off together does not come back in
 * step.
 */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000 };

export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const cap = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * cap);
}
