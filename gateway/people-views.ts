/** The JSON shapes of people, memberships and invitations, made from the gRPC messages. */
import type { Context } from 'koa';
import type { Membership, PendingInvitation, Person } from '../gen/spool/v1/accounts.js';
import { invitationView } from '../lib/resource-views.js';
import { rfc3339OrNull } from '../lib/time.js';
import { ownOrigin } from './session-auth.js';
import type { GatewayState } from './state.js';

export { invitationView, memberView } from '../lib/resource-views.js';

type Ctx = Context & { state: GatewayState };

export function personView(person: Person | undefined) {
  if (!person) throw new Error('missing person in response');
  return { id: person.id, email: person.email, display_name: person.displayName };
}

export function orgsView(memberships: readonly Membership[]) {
  return memberships.map((m) => ({ id: m.orgId, name: m.orgName, role: m.role }));
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

/** The invitation link: the token rides in the fragment, which never reaches a server's log. */
export function invitationUrl(ctx: Ctx, publicUrl: string | undefined, token: string): string {
  const base = (publicUrl ?? ownOrigin(ctx)).replace(/\/+$/, '');
  return `${base}/console/invitation#${token}`;
}
