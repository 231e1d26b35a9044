/**
 * The console's own HTTP endpoints under `/console/v1` (docs/console-api.md): sign-in and sign-out,
 * the session, invitations, people, keys, stations, the overview and the organization's settings.
 * Everything but sign-in and invitations needs a signed-in session (the `spool_session` cookie);
 * state-changing requests also need the CSRF token, and each organization's route the role the
 * table of docs/console-api.md gives.
 */
import { Router } from '@koa/router';
import { Type } from '@sinclair/typebox';
import type { Context, Middleware } from 'koa';
import type { Membership, Person } from '../../gen/spool/v1/accounts.js';
import { credentialKind, hashCredential } from '../../lib/credentials.js';
import { invalid, notFound, SpoolError } from '../../lib/errors.js';
import { hasRole, type Role, roleMessage } from '../../lib/roles.js';
import { parseRfc3339, rfc3339 } from '../../lib/time.js';
import { body, changes } from '../body.js';
import type { Backends } from '../clients.js';
import type { KeyCache } from '../key-cache.js';
import {
  invitationUrl,
  invitationView,
  memberView,
  orgsView,
  pendingInvitationView,
  personView,
} from '../people-views.js';
import { deletePrinter } from '../printer-deletion.js';
import { rejectUnknownParams } from '../query.js';
import {
  authenticateSession,
  checkOrigin,
  clearSessionCookie,
  csrfToken,
  roleIn,
  type SessionOptions,
  setSessionCookie,
} from '../session-auth.js';
import type { GatewayState } from '../state.js';
import { keyView, stationView } from '../views.js';
import {
  ChangeRoleBody,
  CreateKeyBody,
  CreateStationBody,
  InviteBody,
  stationLocation,
} from './admin.js';

type Ctx = Context & { state: GatewayState };

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

const OrgSettingsBody = Type.Object(
  {
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'a name of 1 to 200 characters' }),
    ),
    job_document_retention_days: Type.Optional(Type.Integer()),
    upload_retention_days: Type.Optional(Type.Integer()),
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

export interface ConsoleDeps {
  backends: Backends;
  /** This gateway's API keys: a key revoked through it is forgotten at once, here. */
  keys: KeyCache;
  sessions: SessionOptions;
  /** The rate limit of a signed-in session's requests (KEY_RATE_LIMIT a minute, per replica). */
  sessionLimit: Middleware<GatewayState>;
  bodyLimit: number;
  /** The base of links the gateway hands out (PUBLIC_URL); else the request's origin. */
  publicUrl?: string | undefined;
}

export function consoleRouter(deps: ConsoleDeps): Router<GatewayState> {
  const { accounts, jobs, stations } = deps.backends;
  const router = new Router<GatewayState>({ prefix: '/console/v1' });

  const signedIn: Middleware<GatewayState> = async (ctx, next) => {
    await authenticateSession(ctx, deps.sessions);
    await deps.sessionLimit(ctx, next);
  };

  /** The person must be a member of the path's organization with at least `needed`. */
  const role =
    (needed: Role): Middleware<GatewayState> =>
    async (ctx, next) => {
      const session = ctx.state.session;
      if (!session) throw new SpoolError('internal', 'no session on a signed-in route');
      const orgId = (ctx as unknown as { params: Record<string, string> }).params.org ?? '';
      const held = roleIn(session, orgId);
      session.role = held;
      if (!hasRole(held, needed)) throw new SpoolError('forbidden', roleMessage(needed, held));
      await next();
    };

  const orgOf = (ctx: Ctx) =>
    (ctx as unknown as { params: Record<string, string> }).params.org ?? '';
  const actorOf = (ctx: Ctx) => ctx.state.session?.personId ?? '';

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

  router.get('/orgs/:org/keys', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const items = [];
    let cursor = '';
    do {
      const res = await accounts.listApiKeys({ orgId: orgOf(ctx), limit: 200, cursor });
      items.push(...res.items.map(keyView));
      cursor = res.nextCursor;
    } while (cursor !== '' && items.length < 10_000);
    ctx.body = { items };
  });

  router.post('/orgs/:org/keys', signedIn, role('developer'), async (ctx) => {
    const req = await body(ctx, CreateKeyBody, deps.bodyLimit);
    let expiresAt: Date | undefined;
    if (typeof req.expires_at === 'string') {
      expiresAt = parseRfc3339(req.expires_at);
      if (!expiresAt) throw invalid('expires_at must be an RFC 3339 time', 'expires_at');
    }
    const { key, secret } = await accounts.createApiKey({
      orgId: orgOf(ctx),
      live: req.mode === 'live',
      scopes: req.scopes,
      expiresAt,
      allowedIps: req.allowed_ips ?? [],
      name: req.name ?? '',
    });
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { key: keyView(key), secret };
  });

  router.delete('/orgs/:org/keys/:id', signedIn, role('developer'), async (ctx) => {
    await accounts.revokeApiKey({ orgId: orgOf(ctx), keyId: ctx.params.id ?? '' });
    // Other replicas hear of it on the bus within a second; a request to this one, next, is
    // refused already.
    deps.keys.evictKey(ctx.params.id ?? '');
    ctx.status = 204;
  });

  async function allStations(orgId: string) {
    const items = [];
    let cursor = '';
    do {
      const res = await stations.listStations({ orgId, limit: 200, cursor });
      items.push(...res.items);
      cursor = res.nextCursor;
    } while (cursor !== '' && items.length < 10_000);
    return items;
  }

  router.get('/orgs/:org/stations', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    ctx.body = { items: (await allStations(orgOf(ctx))).map(stationView) };
  });

  router.post('/orgs/:org/stations', signedIn, role('admin'), async (ctx) => {
    const req = await body(ctx, CreateStationBody, deps.bodyLimit);
    const { station, token } = await stations.createStation({
      orgId: orgOf(ctx),
      name: req.name,
      locationId: stationLocation(req.location_id),
      region: req.region ?? '',
    });
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { station: stationView(station), token };
  });

  // A printer its agent no longer reports (`removed`), or any: its unfinished jobs fail first.
  router.delete('/orgs/:org/printers/:id', signedIn, role('admin'), async (ctx) => {
    await deletePrinter(
      { jobs, stations },
      orgOf(ctx),
      ctx.params.id ?? '',
      `person:${actorOf(ctx)}`,
    );
    ctx.status = 204;
  });

  router.get('/orgs/:org/overview', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const orgId = orgOf(ctx);
    const now = deps.sessions.clock.now();
    const startOfDay = new Date(
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()),
    );
    const [all, printerCounts, today] = await Promise.all([
      allStations(orgId),
      (async () => {
        const counts: Record<string, number> = {};
        let cursor = '';
        let seen = 0;
        do {
          const res = await stations.listPrinters({
            orgId,
            limit: 200,
            cursor,
            stationId: '',
            locationId: '',
          });
          for (const p of res.items) {
            // A printer whose station is not connected cannot print, whatever it last reported.
            const status = p.stationOnline || p.status === 'removed' ? p.status : 'unreachable';
            counts[status] = (counts[status] ?? 0) + 1;
          }
          seen += res.items.length;
          cursor = res.nextCursor;
        } while (cursor !== '' && seen < 10_000);
        return counts;
      })(),
      jobs.listJobs({
        orgId,
        limit: 1,
        cursor: '',
        statuses: [],
        reference: '',
        printerId: '',
        stationId: '',
        createdAfter: startOfDay,
        createdBefore: undefined,
      }),
    ]);
    ctx.body = {
      stations: { online: all.filter((s) => s.online).length, total: all.length },
      printers: printerCounts,
      jobs_today: Object.fromEntries(Object.entries(today.counts).map(([k, v]) => [k, Number(v)])),
      since: rfc3339(startOfDay),
    };
  });

  async function orgSettings(orgId: string) {
    const [{ org }, { settings }] = await Promise.all([
      accounts.getOrg({ orgId }),
      accounts.getSettings({}),
    ]);
    return {
      id: org?.id ?? orgId,
      name: org?.name ?? '',
      job_document_retention_days: settings?.jobDocumentRetentionDays ?? 0,
      upload_retention_days: settings?.uploadRetentionDays ?? 0,
    };
  }

  router.get('/orgs/:org/settings', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    ctx.body = { settings: await orgSettings(orgOf(ctx)) };
  });

  router.patch('/orgs/:org/settings', signedIn, role('owner'), async (ctx) => {
    const req = await changes(ctx, OrgSettingsBody, deps.bodyLimit);
    const current = await orgSettings(orgOf(ctx));
    // Retention is the installation's, set by the operator: an unchanged value passes.
    for (const param of ['job_document_retention_days', 'upload_retention_days'] as const) {
      if (req[param] !== undefined && req[param] !== current[param]) {
        throw invalid(
          `${param} is set for the whole installation by its operator (spool admin settings set), not per organization`,
          param,
        );
      }
    }
    if (req.name !== undefined) {
      await accounts.renameOrg({ orgId: orgOf(ctx), name: req.name });
      // Sessions carry their organizations' names: here at once, elsewhere when the bus tells.
      deps.sessions.cache.clear();
    }
    ctx.body = { settings: await orgSettings(orgOf(ctx)) };
  });

  return router;
}
