/**
 * The gateway's cache of signed-in sessions, so that a console request does not cost a call to the
 * accounts service. Like the key cache (key-cache.ts): sign-out must reach every replica within a
 * second, so the accounts service announces it (through its outbox) on
 * `accounts.<person>.session.revoked` and every replica evicts the session; the same message
 * without a session id (a membership changed) evicts every session of the person. Entries also
 * expire after `ttlMs`, are dropped once past their idle or absolute expiry by the clock, and the
 * whole cache is dropped whenever the NATS connection was interrupted.
 */
import { type NatsConnection, onConnectionLost, subjects } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

export interface CachedSession {
  sessionId: string;
  person: { id: string; email: string; displayName: string };
  memberships: { orgId: string; orgName: string; role: string }[];
  createdAt: Date;
  lastSeenAt: Date;
}

interface Entry {
  value: CachedSession;
  storedAt: number;
}

export interface SessionCacheOptions {
  /** Looks a session up by the SHA-256 of its credential; rejects when it is not valid. */
  load(hash: Buffer): Promise<CachedSession>;
  clock: Clock;
  ttlMs?: number;
  maxEntries?: number;
  /** The session expiries the accounts service applies (12 hours idle, 7 days in all). */
  idleMs?: number;
  absoluteMs?: number;
}

export class SessionCache {
  readonly #load: SessionCacheOptions['load'];
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #idleMs: number;
  readonly #absoluteMs: number;
  readonly #entries = new Map<string, Entry>();
  readonly #inflight = new Map<string, Promise<CachedSession>>();
  /** Bumped by every invalidation; a lookup begun in an older epoch is not cached. */
  #epoch = 0;

  constructor(options: SessionCacheOptions) {
    this.#load = options.load;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#idleMs = options.idleMs ?? 12 * 60 * 60 * 1000;
    this.#absoluteMs = options.absoluteMs ?? 7 * 24 * 60 * 60 * 1000;
  }

  async get(hash: Buffer): Promise<CachedSession> {
    const id = hash.toString('hex');
    const now = this.#clock.now().getTime();
    const hit = this.#entries.get(id);
    if (hit && now - hit.storedAt < this.#ttlMs && this.#current(hit.value, now)) return hit.value;
    if (hit) this.#entries.delete(id);
    const pending = this.#inflight.get(id);
    if (pending) return pending;
    const epoch = this.#epoch;
    const lookup = this.#load(hash)
      .then((value) => {
        if (epoch === this.#epoch) this.#store(id, value, now);
        return value;
      })
      .finally(() => this.#inflight.delete(id));
    this.#inflight.set(id, lookup);
    return lookup;
  }

  /** Forgets one session, or every session of a person when `sessionId` is undefined. */
  evict(personId: string, sessionId?: string): void {
    this.#epoch++;
    for (const [id, entry] of this.#entries) {
      const s = entry.value;
      if (sessionId === undefined ? s.person.id === personId : s.sessionId === sessionId) {
        this.#entries.delete(id);
      }
    }
  }

  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  #current(s: CachedSession, now: number): boolean {
    return (
      now - s.createdAt.getTime() < this.#absoluteMs && now - s.lastSeenAt.getTime() < this.#idleMs
    );
  }

  #store(id: string, value: CachedSession, now: number): void {
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(id, { value, storedAt: now });
  }
}

/**
 * Keeps a session cache in step with sign-outs and membership changes heard on the bus, and tells
 * `revoked` after each (the event streams then end those the session may no longer hold open).
 * Returns a function that stops.
 */
export function followSessionRevocations(
  nc: NatsConnection,
  cache: SessionCache,
  logger: Logger,
  revoked: () => void = () => {},
): () => void {
  const sub = nc.subscribe(subjects.anySessionRevoked, {
    callback: (err, msg) => {
      if (err) {
        logger.warn({ err }, 'session revocation subscription error; clearing session cache');
        cache.clear();
        return;
      }
      try {
        const m = msg.json<{ person_id: string; session_id?: string }>();
        cache.evict(m.person_id, m.session_id);
      } catch {
        cache.clear();
      }
      revoked();
    },
  });
  const stopWatching = onConnectionLost(nc, () => cache.clear());
  return () => {
    stopWatching();
    sub.unsubscribe();
  };
}
