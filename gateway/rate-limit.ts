/**
 * Rate limits (spec §8). The public endpoints allow 30 requests a minute per client address across
 * every gateway replica: the counts live in a JetStream KV bucket, bumped with compare-and-set, in
 * fixed one-minute windows. Authenticated endpoints have a per-key limit counted by each replica
 * on its own (a limit per replica, so it costs no round trip on the hot path). Answers carry
 * `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`; a refused request is
 * `429 rate_limited` with `Retry-After`. A 429 of another limit carries that limit's Retry-After
 * and none of these.
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
  /** Seconds until the window resets. */
  reset: number;
}

export interface Counter {
  /** Counts one request of `id` in the window starting at `windowStart`; resolves the new count. */
  hit(id: string, windowStart: number): Promise<number>;
}

/** The KV bucket public rate limits are counted in; entries expire after two windows. */
export const RATE_LIMIT_BUCKET = 'RATE_LIMITS';

/** Counts shared by every replica, in a KV bucket (opened on first use). */
export function kvCounter(open: () => Promise<KV>): Counter {
  let opened: Promise<KV> | undefined;
  return {
    async hit(id, windowStart) {
      opened ??= open().catch((err: unknown) => {
        opened = undefined;
        throw err;
      });
      const kv = await opened;
      const key = `${id.replace(/[^A-Za-z0-9_-]/g, '_')}.${windowStart}`;
      for (let attempt = 0; attempt < 20; attempt++) {
        const entry = await kv.get(key);
        try {
          if (entry?.operation !== 'PUT') {
            await kv.create(key, '1');
            return 1;
          }
          const n = Number(entry.string()) + 1;
          await kv.update(key, String(n), entry.revision);
          return n;
        } catch {
          // Another replica counted first; read again.
        }
      }
      throw new Error('rate limit counter is too contended');
    },
  };
}

/** Counts of this process only. */
export function localCounter(): Counter {
  const counts = new Map<string, number>();
  let window = 0;
  return {
    async hit(id, windowStart) {
      if (windowStart !== window) {
        counts.clear();
        window = windowStart;
      }
      const n = (counts.get(id) ?? 0) + 1;
      counts.set(id, n);
      return n;
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
    const now = options.clock.now().getTime();
    const windowStart = Math.floor(now / options.windowMs) * options.windowMs;
    const reset = Math.max(1, Math.ceil((windowStart + options.windowMs - now) / 1000));
    let count: number;
    try {
      count = await options.counter.hit(id, windowStart);
    } catch (err) {
      // Counting must not take the API down with it: an unreachable counter lets requests through.
      options.logger.warn({ err }, 'rate limit counter unavailable; request allowed');
      return next();
    }
    const verdict: Verdict = {
      allowed: count <= options.limit,
      limit: options.limit,
      remaining: Math.max(0, options.limit - count),
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
