/**
 * Rate limits (spec §8). The public endpoints allow 30 requests a minute per client address across
 * every gateway replica, in any minute, not only per minute of the clock: the counts live in a
 * JetStream KV bucket, one entry per address holding the times of its requests of the last
 * minute, changed with compare-and-set. Authenticated endpoints have a per-key limit counted by
 * each replica on its own in fixed one-minute windows (a limit per replica, so it costs no round
 * trip on the hot path). Answers carry `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset`; a refused request is `429 rate_limited` with `Retry-After`. A 429 of another
 * limit carries that limit's Retry-After and none of these.
 */
import type { KV } from '@nats-io/kv';
import type { Context, Middleware } from 'koa';
import type { Clock } from '../lib/clock.js';
import { SpoolError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayState } from './state.js';

export interface Verdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until one more request would be allowed (or the window resets). */
  reset: number;
}

/** What a counter says of one request. */
export interface Take {
  /** Counted: fewer than the limit came in the window before it. */
  allowed: boolean;
  /** Requests counted in the window, this one included when it was. */
  count: number;
  /** Milliseconds until one more request would be counted (or the count starts again). */
  resetMs: number;
}

export interface Counter {
  /** Counts a request of `id` at `now`, unless `limit` were counted in its window already. */
  take(id: string, now: number, limit: number, windowMs: number): Promise<Take>;
}

/** The KV bucket public rate limits are counted in; entries expire after two windows. */
export const RATE_LIMIT_BUCKET = 'RATE_LIMITS';

/**
 * A sliding window shared by every replica, in a KV bucket (opened on first use): each entry
 * lists the times (milliseconds, comma-separated) of its id's requests counted in the last
 * window, so the limit holds over every span of that length. A refused request is not listed.
 */
export function kvCounter(open: () => Promise<KV>): Counter {
  let opened: Promise<KV> | undefined;
  return {
    async take(id, now, limit, windowMs) {
      opened ??= open().catch((err: unknown) => {
        opened = undefined;
        throw err;
      });
      const kv = await opened;
      const key = id.replace(/[^A-Za-z0-9_-]/g, '_');
      for (let attempt = 0; attempt < 20; attempt++) {
        const entry = await kv.get(key);
        const listed = entry?.operation === 'PUT' ? entry.string() : '';
        const times = listed === '' ? [] : listed.split(',').map(Number);
        const recent = times.filter((at) => at > now - windowMs && at <= now);
        if (recent.length >= limit) {
          const freed = recent[recent.length - limit] as number;
          return { allowed: false, count: recent.length, resetMs: freed + windowMs - now };
        }
        recent.push(now);
        try {
          if (entry?.operation === 'PUT') await kv.update(key, recent.join(','), entry.revision);
          else await kv.create(key, recent.join(','));
        } catch {
          // Another replica counted first; read again.
          continue;
        }
        return {
          allowed: true,
          count: recent.length,
          resetMs: (recent[0] as number) + windowMs - now,
        };
      }
      throw new Error('rate limit counter is too contended');
    },
  };
}

/** Counts of this process only, in fixed windows of the clock. */
export function localCounter(): Counter {
  const counts = new Map<string, number>();
  let window = 0;
  return {
    async take(id, now, limit, windowMs) {
      const windowStart = Math.floor(now / windowMs) * windowMs;
      if (windowStart !== window) {
        counts.clear();
        window = windowStart;
      }
      const n = (counts.get(id) ?? 0) + 1;
      counts.set(id, n);
      return { allowed: n <= limit, count: n, resetMs: windowStart + windowMs - now };
    },
  };
}

export interface LimitOptions {
  counter: Counter;
  /** Requests per window; 0 turns the limit off. */
  limit: number;
  windowMs: number;
  clock: Clock;
  /** Who is counted; undefined skips the limit for this request. */
  identify(ctx: Context & { state: GatewayState }): string | undefined;
  logger: Logger;
}

function setHeaders(ctx: Context, v: Verdict): void {
  ctx.set('RateLimit-Limit', String(v.limit));
  ctx.set('RateLimit-Remaining', String(v.remaining));
  ctx.set('RateLimit-Reset', String(v.reset));
}

export function rateLimit(options: LimitOptions): Middleware<GatewayState> {
  return async (ctx, next) => {
    const id = options.limit > 0 ? options.identify(ctx) : undefined;
    if (id === undefined) return next();
    let taken: Take;
    try {
      taken = await options.counter.take(
        id,
        options.clock.now().getTime(),
        options.limit,
        options.windowMs,
      );
    } catch (err) {
      // Counting must not take the API down with it: an unreachable counter lets requests through.
      options.logger.warn({ err }, 'rate limit counter unavailable; request allowed');
      return next();
    }
    const reset = Math.max(1, Math.ceil(taken.resetMs / 1000));
    const verdict: Verdict = {
      allowed: taken.allowed,
      limit: options.limit,
      remaining: Math.max(0, options.limit - taken.count),
      reset,
    };
    setHeaders(ctx, verdict);
    if (!verdict.allowed) {
      throw new SpoolError(
        'rate_limited',
        `too many requests: at most ${options.limit} a minute; try again in ${reset} s`,
        { retryAfter: reset },
      );
    }
    try {
      await next();
    } catch (err) {
      // Another limit refused it (the test keys' daily prints): these headers describe this one,
      // whose window says nothing of when to come back, so only its Retry-After goes out.
      if (err instanceof SpoolError && err.code === 'rate_limited') {
        for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
          ctx.remove(name);
        }
      }
      throw err;
    }
  };
}
