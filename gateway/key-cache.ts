/**
 * The gateway's cache of API keys, so that a request does not cost a call to the accounts service.
 * Revocation must reach every gateway replica within a second (DESIGN §4): the accounts service
 * publishes each revocation (through its outbox) on `accounts.<org>.key.revoked`, and every replica
 * evicts the key when it hears of it. Entries also expire after `ttlMs`, and the whole cache is
 * dropped whenever the NATS connection was interrupted, since a revocation may have been missed.
 *
 * A credential the accounts service refused (unknown, revoked, expired) is remembered for as long,
 * so that made-up keys sent by the thousand cost the accounts service and the database one look-up
 * each per `ttlMs`, not one per request. Nothing turns a refused key into a valid one: a new key
 * is a new random credential.
 */
import type { ApiKey } from '../gen/spool/v1/accounts.js';
import { type NatsConnection, onConnectionLost, subjects } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import { SpoolError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { KeyUses } from './key-uses.js';

export interface CachedKey {
  key: ApiKey;
  orgName: string;
}

interface Entry {
  value: CachedKey;
  storedAt: number;
}

export interface KeyCacheOptions {
  /** Looks a key up by the hex SHA-256 of the presented credential. */
  load(hash: Buffer): Promise<CachedKey>;
  /** Where each request's use of its key is noted, for the key's `last_used_at`. */
  uses?: KeyUses;
  clock: Clock;
  ttlMs?: number;
  maxEntries?: number;
}

export class KeyCache {
  /** Notes each use of a key that let a request in; absent, nothing is noted. */
  readonly uses: KeyUses | undefined;
  readonly #load: KeyCacheOptions['load'];
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, Entry>();
  /** Refused credentials by hash, with when they were refused. */
  readonly #refused = new Map<string, { error: SpoolError; storedAt: number }>();
  readonly #inflight = new Map<string, Promise<CachedKey>>();
  /** Bumped by every invalidation; a lookup begun in an older epoch is not cached. */
  #epoch = 0;

  constructor(options: KeyCacheOptions) {
    this.#load = options.load;
    this.uses = options.uses;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  async get(hash: Buffer): Promise<CachedKey> {
    const id = hash.toString('hex');
    const now = this.#clock.now().getTime();
    const hit = this.#entries.get(id);
    if (hit && now - hit.storedAt < this.#ttlMs) return hit.value;
    if (hit) this.#entries.delete(id);
    const refused = this.#refused.get(id);
    if (refused && now - refused.storedAt < this.#ttlMs) throw refused.error;
    if (refused) this.#refused.delete(id);
    const pending = this.#inflight.get(id);
    if (pending) return pending;
    const epoch = this.#epoch;
    const lookup = this.#load(hash)
      .then(
        (value) => {
          if (epoch === this.#epoch) this.#store(this.#entries, id, { value, storedAt: now });
          return value;
        },
        (err: unknown) => {
          if (err instanceof SpoolError && err.code === 'unauthorized') {
            this.#store(this.#refused, id, { error: err, storedAt: now });
          }
          throw err;
        },
      )
      .finally(() => this.#inflight.delete(id));
    this.#inflight.set(id, lookup);
    return lookup;
  }

  /** Forgets a key wherever it is cached. */
  evictKey(keyId: string): void {
    this.#evictWhere((key) => key.id === keyId);
  }

  /** Forgets every key of an organization (one being deleted). */
  evictOrg(orgId: string): void {
    this.#evictWhere((key) => key.orgId === orgId);
  }

  #evictWhere(matches: (key: ApiKey) => boolean): void {
    this.#epoch++;
    for (const [id, entry] of this.#entries) {
      if (matches(entry.value.key)) this.#entries.delete(id);
    }
  }

  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  #store<T>(map: Map<string, T>, id: string, entry: T): void {
    if (map.size >= this.#maxEntries) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = map.keys().next();
      if (!oldest.done) map.delete(oldest.value);
    }
    map.set(id, entry);
  }
}

/**
 * Keeps a cache in step with revocations heard on the bus, and tells `revoked` after each (the
 * event streams then end those the key had opened). Returns a function that stops listening.
 */
export function followRevocations(
  nc: NatsConnection,
  cache: KeyCache,
  logger: Logger,
  revoked: () => void = () => {},
): () => void {
  const sub = nc.subscribe(subjects.anyKeyRevoked, {
    callback: (err, msg) => {
      if (err) {
        logger.warn({ err }, 'revocation subscription error; clearing key cache');
        cache.clear();
        return;
      }
      try {
        const { key_id } = msg.json<{ key_id: string }>();
        cache.evictKey(key_id);
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
