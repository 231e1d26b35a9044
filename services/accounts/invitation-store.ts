/**
 * Invitations: sent by an organization's admins (or the operator) by email, each a link with a
 * token of its own, the newest per email the only one that works; accepting one makes its invitee
 * a member, creating the person when the email is new.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type {
  Invitation,
  Membership,
  PendingInvitation,
  Person,
} from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, forbidden, notFound } from '../../lib/errors.js';
import { listOldestFirst } from '../../lib/paging.js';
import { type Role, roleMessage } from '../../lib/roles.js';
import { membershipsOf, requireActor } from './membership-store.js';
import { announce, requireOpenOrg, sessionsRevoked } from './outbox.js';
import { invitationCreated, invitationDeleted, memberEvent } from './people-events.js';
import {
  INVITATION_SELECT,
  type InvitationRow,
  PENDING,
  PENDING_SELECT,
  PERSON_COLUMNS,
  type PendingRow,
  type PersonRow,
  toInvitation,
  toPending,
  toPerson,
} from './people-rows.js';
import { insertSession } from './session-store.js';

export interface NewInvitation {
  orgId: string;
  email: string;
  role: Role;
  tokenHash: Buffer;
  expiresAt: Date;
  /** The inviting person; undefined for the operator. */
  actorId: string | undefined;
}

/** Who accepts: a person who has an account, or a new one. */
export type Invitee = { existingId: string } | { displayName: string; passwordHash: string };

export interface InvitationStore {
  createInvitation(inv: NewInvitation): Promise<Invitation>;
  /** The invitation with this token hash while it is pending (used, revoked nor expired). */
  validInvitation(hash: Buffer): Promise<Invitation | undefined>;
  /** One invitation of the organization, in whatever state, with who sent it. */
  orgInvitation(
    orgId: string,
    id: string,
  ): Promise<PendingInvitation & { usedAt: Date | undefined; revokedAt: Date | undefined }>;
  /** A page of the organization's pending invitations, oldest first, with who sent each. */
  listInvitations(
    orgId: string,
    actorId: string | undefined,
    limit: number,
    cursor: string,
  ): Promise<{ items: PendingInvitation[]; nextCursor: string }>;
  /**
   * Revokes an invitation, so that its link answers as an unknown one. One no longer pending
   * (revoked, superseded or expired) keeps its first revocation time; one accepted is refused,
   * since its person is a member now.
   */
  revokeInvitation(
    orgId: string,
    id: string,
    actorId: string | undefined,
  ): Promise<{ invitation: Invitation; revokedAt: Date }>;
  /**
   * Uses up the invitation and makes its invitee a member, creating the person when
   * `who` is new (the email is new) and otherwise joining `existingId`; opens a session.
   * Fails with not_found when the invitation was used or expired meanwhile.
   */
  acceptInvitation(
    hash: Buffer,
    who: Invitee,
    sessionHash: Buffer,
  ): Promise<{ person: Person; memberships: Membership[]; sessionId: string }>;
}

/** Refuses an unknown organization, inside the caller's transaction or on the pool. */
async function requireOrg(q: pg.Pool | pg.PoolClient, orgId: string): Promise<void> {
  const org = await q.query('SELECT 1 FROM orgs WHERE id = $1', [orgId]);
  if (org.rowCount === 0) throw notFound('no such organization');
}

/**
 * Withdraws the pending invitations of the email, since only the newest link of an email works;
 * replacing an owner's invitation is revoking it, which only owners may. Answers those withdrawn.
 */
async function supersede(
  tx: pg.PoolClient,
  inv: NewInvitation,
  actorRole: Role,
  now: Date,
): Promise<Invitation[]> {
  const superseded = await tx.query<InvitationRow>(
    `WITH s AS (
       UPDATE invitations SET revoked_at = $3
       WHERE org_id = $1 AND email = $2 AND used_at IS NULL AND revoked_at IS NULL
       RETURNING *)
     SELECT s.id, s.org_id, o.name AS org_name, s.email, s.role, s.expires_at, s.created_at,
       s.used_at, s.revoked_at
     FROM s JOIN orgs o ON o.id = s.org_id`,
    [inv.orgId, inv.email, now],
  );
  if (actorRole !== 'owner' && superseded.rows.some((r) => r.role === 'owner')) {
    throw forbidden(
      `${roleMessage('owner', actorRole)}: ${inv.email} has a pending invitation as an owner`,
    );
  }
  return superseded.rows.map(toInvitation);
}

/** The person accepting: `who`'s existing id, or a person created with the invitation's email. */
async function inviteeId(tx: pg.PoolClient, who: Invitee, email: string, now: Date) {
  if ('existingId' in who) return who.existingId;
  const personId = randomUUID();
  const created = await tx.query(
    `INSERT INTO people (id, email, display_name, password_hash, created_at)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (email) DO NOTHING`,
    [personId, email, who.displayName, who.passwordHash, now],
  );
  if (created.rowCount === 0) {
    throw conflict('an account with this email was created meanwhile: try again');
  }
  return personId;
}

export function createInvitationStore(pool: pg.Pool, clock: Clock): InvitationStore {
  return {
    async createInvitation(inv) {
      return withTx(pool, async (tx) => {
        await requireOpenOrg(tx, inv.orgId);
        const actorRole = await requireActor(tx, inv.orgId, inv.actorId, 'admin');
        if (inv.role === 'owner' && actorRole !== 'owner') {
          throw forbidden(`${roleMessage('owner', actorRole)}: only owners invite owners`);
        }
        const member = await tx.query(
          `SELECT 1 FROM memberships m JOIN people p ON p.id = m.person_id
           WHERE m.org_id = $1 AND p.email = $2`,
          [inv.orgId, inv.email],
        );
        if ((member.rowCount ?? 0) > 0) {
          throw conflict(`${inv.email} is already a member of this organization`, 'email');
        }
        const now = clock.now();
        const replaced = await supersede(tx, inv, actorRole, now);
        const id = randomUUID();
        await tx.query(
          `INSERT INTO invitations
             (id, org_id, token_hash, email, role, invited_by, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [
            id,
            inv.orgId,
            inv.tokenHash,
            inv.email,
            inv.role,
            inv.actorId ?? null,
            now,
            inv.expiresAt,
          ],
        );
        const { rows } = await tx.query<InvitationRow>(`${INVITATION_SELECT} WHERE i.id = $1`, [
          id,
        ]);
        const created = toInvitation(rows[0] as InvitationRow);
        await announce(tx, [
          ...replaced.map((old) => invitationDeleted(old, 'replaced', now)),
          invitationCreated(created, now),
        ]);
        return created;
      });
    },

    async validInvitation(hash) {
      const { rows } = await pool.query<InvitationRow>(
        `SELECT * FROM (${INVITATION_SELECT} WHERE i.token_hash = $1) AS invitation
         WHERE ${PENDING}`,
        [hash, clock.now()],
      );
      return rows[0] ? toInvitation(rows[0]) : undefined;
    },

    async orgInvitation(orgId, id) {
      const { rows } = await pool.query<PendingRow>(
        `${PENDING_SELECT} WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      const row = rows[0];
      if (!row) throw notFound('no such invitation in this organization');
      return {
        ...toPending(row),
        usedAt: row.used_at ?? undefined,
        revokedAt: row.revoked_at ?? undefined,
      };
    },

    async listInvitations(orgId, actorId, limit, cursor) {
      await requireOrg(pool, orgId);
      await requireActor(pool, orgId, actorId, 'admin');
      const { items, nextCursor } = await listOldestFirst<PendingRow>(
        pool,
        {
          select: PENDING_SELECT,
          where: `org_id = $1 AND ${PENDING}`,
          params: [orgId, clock.now()],
        },
        limit,
        cursor,
      );
      return { items: items.map(toPending), nextCursor };
    },

    async revokeInvitation(orgId, id, actorId) {
      return withTx(pool, async (tx) => {
        await requireOrg(tx, orgId);
        const actorRole = await requireActor(tx, orgId, actorId, 'admin');
        const found = await tx.query<InvitationRow>(
          `${INVITATION_SELECT} WHERE i.org_id = $1 AND i.id = $2`,
          [orgId, id],
        );
        const row = found.rows[0];
        if (!row) throw notFound('no such invitation in this organization');
        if (row.role === 'owner' && actorRole !== 'owner') {
          throw forbidden(
            `${roleMessage('owner', actorRole)}: only owners revoke owners' invitations`,
          );
        }
        if (row.used_at) {
          throw conflict(
            `${row.email} accepted this invitation and is a member: remove them instead`,
          );
        }
        const now = clock.now();
        const { rows } = await tx.query<{ revoked_at: Date }>(
          `UPDATE invitations SET revoked_at = COALESCE(revoked_at, $3)
           WHERE org_id = $1 AND id = $2 RETURNING revoked_at`,
          [orgId, id, now],
        );
        const invitation = toInvitation(row);
        // Revoking one no longer pending (revoked, replaced) takes nothing away from a list.
        if (!row.revoked_at) await announce(tx, [invitationDeleted(invitation, 'revoked', now)]);
        return {
          invitation,
          revokedAt: (rows[0] as { revoked_at: Date }).revoked_at,
        };
      });
    },

    async acceptInvitation(hash, who, sessionHash) {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const used = await tx.query<InvitationRow>(
          `WITH u AS (
             UPDATE invitations SET used_at = $2
             WHERE token_hash = $1 AND ${PENDING}
             RETURNING *)
           SELECT u.id, u.org_id, o.name AS org_name, u.email, u.role, u.expires_at, u.created_at,
             u.used_at, u.revoked_at
           FROM u JOIN orgs o ON o.id = u.org_id`,
          [hash, now],
        );
        const inv = used.rows[0];
        if (!inv) throw notFound('this invitation is not valid: ask for a new one');
        const personId = await inviteeId(tx, who, inv.email, now);
        const joined = await tx.query(
          `INSERT INTO memberships (org_id, person_id, role, created_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (org_id, person_id) DO NOTHING`,
          [inv.org_id, personId, inv.role, now],
        );
        const { rows } = await tx.query<PersonRow>(
          `SELECT ${PERSON_COLUMNS} FROM people WHERE id = $1`,
          [personId],
        );
        const person = toPerson(rows[0] as PersonRow);
        await announce(tx, [
          sessionsRevoked(personId),
          invitationDeleted(toInvitation(inv), 'accepted', now),
          ...((joined.rowCount ?? 0) > 0
            ? [
                memberEvent(
                  'member.created',
                  inv.org_id,
                  { person, role: inv.role, joinedAt: now },
                  now,
                ),
              ]
            : []),
        ]);
        const sessionId = await insertSession(tx, clock, personId, sessionHash);
        return {
          person,
          memberships: await membershipsOf(tx, personId),
          sessionId,
        };
      });
    },
  };
}
