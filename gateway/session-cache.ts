/**
 * The gateway's cache of signed-in sessions (a {@link CredentialCache}): sign-out must reach every
 * replica within a second, so the accounts service announces it (through its outbox) on
 * `accounts.<person>.session.revoked` and every replica evicts the session; the same message
 * without a session id (a membership changed) evicts every session of the person. A session is
 * also dropped once past its idle or absolute expiry by the clock, and a refused cookie is
 * remembered as a refused key is, so forged cookies sent by the thousand cost the accounts service
 * one look-up each per `ttlMs`.
 */
import { type NatsConnection, subjects } from '../lib/bus.js';
import type { SessionRevokedMessage } from '../lib/contracts/revocations.js';
import type { Logger } from '../lib/logger.js';
import {
  CredentialCache,
  type CredentialCacheOptions,
  followRevocationSubject,
} from './credential-cache.js';

export interface CachedSession {
  sessionId: string;
  person: { id: string; email: string; displayName: string };
  memberships: { orgId: string; orgName: string; role: string }[];
  createdAt: Date;
  lastSeenAt: Date;
}

export interface SessionCacheOptions
  extends Omit<CredentialCacheOptions<CachedSession>, 'current'> {
  /** The session expiries the accounts service applies (12 hours idle, 7 days in all). */
  idleMs?: number;
  absoluteMs?: number;
}

export class SessionCache extends CredentialCache<CachedSession> {
  constructor(options: SessionCacheOptions) {
    const idleMs = options.idleMs ?? 12 * 60 * 60 * 1000;
    const absoluteMs = options.absoluteMs ?? 7 * 24 * 60 * 60 * 1000;
    super({
      ...options,
      current: (s, now) =>
        now - s.createdAt.getTime() < absoluteMs && now - s.lastSeenAt.getTime() < idleMs,
    });
  }

  /** Forgets one session, or every session of a person when `sessionId` is undefined. */
  evict(personId: string, sessionId?: string): void {
    this.evictWhere((s) =>
      sessionId === undefined ? s.person.id === personId : s.sessionId === sessionId,
    );
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
  return followRevocationSubject<SessionRevokedMessage>(
    nc,
    {
      subject: subjects.anySessionRevoked,
      kind: 'session',
      evict: (m) => cache.evict(m.person_id, m.session_id),
      clear: () => cache.clear(),
    },
    logger,
    revoked,
  );
}
