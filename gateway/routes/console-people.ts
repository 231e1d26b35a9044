/**
 * The console's people of an organization (docs/console-api.md): members and their roles, and the
 * invitations sent to new ones. Each change is checked again by the accounts service.
 */
import { body } from '../body.js';
import {
  invitationUrl,
  invitationView,
  memberView,
  pendingInvitationView,
} from '../people-views.js';
import { rejectUnknownParams } from '../query.js';
import { ChangeRoleBody, InviteBody } from './admin.js';
import type { ConsoleKit } from './console-kit.js';

/** An organization's people and invitations, as its admins manage them. */
export function peopleRoutes(kit: ConsoleKit): void {
  const { router, deps, signedIn, role, orgOf, actorOf } = kit;
  const { accounts } = deps.backends;

  router.get('/orgs/:org/people', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const res = await accounts.listMembers({ orgId: orgOf(ctx) });
    ctx.body = {
      items: res.members.map(memberView),
      invitations: res.invitations.map(invitationView),
    };
  });

  router.post('/orgs/:org/invitations', signedIn, role('admin'), async (ctx) => {
    const req = await body(ctx, InviteBody, deps.bodyLimit);
    const { invitation, token } = await accounts.createInvitation({
      orgId: orgOf(ctx),
      email: req.email,
      role: req.role,
      actorPersonId: actorOf(ctx),
    });
    ctx.status = 201;
    ctx.body = {
      invitation: invitationView(invitation),
      url: invitationUrl(ctx, deps.publicUrl, token),
    };
  });

  // Pending invitations with who sent them: for those who may invite, as `people` shows viewers
  // only the email and role of each.
  router.get('/orgs/:org/invitations', signedIn, role('admin'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const items = [];
    let cursor = '';
    do {
      const res = await accounts.listInvitations({
        orgId: orgOf(ctx),
        actorPersonId: actorOf(ctx),
        limit: 200,
        cursor,
      });
      items.push(...res.items.map(pendingInvitationView));
      cursor = res.nextCursor;
    } while (cursor !== '' && items.length < 10_000);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { items };
  });

  router.delete('/orgs/:org/invitations/:id', signedIn, role('admin'), async (ctx) => {
    await accounts.revokeInvitation({
      orgId: orgOf(ctx),
      invitationId: ctx.params.id ?? '',
      actorPersonId: actorOf(ctx),
    });
    ctx.status = 204;
  });

  router.patch('/orgs/:org/people/:person_id', signedIn, role('admin'), async (ctx) => {
    const req = await body(ctx, ChangeRoleBody, deps.bodyLimit);
    const { member } = await accounts.changeRole({
      orgId: orgOf(ctx),
      personId: ctx.params.person_id ?? '',
      role: req.role,
      actorPersonId: actorOf(ctx),
    });
    // This replica forgets the person's sessions now; the others when the bus tells them.
    deps.sessions.cache.evict(ctx.params.person_id ?? '');
    ctx.body = { member: memberView(member) };
  });

  router.delete('/orgs/:org/people/:person_id', signedIn, role('admin'), async (ctx) => {
    await accounts.removeMember({
      orgId: orgOf(ctx),
      personId: ctx.params.person_id ?? '',
      actorPersonId: actorOf(ctx),
    });
    deps.sessions.cache.evict(ctx.params.person_id ?? '');
    ctx.status = 204;
  });
}
