/**
 * How often one client address may try an enrollment code at the station link's `Enroll`: a
 * sliding window of a minute, counted by this process (each stations replica counts its own, as
 * each holds its own links), on the injected clock. The gateway's `POST /v1/public/enroll` has
 * the same limit, counted across its replicas.
 */
import ipaddr from 'ipaddr.js';
import type { Clock } from '../../lib/clock.js';

/** Addresses remembered at most; beyond, the longest quiet are forgotten first. */
const MAX_ADDRESSES = 10_000;

export interface AttemptVerdict {
  allowed: boolean;
  /** Seconds until one more attempt would be allowed, when this one was not. */
  retryAfter: number;
}

export interface AttemptLimit {
  /** Counts an attempt of `address` now, unless it made `limit` in the last window. */
  take(address: string): AttemptVerdict;
}

export function attemptLimit(clock: Clock, limit: number, windowMs = 60_000): AttemptLimit {
  // Each address's attempts in the window, oldest first; the map in order of last attempt.
  const seen = new Map<string, number[]>();
  return {
    take(address) {
      const now = clock.now().getTime();
      const recent = (seen.get(address) ?? []).filter((at) => at > now - windowMs && at <= now);
      seen.delete(address);
      if (recent.length >= limit) {
        seen.set(address, recent);
        const freed = recent[recent.length - limit] as number;
        return {
          allowed: false,
          retryAfter: Math.max(1, Math.ceil((freed + windowMs - now) / 1000)),
        };
      }
      recent.push(now);
      seen.set(address, recent);
      for (const key of seen.keys()) {
        if (seen.size <= MAX_ADDRESSES) break;
        seen.delete(key);
      }
      return { allowed: true, retryAfter: 0 };
    },
  };
}

/**
 * The client address of a gRPC peer (`203.0.113.7:51234`, `[2001:db8::7]:51234`), without its
 * port, an IPv4 client of a dual-stack socket as IPv4.
 */
export function peerAddress(peer: string): string {
  const host = /^\[(.*)\]:\d+$/.exec(peer)?.[1] ?? /^(.*):\d+$/.exec(peer)?.[1] ?? peer;
  try {
    return ipaddr.process(host).toString();
  } catch {
    return host;
  }
}
