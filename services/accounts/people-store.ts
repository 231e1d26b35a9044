/**
 * The tables of people: people, memberships, invitations, sessions and failed sign-ins. Queries on
 * an organization's people are scoped by its id; the lookups by hash that authentication needs
 * (the hash is the credential) and by email (sign-in) are the only unscoped ones.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type {
  Invitation,
  Member,
  Membership,
  PendingInvitation,
  Person,
} from '../../gen/spool/v1/accounts.js';
import { subjects } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, forbidden, notFound } from '../../lib/errors.js';
import { enqueue } from '../../lib/outbox.js';
import { listOldestFirst } from '../../lib/paging.js';
import { hasRole, type Role, roleMessage } from '../../lib/roles.js';
import { OUTBOX_TABLE, requireOpenOrg } from './store.js';

interface PersonRow {
  id: string;
  email: string;
  display_name: string;
  password_hash: string;
}

interface InvitationRow {
  id: string;
  org_id: string;
  org_name: string;
  email: string;
  role: string;
  expires_at: Date;
  created_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

/** An invitation with the person who sent it (all null when the operator did). */
interface PendingRow extends InvitationRow {
  inviter_id: string | null;
  inviter_email: string | null;
  inviter_name: string | null;
}

interface SessionRow {
  id: string;
  person_id: string;
  created_at: Date;
  last_seen_at: Date;
  revoked_at: Date | null;
}

/** What other processes hear when sessions must be looked up again. */
export interface SessionRevokedMessage {
  person_id: string;
  /** The one session signed out; absent when every session of the person is affected. */
  session_id?: string;
}

const toPerson = (row: PersonRow): Person => ({
  id: row.id,
  email: row.email,
  displayName: row.display_name,
});

const toInvitation = (row: InvitationRow): Invitation => ({
  id: row.id,
  orgId: row.org_id,
  orgName: row.org_name,
  email: row.email,
  role: row.role,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
});

const INVITATION_SELECT = `SELECT i.id, i.org_id, o.name AS org_name, i.email, i.role, i.expires_at,
  i.created_at, i.used_at, i.revoked_at FROM invitations i JOIN orgs o ON o.id = i.org_id`;

/** Neither used, revoked (or superseded) nor expired at `$2`; what a link needs to work. */
const PENDING = 'used_at IS NULL AND revoked_at IS NULL AND expires_at > $2';

/**
 * Invitations with their inviter, as a derived table: the paging helper orders and filters by
 * bare `created_at` and `id`, which a join would make ambiguous.
 */
const PENDING_SELECT = `SELECT * FROM (
  SELECT i.id, i.org_id, o.name AS org_name, i.email, i.role, i.expires_at, i.created_at, i.used_at,
    i.revoked_at, p.id AS inviter_id, p.email AS inviter_email, p.display_name AS inviter_name
  FROM invitations i JOIN orgs o ON o.id = i.org_id LEFT JOIN people p ON p.id = i.invited_by
) AS invitation`;

const toPending = (row: PendingRow): PendingInvitation => ({
  invitation: toInvitation(row),
  invitedBy:
    row.inviter_id === null
      ? undefined
      : { id: row.inviter_id, email: row.inviter_email ?? '', displayName: row.inviter_name ?? '' },
});

type Q = pg.Pool | pg.PoolClient;

export interface NewInvitation {
  orgId: string;
  email: string;
  role: Role;
  tokenHash: Buffer;
  expiresAt: Date;
  /** The inviting person; undefined for the operator. */
  actorId: string | undefined;
}

export function createPeopleStore(pool: pg.Pool, clock: Clock) {
  async function roleOf(q: Q, orgId: string, personId: string): Promise<string | undefined> {
    const { rows } = await q.query<{ role: string }>(
      'SELECT role FROM memberships WHERE org_id = $1 AND person_id = $2',
      [orgId, personId],
    );
    return rows[0]?.role;
  }

  /**
   * The acting person's role in the organization, which must include `needed`; the operator
   * (no actor) may do anything.
   */
  async function requireActor(
    q: Q,
    orgId: string,
    actorId: string | undefined,
    needed: Role,
  ): Promise<Role> {
    if (actorId === undefined) return 'owner';
    const role = await roleOf(q, orgId, actorId);
    if (role === undefined) throw notFound('no such organization');
    if (!hasRole(role, needed)) throw forbidden(roleMessage(needed, role));
    return role as Role;
  }

  async function membershipsOf(q: Q, personId: string): Promise<Membership[]> {
    const { rows } = await q.query<{ org_id: string; org_name: string; role: string }>(
      `SELECT m.org_id, o.name AS org_name, m.role FROM memberships m
       JOIN orgs o ON o.id = m.org_id WHERE m.person_id = $1 ORDER BY o.name, m.org_id`,
      [personId],
    );
    return rows.map((r) => ({ orgId: r.org_id, orgName: r.org_name, role: r.role }));
  }

  async function insertSession(q: Q, personId: string, hash: Buffer): Promise<string> {
    const id = randomUUID();
    const now = clock.now();
    await q.query(
      `INSERT INTO sessions (id, person_id, credential_hash, created_at, last_seen_at)
       VALUES ($1, $2, $3, $4, $4)`,
      [id, personId, hash, now],
    );
    return id;
  }

  /** Queues the message that makes every gateway look the person's sessions up again. */
  async function announce(q: pg.PoolClient, message: SessionRevokedMessage): Promise<void> {
    await enqueue(q, OUTBOX_TABLE, [
      { subject: subjects.sessionRevoked(message.person_id), payload: message },
    ]);
  }

  async function ownerCount(q: Q, orgId: string): Promise<number> {
    const { rows } = await q.query<{ n: string }>(
      `SELECT count(*) AS n FROM memberships WHERE org_id = $1 AND role = 'owner'`,
      [orgId],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Whether the actor may change the membership of `target` (currently `current`) to `next`
   * (undefined: removal); throws the refusal. The last owner can be neither demoted nor removed.
   */
  async function checkChange(
    tx: pg.PoolClient,
    orgId: string,
    actorId: string | undefined,
    current: string,
    next: Role | undefined,
  ): Promise<void> {
    const actorRole = await requireActor(tx, orgId, actorId, 'admin');
    if ((current === 'owner' || next === 'owner') && actorRole !== 'owner') {
      throw forbidden(`${roleMessage('owner', actorRole)}: only owners change owners`);
    }
    if (current === 'owner' && next !== 'owner' && (await ownerCount(tx, orgId)) <= 1) {
      throw conflict(
        'this is the organization’s last owner: make someone else an owner first',
        'person_id',
      );
    }
  }

  return {
    membershipsOf: (personId: string) => membershipsOf(pool, personId),

    async findPersonByEmail(email: string): Promise<PersonRow | undefined> {
      const { rows } = await pool.query<PersonRow>(
        'SELECT id, email, display_name, password_hash FROM people WHERE email = $1',
        [email],
      );
      return rows[0];
    },

    /** Renames the organization; its members' sessions, which carry the name, are looked up anew. */
    async renameOrg(orgId: string, name: string) {
      return withTx(pool, async (tx) => {
        await requireOpenOrg(tx, orgId);
        const { rows } = await tx.query<{ id: string; name: string; created_at: Date }>(
          'UPDATE orgs SET name = $2 WHERE id = $1 RETURNING id, name, created_at',
          [orgId, name],
        );
        const row = rows[0] as { id: string; name: string; created_at: Date };
        const members = await tx.query<{ person_id: string }>(
          'SELECT person_id FROM memberships WHERE org_id = $1',
          [orgId],
        );
        for (const m of members.rows) await announce(tx, { person_id: m.person_id });
        return { id: row.id, name: row.name, createdAt: row.created_at, deletingSince: undefined };
      });
    },

    async createInvitation(inv: NewInvitation): Promise<Invitation> {
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
        // Only the newest link of an email works, so a resent invitation withdraws the earlier
        // one; replacing an owner's invitation is revoking it, which only owners may.
        const now = clock.now();
        const superseded = await tx.query<{ role: string }>(
          `UPDATE invitations SET revoked_at = $3
           WHERE org_id = $1 AND email = $2 AND used_at IS NULL AND revoked_at IS NULL
           RETURNING role`,
          [inv.orgId, inv.email, now],
        );
        if (actorRole !== 'owner' && superseded.rows.some((r) => r.role === 'owner')) {
          throw forbidden(
            `${roleMessage('owner', actorRole)}: ${inv.email} has a pending invitation as an owner`,
          );
        }
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
        return toInvitation(rows[0] as InvitationRow);
      });
    },

    /** The invitation with this token hash while it is pending (used, revoked nor expired). */
    async validInvitation(q: Q, hash: Buffer): Promise<Invitation | undefined> {
      const { rows } = await q.query<InvitationRow>(
        `SELECT * FROM (${INVITATION_SELECT} WHERE i.token_hash = $1) AS invitation
         WHERE ${PENDING}`,
        [hash, clock.now()],
      );
      return rows[0] ? toInvitation(rows[0]) : undefined;
    },

    pool,

    async orgInvitation(orgId: string, id: string) {
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

    /** A page of the organization's pending invitations, oldest first, with who sent each. */
    async listInvitations(
      orgId: string,
      actorId: string | undefined,
      limit: number,
      cursor: string,
    ): Promise<{ items: PendingInvitation[]; nextCursor: string }> {
      const org = await pool.query('SELECT 1 FROM orgs WHERE id = $1', [orgId]);
      if (org.rowCount === 0) throw notFound('no such organization');
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

    /**
     * Revokes an invitation, so that its link answers as an unknown one. One no longer pending
     * (revoked, superseded or expired) keeps its first revocation time; one accepted is refused,
     * since its person is a member now.
     */
    async revokeInvitation(
      orgId: string,
      id: string,
      actorId: string | undefined,
    ): Promise<{ invitation: Invitation; revokedAt: Date }> {
      return withTx(pool, async (tx) => {
        const org = await tx.query('SELECT 1 FROM orgs WHERE id = $1', [orgId]);
        if (org.rowCount === 0) throw notFound('no such organization');
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
        const { rows } = await tx.query<{ revoked_at: Date }>(
          `UPDATE invitations SET revoked_at = COALESCE(revoked_at, $3)
           WHERE org_id = $1 AND id = $2 RETURNING revoked_at`,
          [orgId, id, clock.now()],
        );
        return {
          invitation: toInvitation(row),
          revokedAt: (rows[0] as { revoked_at: Date }).revoked_at,
        };
      });
    },

    /**
     * Uses up the invitation and makes its invitee a member, creating the person when
     * `newPerson` is given (the email is new) and otherwise joining `existingId`; opens a session.
     * Fails with not_found when the invitation was used or expired meanwhile.
     */
    async acceptInvitation(
      hash: Buffer,
      who: { existingId: string } | { displayName: string; passwordHash: string },
      sessionHash: Buffer,
    ): Promise<{ person: Person; memberships: Membership[]; sessionId: string }> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const used = await tx.query<{ org_id: string; email: string; role: string }>(
          `UPDATE invitations SET used_at = $2
           WHERE token_hash = $1 AND ${PENDING}
           RETURNING org_id, email, role`,
          [hash, now],
        );
        const inv = used.rows[0];
        if (!inv) throw notFound('this invitation is not valid: ask for a new one');
        let personId: string;
        if ('existingId' in who) {
          personId = who.existingId;
        } else {
          personId = randomUUID();
          const created = await tx.query(
            `INSERT INTO people (id, email, display_name, password_hash, created_at)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (email) DO NOTHING`,
            [personId, inv.email, who.displayName, who.passwordHash, now],
          );
          if (created.rowCount === 0) {
            throw conflict('an account with this email was created meanwhile: try again');
          }
        }
        await tx.query(
          `INSERT INTO memberships (org_id, person_id, role, created_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (org_id, person_id) DO NOTHING`,
          [inv.org_id, personId, inv.role, now],
        );
        await announce(tx, { person_id: personId });
        const sessionId = await insertSession(tx, personId, sessionHash);
        const { rows } = await tx.query<PersonRow>(
          'SELECT id, email, display_name, password_hash FROM people WHERE id = $1',
          [personId],
        );
        return {
          person: toPerson(rows[0] as PersonRow),
          memberships: await membershipsOf(tx, personId),
          sessionId,
        };
      });
    },

    createSession: (personId: string, hash: Buffer) => insertSession(pool, personId, hash),

    /**
     * The session with this credential hash and its person, when it is neither revoked nor past
     * its idle or absolute expiry; refreshes `last_seen_at` when it is older than `refreshMs`.
     */
    async authenticateSession(
      hash: Buffer,
      limits: { idleMs: number; absoluteMs: number; refreshMs: number },
    ): Promise<{ session: SessionRow; person: Person; memberships: Membership[] } | undefined> {
      const { rows } = await pool.query<SessionRow & PersonRow>(
        `SELECT s.id, s.person_id, s.created_at, s.last_seen_at, s.revoked_at,
                p.email, p.display_name, p.password_hash
         FROM sessions s JOIN people p ON p.id = s.person_id WHERE s.credential_hash = $1`,
        [hash],
      );
      const row = rows[0];
      const now = clock.now().getTime();
      if (
        !row ||
        row.revoked_at ||
        now - row.created_at.getTime() >= limits.absoluteMs ||
        now - row.last_seen_at.getTime() >= limits.idleMs
      ) {
        return undefined;
      }
      const session: SessionRow = {
        id: row.id,
        person_id: row.person_id,
        created_at: row.created_at,
        last_seen_at: row.last_seen_at,
        revoked_at: null,
      };
      if (now - row.last_seen_at.getTime() >= limits.refreshMs) {
        session.last_seen_at = new Date(now);
        // Not in a transaction: a lost race only leaves a slightly older time.
        await pool.query(
          'UPDATE sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2',
          [row.id, session.last_seen_at],
        );
      }
      return {
        session,
        person: toPerson({ ...row, id: row.person_id }),
        memberships: await membershipsOf(pool, row.person_id),
      };
    },

    /** Revokes the session with this hash (if any) and tells every gateway. */
    async revokeSession(hash: Buffer): Promise<void> {
      await withTx(pool, async (tx) => {
        const { rows } = await tx.query<{ id: string; person_id: string }>(
          `UPDATE sessions SET revoked_at = COALESCE(revoked_at, $2)
           WHERE credential_hash = $1 RETURNING id, person_id`,
          [hash, clock.now()],
        );
        const row = rows[0];
        if (row) await announce(tx, { person_id: row.person_id, session_id: row.id });
      });
    },

    async listMembers(orgId: string): Promise<{ members: Member[]; invitations: Invitation[] }> {
      const members = await pool.query<PersonRow & { role: string; joined_at: Date }>(
        `SELECT p.id, p.email, p.display_name, m.role, m.created_at AS joined_at
         FROM memberships m JOIN people p ON p.id = m.person_id
         WHERE m.org_id = $1 ORDER BY m.created_at, p.id LIMIT 1000`,
        [orgId],
      );
      const invitations = await pool.query<InvitationRow>(
        `${INVITATION_SELECT} WHERE i.org_id = $1 AND i.used_at IS NULL AND i.revoked_at IS NULL
           AND i.expires_at > $2
         ORDER BY i.created_at, i.id LIMIT 1000`,
        [orgId, clock.now()],
      );
      return {
        members: members.rows.map((r) => ({
          person: toPerson(r),
          role: r.role,
          joinedAt: r.joined_at,
        })),
        invitations: invitations.rows.map(toInvitation),
      };
    },

    async changeRole(
      orgId: string,
      personId: string,
      role: Role,
      actorId: string | undefined,
    ): Promise<Member> {
      return withTx(pool, async (tx) => {
        const current = await roleOf(tx, orgId, personId);
        if (current === undefined) throw notFound('no such person in this organization');
        await checkChange(tx, orgId, actorId, current, role);
        const { rows } = await tx.query<PersonRow & { role: string; joined_at: Date }>(
          `WITH changed AS (
             UPDATE memberships SET role = $3 WHERE org_id = $1 AND person_id = $2
             RETURNING person_id, role, created_at)
           SELECT p.id, p.email, p.display_name, c.role, c.created_at AS joined_at
           FROM changed c JOIN people p ON p.id = c.person_id`,
          [orgId, personId, role],
        );
        const row = rows[0] as PersonRow & { role: string; joined_at: Date };
        await announce(tx, { person_id: personId });
        return { person: toPerson(row), role: row.role, joinedAt: row.joined_at };
      });
    },

    async removeMember(orgId: string, personId: string, actorId: string | undefined) {
      await withTx(pool, async (tx) => {
        const current = await roleOf(tx, orgId, personId);
        if (current === undefined) throw notFound('no such person in this organization');
        await checkChange(tx, orgId, actorId, current, undefined);
        await tx.query('DELETE FROM memberships WHERE org_id = $1 AND person_id = $2', [
          orgId,
          personId,
        ]);
        await announce(tx, { person_id: personId });
      });
    },

    /**
     * Counts a sign-in attempt against each subject before its password is checked, so that
     * attempts sent at once cannot all pass a limit that each alone would see unmet: every one
     * counts first, and the one that sees its subject over `limit` is refused. Answers the rows
     * added, which stay as the attempt's failure unless {@link releaseAttempt} takes them back;
     * or, for a refused attempt (which does not count), the seconds until it may try again.
     */
    async reserveAttempt(
      limits: Array<{ subject: string; limit: number }>,
      windowMs: number,
    ): Promise<{ ids: string[] } | { wait: number }> {
      const now = clock.now();
      const since = new Date(now.getTime() - windowMs);
      const ids = limits.map(() => randomUUID());
      await pool.query(
        `INSERT INTO sign_in_failures (id, subject, at)
         SELECT v.id, v.subject, $3 FROM unnest($1::UUID[], $2::TEXT[]) AS v (id, subject)`,
        [ids, limits.map((l) => l.subject), now],
      );
      const counts = await Promise.all(
        limits.map(async ({ subject, limit }) => {
          const { rows } = await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM (SELECT 1 FROM sign_in_failures
               WHERE subject = $1 AND at > $2 LIMIT $3) AS recent`,
            [subject, since, limit + 1],
          );
          return Number(rows[0]?.n ?? 0);
        }),
      );
      if (limits.every((l, i) => (counts[i] ?? 0) <= l.limit)) {
        // Failures older than the window count for nothing any more; each attempt clears a few.
        await pool.query(
          `DELETE FROM sign_in_failures WHERE id IN (
             SELECT id FROM sign_in_failures WHERE at <= $1 ORDER BY at LIMIT 100)`,
          [since],
        );
        return { ids };
      }
      await pool.query('DELETE FROM sign_in_failures WHERE id = ANY($1::UUID[])', [ids]);
      const waits = await Promise.all(
        limits.map(async ({ subject, limit }) => {
          // The limit-th newest failure: once it leaves the window, one more attempt may go.
          const { rows } = await pool.query<{ at: Date }>(
            `SELECT at FROM sign_in_failures WHERE subject = $1 AND at > $2
             ORDER BY at DESC LIMIT $3`,
            [subject, since, limit],
          );
          const oldest = rows.length < limit ? undefined : rows[rows.length - 1];
          return oldest ? Math.ceil((oldest.at.getTime() + windowMs - now.getTime()) / 1000) : 0;
        }),
      );
      // Over the limit with attempts still running, whose rows may be gone by now: a second.
      return { wait: Math.max(1, ...waits) };
    },

    /** Takes back the rows of an attempt that succeeded. */
    async releaseAttempt(ids: string[]): Promise<void> {
      await pool.query('DELETE FROM sign_in_failures WHERE id = ANY($1::UUID[])', [ids]);
    },

    async clearFailures(subject: string): Promise<void> {
      await pool.query('DELETE FROM sign_in_failures WHERE subject = $1', [subject]);
    },
  };
}

export type PeopleStore = ReturnType<typeof createPeopleStore>;
