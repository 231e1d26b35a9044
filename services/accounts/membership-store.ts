/**
 * Memberships: who belongs to which organization with which role, and the rules of changing them
 * (roles are checked here, in the transaction of the change, whatever the gateway checked).
 */
import type pg from 'pg';
import type { Invitation, Member, Membership } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, forbidden, notFound } from '../../lib/errors.js';
import { hasRole, type Role, roleMessage } from '../../lib/roles.js';
import { announce, sessionsRevoked } from './outbox.js';
import { memberEvent } from './people-events.js';
import {
  INVITATION_SELECT,
  type InvitationRow,
  type PersonRow,
  type Q,
  toInvitation,
  toPerson,
} from './people-rows.js';

export async function roleOf(q: Q, orgId: string, personId: string): Promise<string | undefined> {
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
export async function requireActor(
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

/** The person's organizations and roles, by organization name. */
export async function membershipsOf(q: Q, personId: string): Promise<Membership[]> {
  const { rows } = await q.query<{ org_id: string; org_name: string; role: string }>(
    `SELECT m.org_id, o.name AS org_name, m.role FROM memberships m
     JOIN orgs o ON o.id = m.org_id WHERE m.person_id = $1 ORDER BY o.name, m.org_id`,
    [personId],
  );
  return rows.map((r) => ({ orgId: r.org_id, orgName: r.org_name, role: r.role }));
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

/**
 * The membership of `personId`, which must exist, checked for the actor to change to `next`;
 * answers its role now.
 */
async function changeable(
  tx: pg.PoolClient,
  orgId: string,
  personId: string,
  actorId: string | undefined,
  next: Role | undefined,
): Promise<string> {
  const current = await roleOf(tx, orgId, personId);
  if (current === undefined) throw notFound('no such person in this organization');
  await checkChange(tx, orgId, actorId, current, next);
  return current;
}

export interface MembershipStore {
  membershipsOf(personId: string): Promise<Membership[]>;
  /** The organization's members and pending invitations, oldest first (at most 1000 of each). */
  listMembers(orgId: string): Promise<{ members: Member[]; invitations: Invitation[] }>;
  /**
   * Changes a member's role as the actor may; the member's sessions are looked up anew, and
   * `member.updated` sent when the role is another.
   */
  changeRole(
    orgId: string,
    personId: string,
    role: Role,
    actorId: string | undefined,
  ): Promise<Member>;
  /** Removes a member as the actor may, sending `member.deleted`; the member's sessions are looked up anew. */
  removeMember(orgId: string, personId: string, actorId: string | undefined): Promise<void>;
}

export function createMembershipStore(pool: pg.Pool, clock: Clock): MembershipStore {
  return {
    membershipsOf: (personId) => membershipsOf(pool, personId),

    async listMembers(orgId) {
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

    async changeRole(orgId, personId, role, actorId) {
      return withTx(pool, async (tx) => {
        const before = await changeable(tx, orgId, personId, actorId, role);
        const { rows } = await tx.query<PersonRow & { role: string; joined_at: Date }>(
          `WITH changed AS (
             UPDATE memberships SET role = $3 WHERE org_id = $1 AND person_id = $2
             RETURNING person_id, role, created_at)
           SELECT p.id, p.email, p.display_name, c.role, c.created_at AS joined_at
           FROM changed c JOIN people p ON p.id = c.person_id`,
          [orgId, personId, role],
        );
        const row = rows[0] as PersonRow & { role: string; joined_at: Date };
        const member = { person: toPerson(row), role: row.role, joinedAt: row.joined_at };
        await announce(tx, [
          sessionsRevoked(personId),
          ...(before === role ? [] : [memberEvent('member.updated', orgId, member, clock.now())]),
        ]);
        return member;
      });
    },

    async removeMember(orgId, personId, actorId) {
      await withTx(pool, async (tx) => {
        await changeable(tx, orgId, personId, actorId, undefined);
        const { rows } = await tx.query<PersonRow & { role: string; joined_at: Date }>(
          `WITH removed AS (
             DELETE FROM memberships WHERE org_id = $1 AND person_id = $2
             RETURNING person_id, role, created_at)
           SELECT p.id, p.email, p.display_name, r.role, r.created_at AS joined_at
           FROM removed r JOIN people p ON p.id = r.person_id`,
          [orgId, personId],
        );
        const row = rows[0] as PersonRow & { role: string; joined_at: Date };
        const member = { person: toPerson(row), role: row.role, joinedAt: row.joined_at };
        await announce(tx, [
          sessionsRevoked(personId),
          memberEvent('member.deleted', orgId, member, clock.now()),
        ]);
      });
    },
  };
}
