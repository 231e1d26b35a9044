/**
 * The accounts service's outbox: what it tells other processes, queued in the transaction of the
 * change that causes it, and the one rule of its tables every change shares (an organization being
 * deleted takes nothing new).
 */

import type pg from 'pg';
import { subjects } from '../../lib/bus.js';
import type { KeyRevokedMessage, SessionRevokedMessage } from '../../lib/contracts/revocations.js';
import type { Queryable } from '../../lib/db.js';
import { notFound, orgDeleting } from '../../lib/errors.js';
import { enqueue, type OutboxMessage } from '../../lib/outbox.js';

export const OUTBOX_TABLE = 'accounts_outbox';

/** The message that makes every gateway forget a key. */
export function keyRevoked(orgId: string, keyId: string): OutboxMessage {
  const message: KeyRevokedMessage = { key_id: keyId, org_id: orgId };
  return { subject: subjects.keyRevoked(orgId), payload: message };
}

/**
 * The message that makes every gateway look a person's sessions up again: one session when
 * `sessionId` is given, else all of them.
 */
export function sessionsRevoked(personId: string, sessionId?: string): OutboxMessage {
  const message: SessionRevokedMessage =
    sessionId === undefined
      ? { person_id: personId }
      : { person_id: personId, session_id: sessionId };
  return { subject: subjects.sessionRevoked(personId), payload: message };
}

/** Queues messages in the caller's transaction. */
export async function announce(tx: pg.PoolClient, messages: OutboxMessage[]): Promise<void> {
  await enqueue(tx, OUTBOX_TABLE, messages);
}

/**
 * Refuses, inside the caller's transaction, a change to an organization that is unknown or whose
 * deletion began: its keys, invitations and memberships could otherwise come back after the
 * deletion's first step ended them.
 */
export async function requireOpenOrg(tx: Queryable, orgId: string): Promise<void> {
  const { rows } = await tx.query<{ deleting_since: Date | null }>(
    'SELECT deleting_since FROM orgs WHERE id = $1',
    [orgId],
  );
  const row = rows[0];
  if (!row) throw notFound('no such organization');
  if (row.deleting_since) throw orgDeleting(orgId);
}
