/**
 * The gateway's cache of credentials (API keys, signed-in sessions), so that a request does not
 * cost a call to the accounts service. A credential is looked up by the SHA-256 of what was
 * presented; what the accounts service answers is kept for `ttlMs`, and so is a refusal
 * (`unauthorized`: unknown, revoked, expired), so that made-up credentials sent by the thousand
 * cost the accounts service and the database one look-up each per `ttlMs`, not one per request.
 * Nothing turns a refused credential into a valid one: a new key or session is a new random
 * credential. A failure to look up (the accounts service unreachable) is not kept.
 *
 * Revocation must reach every gateway replica within a second (DESIGN §4): the accounts service
 * publishes each (through its outbox), and {@link followRevocationSubject} evicts what it names.
 * The whole cache is dropped whenever the NATS connection was interrupted, since a revocation may
 * have been missed.
 */
import { LRUCache } from 'lru-cache';
import { type NatsConnection, onConnectionLost } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import { SpoolError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';

export interface CredentialCacheOptions<T> {
  /** Looks a credential up by its SHA-256; rejects with `unauthorized` when it is not valid. */
  load(hash: Buffer): Promise<T>;
  clock: Clock;
  /** How long an answer, accepted or refused, is trusted (default 30 s). */
  ttlMs?: number;
  /** Entries kept of each kind, accepted and refused; the least recently used go first. */
  maxEntries?: number;
  /** Whether a kept value is still good at `now` by its own rules (a session's expiry). */
  current?(value: T, now: number): boolean;
}

interface Stored<V> {
  value: V;
  storedAt: number;
}

export const DEFAULT_CREDENTIAL_TTL_MS = 30_000;
export const DEFAULT_CREDENTIAL_ENTRIES = 10_000;

export class CredentialCache<T extends object> {
  readonly #load: CredentialCacheOptions<T>['load'];
  readonly #current: CredentialCacheOptions<T>['current'];
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #entries: LRUCache<string, Stored<T>>;
  /** Refused credentials by hash, with when they were refused. */
  readonly #refused: LRUCache<string, Stored<SpoolError>>;
  readonly #inflight = new Map<string, Promise<T>>();
  /** Bumped by every invalidation; a lookup begun in an older epoch is not cached. */
  #epoch = 0;

  constructor(options: CredentialCacheOptions<T>) {
    this.#load = options.load;
    this.#current = options.current;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? DEFAULT_CREDENTIAL_TTL_MS;
    const max = options.maxEntries ?? DEFAULT_CREDENTIAL_ENTRIES;
    this.#entries = new LRUCache({ max });
    this.#refused = new LRUCache({ max });
  }

  /** The value of the credential with this hash; throws the refusal when it is not valid. */
  async get(hash: Buffer): Promise<T> {
    const id = hash.toString('hex');
    const now = this.#clock.now().getTime();
    const hit = this.#fresh(this.#entries, id, now);
    if (hit && (this.#current?.(hit.value, now) ?? true)) return hit.value;
    if (hit) this.#entries.delete(id);
    const refused = this.#fresh(this.#refused, id, now);
    if (refused) throw refused.value;
    const pending = this.#inflight.get(id);
    if (pending) return pending;
    const epoch = this.#epoch;
    const lookup = this.#load(hash)
      .then(
        (value) => {
          if (epoch === this.#epoch) this.#entries.set(id, { value, storedAt: now });
          return value;
        },
        (err: unknown) => {
          if (err instanceof SpoolError && err.code === 'unauthorized') {
            this.#refused.set(id, { value: err, storedAt: now });
          }
          throw err;
        },
      )
      .finally(() => this.#inflight.delete(id));
    this.#inflight.set(id, lookup);
    return lookup;
  }

  /** Forgets every accepted credential whose value `matches`; lookups under way are not kept. */
  evictWhere(matches: (value: T) => boolean): void {
    this.#epoch++;
    // Collected first: the cache's order is not to be changed while it is walked.
    const gone = [...this.#entries.entries()].filter(([, entry]) => matches(entry.value));
    for (const [id] of gone) this.#entries.delete(id);
  }

  /** Forgets every accepted credential (refusals stay: none of them can have become valid). */
  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  /** Accepted credentials held. */
  get size(): number {
    return this.#entries.size;
  }

  #fresh<V>(map: LRUCache<string, Stored<V>>, id: string, now: number): Stored<V> | undefined {
    const entry = map.get(id);
    if (entry === undefined) return undefined;
    if (now - entry.storedAt < this.#ttlMs) return entry;
    map.delete(id);
    return undefined;
  }
}

/** What a cache follows on the bus: revocations of one kind of credential. */
export interface RevocationFeed<M> {
  /** The wildcard subject the revocations are published on. */
  subject: string;
  /** What the cache is called in the log (`key`, `session`). */
  kind: string;
  /** Evicts what a message names; a message that cannot be read clears the whole cache. */
  evict(message: M): void;
  /** Drops the whole cache. */
  clear(): void;
}

/**
 * Keeps a cache in step with the revocations heard on `feed.subject`, and tells `revoked` after
 * each (the event streams then end those the credential had opened). Returns a function that stops
 * listening.
 */
export function followRevocationSubject<M>(
  nc: NatsConnection,
  feed: RevocationFeed<M>,
  logger: Logger,
  revoked: () => void = () => {},
): () => void {
  const sub = nc.subscribe(feed.subject, {
    callback: (err, msg) => {
      if (err) {
        logger.warn({ err }, `revocation subscription error; clearing the ${feed.kind} cache`);
        feed.clear();
        return;
      }
      try {
        feed.evict(msg.json<M>());
      } catch {
        feed.clear();
      }
      revoked();
    },
  });
  const stopWatching = onConnectionLost(nc, () => feed.clear());
  return () => {
    stopWatching();
    sub.unsubscribe();
  };
}
