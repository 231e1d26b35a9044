/**
 * The event stream's events of an organization's people (docs/realtime.md): members added, given
 * another role and removed, invitations sent and gone. Each is queued in the transaction of its
 * change, with the member or invitation as the API shows it (never an invitation's token).
 */
import type { Invitation, Member } from '../../gen/spool/v1/accounts.js';
import { eventMessage } from '../../lib/events.js';
import type { OutboxMessage } from '../../lib/outbox.js';
import { invitationView, memberView } from '../../lib/resource-views.js';

/** Why an invitation is gone: withdrawn, replaced by a newer one to its email, or accepted. */
export type InvitationEnd = 'revoked' | 'replaced' | 'accepted';

/** `member.created`, `member.updated` or `member.deleted`: `{member}`. */
export function memberEvent(
  type: 'member.created' | 'member.updated' | 'member.deleted',
  orgId: string,
  member: Member,
  at: Date,
): OutboxMessage {
  return eventMessage(orgId, type, { member: memberView(member) }, at);
}

/** `invitation.created`: `{invitation}`. */
export function invitationCreated(invitation: Invitation, at: Date): OutboxMessage {
  return eventMessage(
    invitation.orgId,
    'invitation.created',
    { invitation: invitationView(invitation) },
    at,
  );
}

/** `invitation.deleted`: `{invitation, reason}`, the invitation as it was. */
export function invitationDeleted(
  invitation: Invitation,
  reason: InvitationEnd,
  at: Date,
): OutboxMessage {
  return eventMessage(
    invitation.orgId,
    'invitation.deleted',
    { invitation: invitationView(invitation), reason },
    at,
  );
}
