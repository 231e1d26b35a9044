/** The JSON shapes of people, memberships and invitations, made from the gRPC messages. */
import type { Context } from 'koa';
import type {
  Invitation,
  Member,
  Membership,
  PendingInvitation,
  Person,
} from '../gen/spool/v1/accounts.js';
import { rfc3339OrNull } from '../lib/time.js';
import { ownOrigin } from './session-auth.js';
import type { GatewayState } from './state.js';

type Ctx = Context & { state: GatewayState };

export function personView(person: Person | undefined) {
  if (!person) throw new Error('missing person in response');
  return { id: person.id, email: person.email, display_name: person.displayName };
}

export function orgsView(memberships: readonly Membership[]) {
  return memberships.map((m) => ({ id: m.orgId, name: m.orgName, role: m.role }));
}

export function invitationView(invitation: Invitation | undefined) {
  if (!invitation) throw new Error('missing invitation in response');
  return {
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    expires_at: rfc3339OrNull(invitation.expiresAt),
  };
}

/**
 * A pending invitation as its organization's admins and the operator see it: who sent it
 * (`invited_by` null for the operator) and when, never its token.
 */
export function pendingInvitationView(pending: PendingInvitation) {
  const by = pending.invitedBy;
  return {
    ...invitationView(pending.invitation),
    created_at: rfc3339OrNull(pending.invitation?.createdAt),
    invited_by: by ? { person_id: by.id, email: by.email, display_name: by.displayName } : null,
  };
}

export function memberView(member: Member | undefined) {
  if (!member?.person) throw new Error('missing member in response');
  return {
    person_id: member.person.id,
    email: member.person.email,
    display_name: member.person.displayName,
    role: member.role,
    joined_at: rfc3339OrNull(member.joinedAt),
  };
}

/** The invitation link: the token rides in the fragment, which never reaches a server's log. */
export function invitationUrl(ctx: Ctx, publicUrl: string | undefined, token: string): string {
  const base = (publicUrl ?? ownOrigin(ctx)).replace(/\/+$/, '');
  return `${base}/console/invitation#${token}`;
}
