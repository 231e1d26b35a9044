/**
 * The console's way in (docs/console-api.md): sign-in, sign-out and the session, and an
 * invitation's link, read and accepted, which signs its invitee in.
 */
import { Type } from '@sinclair/typebox';
import type { Membership, Person } from '../../gen/spool/v1/accounts.js';
import { credentialKind, hashCredential } from '../../lib/credentials.js';
import { notFound, SpoolError } from '../../lib/errors.js';
import { body } from '../body.js';
import { invitationView, orgsView, personView } from '../people-views.js';
import { checkOrigin, clearSessionCookie, csrfToken, setSessionCookie } from '../session-auth.js';
import type { ConsoleKit, Ctx } from './console-kit.js';

export const SignInBody = Type.Object(
  {
    email: Type.String({ maxLength: 254, description: 'an email address' }),
    password: Type.String({ maxLength: 200, description: 'at most 200 characters' }),
  },
  { additionalProperties: false },
);

export const AcceptBody = Type.Object(
  {
    display_name: Type.Optional(
      Type.String({ maxLength: 200, description: 'a name of 1 to 200 characters' }),
    ),
    password: Type.String({ maxLength: 200, description: '10 to 200 characters' }),
  },
  { additionalProperties: false },
);

/** The hash of an invitation token in the path; anything not shaped like one is not valid. */
function invitationHash(token: string): Buffer {
  if (credentialKind(token) !== 'invitation') {
    throw notFound(
      'this invitation is not valid (unknown, used, withdrawn or expired): ask for a new one',
    );
  }
  return hashCredential(token);
}

/** Sign-in and sign-out, the session, and an invitation's link (read and accepted). */
export function signInRoutes(kit: ConsoleKit): void {
  const { router, deps, signedIn } = kit;
  const { accounts } = deps.backends;

  function signedInAnswer(
    ctx: Ctx,
    res: { person?: Person; memberships: Membership[]; session: string },
  ) {
    setSessionCookie(ctx, deps.sessions, res.session);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      person: personView(res.person),
      orgs: orgsView(res.memberships),
      csrf_token: csrfToken(res.session),
    };
  }

  router.post('/sign-in', async (ctx) => {
    checkOrigin(ctx, deps.sessions);
    const req = await body(ctx, SignInBody, deps.bodyLimit);
    const res = await accounts.signIn({
      email: req.email,
      password: req.password,
      clientIp: ctx.ip,
    });
    signedInAnswer(ctx, res);
  });

  router.post('/sign-out', signedIn, async (ctx) => {
    const session = ctx.state.session;
    if (session) {
      await accounts.signOut({ sessionHash: session.credentialHash });
      deps.sessions.cache.evict(session.personId, session.id);
    }
    clearSessionCookie(ctx, deps.sessions);
    ctx.status = 204;
  });

  router.get('/session', signedIn, async (ctx) => {
    const session = ctx.state.session;
    if (!session) throw new SpoolError('internal', 'no session on a signed-in route');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      person: { id: session.personId, email: session.email, display_name: session.displayName },
      orgs: session.memberships.map((m) => ({ id: m.orgId, name: m.orgName, role: m.role })),
      csrf_token: session.csrfToken,
    };
  });

  router.get('/invitations/:token', async (ctx) => {
    const { invitation } = await accounts.getInvitation({
      tokenHash: invitationHash(ctx.params.token ?? ''),
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      invitation: {
        ...invitationView(invitation),
        org: { id: invitation?.orgId ?? '', name: invitation?.orgName ?? '' },
      },
    };
  });

  router.post('/invitations/:token/accept', async (ctx) => {
    checkOrigin(ctx, deps.sessions);
    const tokenHash = invitationHash(ctx.params.token ?? '');
    const req = await body(ctx, AcceptBody, deps.bodyLimit);
    const res = await accounts.acceptInvitation({
      tokenHash,
      displayName: req.display_name ?? '',
      password: req.password,
      clientIp: ctx.ip,
    });
    signedInAnswer(ctx, res);
  });
}
