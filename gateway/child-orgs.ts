/**
 * Which organization is the parent of another, as the accounts service says, kept briefly: a
 * platform's key acting on its customers' organizations (`/v1/orgs/{child}/…`, DESIGN §5) then
 * costs the accounts service one look-up per organization per `ttlMs`, not one per request. An id
 * that names no child (an unknown organization, a top-level one, a child being deleted) is kept
 * as such too, so that ids sent by the thousand cost one look-up each per `ttlMs`.
 *
 * A child's parent never changes; only its deletion ends what was kept. The gateway that deletes
 * it forgets it at once ({@link ParentLookup.forget}); any other replica stops trusting its entry
 * after `ttlMs`, which is a second by default, as a revoked key stops working everywhere within a
 * second (DESIGN §4). A failure to look up (the accounts service unreachable) is not kept.
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from '../lib/clock.js';
import { SpoolError } from '../lib/errors.js';
import type { AccountsClient } from './clients.js';

export interface ParentLookup {
  /**
   * The id of the parent of `orgId`; empty when it has none that may act on it: a top-level
   * organization, an unknown one, or a child whose deletion began.
   */
  parentOf(orgId: string): Promise<string>;
  /** Forgets what was kept of `orgId` (a child being deleted); lookups under way are not kept. */
  forget(orgId: string): void;
}

export interface ChildOrgCacheOptions {
  /** The parent of `orgId` as the accounts service says (see {@link ParentLookup.parentOf}). */
  load(orgId: string): Promise<string>;
  clock: Clock;
  /** How long an answer is trusted (default 1 s). */
  ttlMs?: number;
  /** Organizations kept; the least recently used go first. */
  maxEntries?: number;
}

export const DEFAULT_CHILD_ORG_TTL_MS = 1_000;
const DEFAULT_ENTRIES = 10_000;

interface Stored {
  parentId: string;
  storedAt: number;
}

export class ChildOrgCache implements ParentLookup {
  readonly #load: ChildOrgCacheOptions['load'];
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #entries: LRUCache<string, Stored>;
  readonly #inflight = new Map<string, Promise<string>>();
  /** Bumped by every {@link forget}; a lookup begun in an older epoch is not kept. */
  #epoch = 0;

  constructor(options: ChildOrgCacheOptions) {
    this.#load = options.load;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? DEFAULT_CHILD_ORG_TTL_MS;
    this.#entries = new LRUCache({ max: options.maxEntries ?? DEFAULT_ENTRIES });
  }

  async parentOf(orgId: string): Promise<string> {
    const now = this.#clock.now().getTime();
    const hit = this.#entries.get(orgId);
    if (hit && now - hit.storedAt < this.#ttlMs) return hit.parentId;
    const pending = this.#inflight.get(orgId);
    if (pending) return pending;
    const epoch = this.#epoch;
    const lookup = this.#load(orgId)
      .then((parentId) => {
        if (epoch === this.#epoch) this.#entries.set(orgId, { parentId, storedAt: now });
        return parentId;
      })
      .finally(() => this.#inflight.delete(orgId));
    this.#inflight.set(orgId, lookup);
    return lookup;
  }

  forget(orgId: string): void {
    this.#epoch++;
    this.#entries.delete(orgId);
    this.#inflight.delete(orgId);
  }
}

/** A cache whose answers come from `GetOrg` of the accounts service. */
export function childOrgCache(
  accounts: Pick<AccountsClient, 'getOrg'>,
  clock: Clock,
  ttlMs?: number,
): ChildOrgCache {
  return new ChildOrgCache({
    clock,
    ...(ttlMs === undefined ? {} : { ttlMs }),
    load: async (orgId) => {
      try {
        const { org } = await accounts.getOrg({ orgId });
        return org && !org.deletingSince ? org.parentId : '';
      } catch (err) {
        if (err instanceof SpoolError && err.code === 'not_found') return '';
        throw err;
      }
    },
  });
}
