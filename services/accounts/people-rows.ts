/**
 * The rows of the people tables (people, invitations, sessions) and their mapping to the service's
 * messages; shared by the stores of memberships, invitations and sessions.
 */
import type pg from 'pg';
import type { Invitation, PendingInvitation, Person } from '../../gen/spool/v1/accounts.js';

/** A pool or a transaction's client: what a query may run on. */
export type Q = pg.Pool | pg.PoolClient;

export interface PersonRow {
  id: string;
  email: string;
  display_name: string;
  password_hash: string;
}

export interface InvitationRow {
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
export interface PendingRow extends InvitationRow {
  inviter_id: string | null;
  inviter_email: string | null;
  inviter_name: string | null;
}

export interface SessionRow {
  id: string;
  person_id: string;
  created_at: Date;
  last_seen_at: Date;
  revoked_at: Date | null;
}

export const PERSON_COLUMNS = 'id, email, display_name, password_hash';

export const toPerson = (row: Pick<PersonRow, 'id' | 'email' | 'display_name'>): Person => ({
  id: row.id,
  email: row.email,
  displayName: row.display_name,
});

export const toInvitation = (row: InvitationRow): Invitation => ({
  id: row.id,
  orgId: row.org_id,
  orgName: row.org_name,
  email: row.email,
  role: row.role,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
});

export const INVITATION_SELECT = `SELECT i.id, i.org_id, o.name AS org_name, i.email, i.role, i.expires_at,
  i.created_at, i.used_at, i.revoked_at FROM invitations i JOIN orgs o ON o.id = i.org_id`;

/** Neither used, revoked (or superseded) nor expired at `$2`; what a link needs to work. */
export const PENDING = 'used_at IS NULL AND revoked_at IS NULL AND expires_at > $2';

/**
 * Invitations with their inviter, as a derived table: the paging helper orders and filters by
 * bare `created_at` and `id`, which a join would make ambiguous.
 */
export const PENDING_SELECT = `SELECT * FROM (
  SELECT i.id, i.org_id, o.name AS org_name, i.email, i.role, i.expires_at, i.created_at, i.used_at,
    i.revoked_at, p.id AS inviter_id, p.email AS inviter_email, p.display_name AS inviter_name
  FROM invitations i JOIN orgs o ON o.id = i.org_id LEFT JOIN people p ON p.id = i.invited_by
) AS invitation`;

export const toPending = (row: PendingRow): PendingInvitation => ({
  invitation: toInvitation(row),
  invitedBy:
    row.inviter_id === null
      ? undefined
      : { id: row.inviter_id, email: row.inviter_email ?? '', displayName: row.inviter_name ?? '' },
});
