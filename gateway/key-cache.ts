/**
 * The gateway's cache of API keys (a {@link CredentialCache}): the accounts service publishes each
 * revocation (through its outbox) on `accounts.<org>.key.revoked`, and every replica evicts the
 * key when it hears of it. A refused key is remembered as a key is, so made-up keys sent by the
 * thousand cost the accounts service one look-up each per `ttlMs`.
 */
import type { ApiKey } from '../gen/spool/v1/accounts.js';
import { type NatsConnection, subjects } from '../lib/bus.js';
import type { KeyRevokedMessage } from '../lib/contracts/revocations.js';
import type { Logger } from '../lib/logger.js';
import {
  CredentialCache,
  type CredentialCacheOptions,
  followRevocationSubject,
} from './credential-cache.js';
import type { KeyUses } from './key-uses.js';

export interface CachedKey {
  key: ApiKey;
  orgName: string;
}

export interface KeyCacheOptions extends CredentialCacheOptions<CachedKey> {
  /** Where each request's use of its key is noted, for the key's `last_used_at`. */
  uses?: KeyUses;
}

export class KeyCache extends CredentialCache<CachedKey> {
  /** Notes each use of a key that let a request in; absent, nothing is noted. */
  readonly uses: KeyUses | undefined;

  constructor(options: KeyCacheOptions) {
    super(options);
    this.uses = options.uses;
  }

  /** Forgets a key wherever it is cached. */
  evictKey(keyId: string): void {
    this.evictWhere(({ key }) => key.id === keyId);
  }

  /** Forgets every key of an organization (one being deleted). */
  evictOrg(orgId: string): void {
    this.evictWhere(({ key }) => key.orgId === orgId);
  }
}

/**
 * Keeps a key cache in step with revocations heard on the bus, and tells `revoked` after each
 * (the event streams then end those the key had opened). Returns a function that stops listening.
 */
export function followRevocations(
  nc: NatsConnection,
  cache: KeyCache,
  logger: Logger,
  revoked: () => void = () => {},
): () => void {
  return followRevocationSubject<KeyRevokedMessage>(
    nc,
    {
      subject: subjects.anyKeyRevoked,
      kind: 'key',
      evict: (m) => cache.evictKey(m.key_id),
      clear: () => cache.clear(),
    },
    logger,
    revoked,
  );
}
