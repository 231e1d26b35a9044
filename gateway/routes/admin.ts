/**
 * The operator API under `/admin/v1` (DESIGN §5), guarded by the operator token. Each route has a
 * `spool admin` command that prints the same JSON.
 */
import { Router } from '@koa/router';
import { type Static, Type } from '@sinclair/typebox';
import type { CreateApiKeyRequest } from '../../gen/spool/v1/accounts.js';
import type { CreateLocationRequest } from '../../gen/spool/v1/stations.js';
import { SCOPES } from '../../lib/credentials.js';
import { invalid } from '../../lib/errors.js';
import { ROLES } from '../../lib/roles.js';
import { parseRfc3339, rfc3339OrNull } from '../../lib/time.js';
import { type OperatorToken, requireOperator } from '../auth.js';
import { body, changes } from '../body.js';
import type { Backends } from '../clients.js';
import { type Created, setLocation } from '../http-manners.js';
import type { KeyCache } from '../key-cache.js';
import { answerDeletion, deleteOrg, refuseChangesWhileDeleting } from '../org-deletion.js';
import {
  invitationUrl,
  invitationView,
  memberView,
  pendingInvitationView,
} from '../people-views.js';
import { listParams, rejectUnknownParams } from '../query.js';
import type { GatewayState } from '../state.js';
import {
  keyView,
  locationView,
  orgView,
  settingsView,
  stationView,
  templateView,
} from '../views.js';
import { addPoolAdminRoutes } from './pools.js';

export const CreateOrgBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'a name of 1 to 200 characters',
    }),
  },
  { additionalProperties: false },
);

export const CreateKeyBody = Type.Object(
  {
    mode: Type.Union([Type.Literal('live'), Type.Literal('test')], {
      description: 'live or test',
    }),
    scopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), {
      maxItems: SCOPES.length,
      description: `a list of scopes from ${SCOPES.join(', ')}`,
    }),
    name: Type.Optional(Type.String({ maxLength: 200, description: 'at most 200 characters' })),
    expires_at: Type.Optional(
      Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
        description: 'an RFC 3339 time, or null',
      }),
    ),
    allowed_ips: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), {
        maxItems: 50,
        description: 'a list of at most 50 IP addresses or CIDR ranges',
      }),
    ),
  },
  { additionalProperties: false },
);

export type CreateKey = Static<typeof CreateKeyBody>;

/** The accounts request that creates the key a body asks for (operator and console alike). */
export function createKeyRequest(orgId: string, req: CreateKey): CreateApiKeyRequest {
  let expiresAt: Date | undefined;
  if (typeof req.expires_at === 'string') {
    expiresAt = parseRfc3339(req.expires_at);
    if (!expiresAt) throw invalid('expires_at must be an RFC 3339 time', 'expires_at');
  }
  return {
    orgId,
    live: req.mode === 'live',
    scopes: req.scopes,
    expiresAt,
    allowedIps: req.allowed_ips ?? [],
    name: req.name ?? '',
  };
}

export const CreateLocationBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'a name of 1 to 200 characters',
    }),
    address: Type.Optional(Type.String({ maxLength: 200, description: 'at most 200 characters' })),
    timezone: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'an IANA time zone such as Europe/Berlin, or empty for none',
      }),
    ),
  },
  { additionalProperties: false },
);

export type CreateLocation = Static<typeof CreateLocationBody>;

/** Whether `name` is a time zone of the IANA database that Node's Intl knows (aliases included). */
function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** A location's `timezone`, when given, is an IANA time zone or empty (none). */
export function checkTimeZone(timezone: string | undefined): void {
  if (timezone !== undefined && timezone !== '' && !isTimeZone(timezone)) {
    throw invalid(
      `timezone must be an IANA time zone such as Europe/Berlin; ${JSON.stringify(timezone)} is not one`,
      'timezone',
    );
  }
}

/** The stations request that creates the location a body asks for (operator and console alike). */
export function createLocationRequest(orgId: string, req: CreateLocation): CreateLocationRequest {
  checkTimeZone(req.timezone);
  return { orgId, name: req.name, address: req.address ?? '', timezone: req.timezone ?? '' };
}

export const CreateTemplateBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'a name of 1 to 200 characters',
    }),
    kind: Type.Union([Type.Literal('text'), Type.Literal('zpl'), Type.Literal('escpos')], {
      description: 'text, zpl or escpos',
    }),
    body: Type.String({
      minLength: 1,
      maxLength: 256 * 1024,
      description: 'the body, with {{field}} placeholders (at most 256 KiB)',
    }),
    fields: Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 64, description: 'a field name' }),
          required: Type.Optional(Type.Boolean({ description: 'true or false (default true)' })),
          default: Type.Optional(
            Type.String({ maxLength: 10_000, description: 'a default value' }),
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 100, description: 'at most 100 fields' },
    ),
  },
  { additionalProperties: false },
);

/**
 * The path's organization, and the operator as the actor (no person), whom the accounts service
 * lets do anything.
 */
const byOperator = (ctx: { params: Record<string, string | undefined> }) => ({
  orgId: ctx.params.org ?? '',
  actorPersonId: '',
});

/** A new name of a resource that can be renamed; absent, the name stays. */
export const newName = () =>
  Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'a name of 1 to 200 characters' }),
  );

/** A retention setting, in days. */
const retentionDays = () =>
  Type.Optional(Type.Integer({ minimum: 1, maximum: 3650, description: 'days from 1 to 3650' }));

/** The highest public price, in cents: ten million of the currency. */
const MAX_PRICE_CENTS = 1_000_000_000;

export const SettingsBody = Type.Object(
  {
    job_document_retention_days: retentionDays(),
    upload_retention_days: retentionDays(),
    webhook_delivery_retention_days: retentionDays(),
    audit_retention_days: retentionDays(),
    notice: Type.Optional(
      Type.Union([Type.String({ maxLength: 1000 }), Type.Null()], {
        description: 'a notice on the public status page, or null for none',
      }),
    ),
    pricing: Type.Optional(
      Type.Union(
        [
          Type.Record(
            Type.String({ maxLength: 100 }),
            Type.Union([Type.Integer({ minimum: 0, maximum: MAX_PRICE_CENTS }), Type.Null()], {
              description: 'a price in whole cents, or null for none',
            }),
          ),
          Type.Null(),
        ],
        { description: 'the public prices in cents, by name, or null to withdraw them' },
      ),
    ),
    downloads: Type.Optional(
      Type.Union(
        [
          Type.Record(
            Type.String({ maxLength: 100 }),
            Type.Union([
              Type.Object(
                {
                  version: Type.String({ minLength: 1, maxLength: 100 }),
                  url: Type.String({ minLength: 1, maxLength: 2048 }),
                },
                { description: 'a release: its version and url, and any more fields' },
              ),
              Type.Null(),
            ]),
          ),
          Type.Null(),
        ],
        {
          description:
            'the latest agent release per platform, each {version, url, …} or null, or null for none',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

/**
 * What the schema cannot say of the public status page's entries: a name is not empty, and a
 * download's url is a web address (the public page hands it to any website that shows it).
 */
function checkPublicEntries(
  pricing: Record<string, unknown> | null | undefined,
  downloads: Record<string, { url: string } | null> | null | undefined,
): void {
  for (const [field, entries] of [
    ['pricing', pricing],
    ['downloads', downloads],
  ] as const) {
    for (const name of Object.keys(entries ?? {})) {
      if (name === '' || name.length > 100) {
        throw invalid(`${field} names must be of 1 to 100 characters`, field);
      }
    }
  }
  for (const [platform, release] of Object.entries(downloads ?? {})) {
    if (!release) continue;
    const param = `downloads.${platform}.url`;
    let url: URL;
    try {
      url = new URL(release.url);
    } catch {
      throw invalid(`${param} must be an https:// or http:// URL`, param);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw invalid(`${param} must be an https:// or http:// URL, not ${url.protocol}`, param);
    }
  }
}

/**
 * A station's `location_id` as the stations service takes it, `''` for none: an empty string in
 * the body is refused rather than taken for none, which only `null` (or leaving it out) says.
 */
export function stationLocation(value: string | null | undefined): string {
  if (value === '') {
    throw invalid(
      'location_id must be the id of a location; null (or leaving it out) is none',
      'location_id',
    );
  }
  return value ?? '';
}

export const CreateStationBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'a name of 1 to 200 characters',
    }),
    location_id: Type.Optional(Type.String({ description: 'the id of a location' })),
    region: Type.Optional(
      Type.String({
        maxLength: 32,
        description: "its home region, one of the installation's REGIONS; else the gateway's own",
      }),
    ),
  },
  { additionalProperties: false },
);

const RoleSchema = Type.Union(
  ROLES.map((r) => Type.Literal(r)),
  { description: ROLES.join(', ') },
);

export const InviteBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 254, description: 'an email address' }),
    role: RoleSchema,
  },
  { additionalProperties: false },
);

export const ChangeRoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false });

/** What each 201 of the operator API creates, named in its `Location` header. */
export const ADMIN_CREATED = {
  org: { field: 'org', location: '/admin/v1/orgs/{id}' },
  key: { field: 'key', location: '/admin/v1/orgs/{org}/keys/{id}' },
  location: { field: 'location', location: '/admin/v1/orgs/{org}/locations/{id}' },
  station: { field: 'station', location: '/admin/v1/orgs/{org}/stations/{id}' },
  template: { field: 'template', location: '/admin/v1/orgs/{org}/templates/{id}' },
  invitation: { field: 'invitation', location: '/admin/v1/orgs/{org}/invitations/{id}' },
} satisfies Record<string, Created>;

export interface AdminDeps {
  backends: Backends;
  /** This gateway's API keys: a key revoked through it is forgotten at once, here. */
  keys: KeyCache;
  operatorToken: OperatorToken;
  bodyLimit: number;
  /** The base of links the gateway hands out (PUBLIC_URL); else the request's origin. */
  publicUrl?: string | undefined;
}

export function adminRouter(deps: AdminDeps): Router<GatewayState> {
  const { accounts, jobs, stations } = deps.backends;
  const router = new Router<GatewayState>({ prefix: '/admin/v1' });
  // The guard of every route runs before any route does: it names the route first, so that a
  // request it refuses is logged and measured under its route (`/admin/v1/orgs/:org/keys`, with
  // its `org`), not under the guard's own pattern.
  const operator = requireOperator(deps.operatorToken);
  const open = refuseChangesWhileDeleting(accounts);
  router.use((ctx, next) => {
    // The router has matched the path already: the route is among its layers, by method.
    const route = ctx.matched?.findLast((layer) => layer.methods.includes(ctx.method));
    if (typeof route?.path === 'string') {
      ctx._matchedRoute = route.path;
      ctx.params = route.params(ctx.path, route.captures(ctx.path), ctx.params);
    }
    return operator(ctx, () => open(ctx, next));
  });

  router.post('/orgs', setLocation(ADMIN_CREATED.org), async (ctx) => {
    const req = await body(ctx, CreateOrgBody, deps.bodyLimit);
    const { org } = await accounts.createOrg({ name: req.name });
    ctx.status = 201;
    ctx.body = { org: orgView(org) };
  });

  router.get('/orgs/:org', async (ctx) => {
    const { org } = await accounts.getOrg({ orgId: ctx.params.org ?? '' });
    ctx.body = { org: orgView(org) };
  });

  // Deleting an organization and everything it has (org-deletion.ts). A large one may take more
  // than one request: 202 says to send the same DELETE again, which goes on where this stopped.
  router.delete('/orgs/:org', async (ctx) => {
    // In small letters, as the key cache holds it, however the path spelled it.
    const orgId = (ctx.params.org ?? '').toLowerCase();
    // An unknown one is a 404 from its first step, before anything is touched.
    const result = await deleteOrg(deps.backends, orgId, {
      closed: () => deps.keys.evictOrg(orgId),
    });
    answerDeletion(ctx, result, 'the organization');
  });

  router.post('/orgs/:org/keys', setLocation(ADMIN_CREATED.key), async (ctx) => {
    const req = await body(ctx, CreateKeyBody, deps.bodyLimit);
    const { key, secret } = await accounts.createApiKey(
      createKeyRequest(ctx.params.org ?? '', req),
    );
    ctx.status = 201;
    ctx.body = { key: keyView(key), secret };
  });

  router.get('/orgs/:org/keys', async (ctx) => {
    const res = await accounts.listApiKeys({
      orgId: ctx.params.org ?? '',
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(keyView), next_cursor: res.nextCursor };
  });

  router.post('/orgs/:org/invitations', setLocation(ADMIN_CREATED.invitation), async (ctx) => {
    const req = await body(ctx, InviteBody, deps.bodyLimit);
    const { invitation, token } = await accounts.createInvitation({
      ...byOperator(ctx),
      email: req.email,
      role: req.role,
    });
    ctx.status = 201;
    ctx.body = {
      invitation: invitationView(invitation),
      url: invitationUrl(ctx, deps.publicUrl, token),
    };
  });

  router.get('/orgs/:org/invitations/:id', async (ctx) => {
    const res = await accounts.getOrgInvitation({
      orgId: ctx.params.org ?? '',
      invitationId: ctx.params.id ?? '',
    });
    ctx.body = {
      invitation: {
        ...pendingInvitationView(res),
        used_at: rfc3339OrNull(res.usedAt),
        revoked_at: rfc3339OrNull(res.revokedAt),
      },
    };
  });

  // An organization's members: every one, on one page (an organization has people, not fleets).
  router.get('/orgs/:org/people', async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const orgId = ctx.params.org ?? '';
    // An unknown organization has no members, and is a 404, not an empty list.
    const [, { members }] = await Promise.all([
      accounts.getOrg({ orgId }),
      accounts.listMembers({ orgId }),
    ]);
    ctx.body = { items: members.map(memberView), next_cursor: '' };
  });

  // The operator acts as an owner would: on call at night, when a member's laptop was stolen or
  // they left, no owner need be reached first. The last owner stays, as for owners themselves.
  router.patch('/orgs/:org/people/:person_id', async (ctx) => {
    const req = await changes(ctx, ChangeRoleBody, deps.bodyLimit);
    const { member } = await accounts.changeRole({
      ...byOperator(ctx),
      personId: ctx.params.person_id ?? '',
      role: req.role,
    });
    ctx.body = { member: memberView(member) };
  });

  router.delete('/orgs/:org/people/:person_id', async (ctx) => {
    await accounts.removeMember({
      ...byOperator(ctx),
      personId: ctx.params.person_id ?? '',
    });
    ctx.status = 204;
  });

  router.get('/orgs/:org/invitations', async (ctx) => {
    const res = await accounts.listInvitations({
      ...byOperator(ctx),
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(pendingInvitationView), next_cursor: res.nextCursor };
  });

  router.delete('/orgs/:org/invitations/:id', async (ctx) => {
    await accounts.revokeInvitation({
      ...byOperator(ctx),
      invitationId: ctx.params.id ?? '',
    });
    ctx.status = 204;
  });

  router.post('/orgs/:org/locations', setLocation(ADMIN_CREATED.location), async (ctx) => {
    const req = await body(ctx, CreateLocationBody, deps.bodyLimit);
    const { location } = await stations.createLocation(
      createLocationRequest(ctx.params.org ?? '', req),
    );
    ctx.status = 201;
    ctx.body = { location: locationView(location) };
  });

  router.post('/orgs/:org/stations', setLocation(ADMIN_CREATED.station), async (ctx) => {
    const req = await body(ctx, CreateStationBody, deps.bodyLimit);
    const { station, token } = await stations.createStation({
      orgId: ctx.params.org ?? '',
      name: req.name,
      locationId: stationLocation(req.location_id),
      region: req.region ?? '',
    });
    ctx.status = 201;
    ctx.body = { station: stationView(station), token };
  });

  router.post('/orgs/:org/templates', setLocation(ADMIN_CREATED.template), async (ctx) => {
    const req = await body(ctx, CreateTemplateBody, deps.bodyLimit);
    const { template } = await jobs.createTemplate({
      orgId: ctx.params.org ?? '',
      name: req.name,
      kind: req.kind,
      body: req.body,
      fields: req.fields.map((f) => ({
        name: f.name,
        required: f.required ?? f.default === undefined,
        defaultValue: f.default ?? '',
      })),
    });
    ctx.status = 201;
    ctx.body = { template: templateView(template) };
  });

  router.get('/settings', async (ctx) => {
    const { settings } = await accounts.getSettings({});
    ctx.body = { settings: settingsView(settings) };
  });

  router.patch('/settings', async (ctx) => {
    const req = await changes(ctx, SettingsBody, deps.bodyLimit);
    checkPublicEntries(req.pricing, req.downloads);
    const json = (value: unknown) =>
      value === undefined ? undefined : value === null ? '' : JSON.stringify(value);
    const { settings } = await accounts.updateSettings({
      jobDocumentRetentionDays: req.job_document_retention_days,
      uploadRetentionDays: req.upload_retention_days,
      webhookDeliveryRetentionDays: req.webhook_delivery_retention_days,
      auditRetentionDays: req.audit_retention_days,
      statusNotice: req.notice === undefined ? undefined : (req.notice ?? ''),
      pricingJson: json(req.pricing),
      downloadsJson: json(req.downloads),
    });
    ctx.body = { settings: settingsView(settings) };
  });

  router.post('/orgs/:org/stations/:id/token', async (ctx) => {
    await body(ctx, Type.Object({}, { additionalProperties: false }), deps.bodyLimit);
    const { station, token } = await stations.rotateStationToken({
      orgId: ctx.params.org ?? '',
      stationId: ctx.params.id ?? '',
    });
    ctx.body = { station: stationView(station), token };
  });

  router.delete('/orgs/:org/stations/:id/token', async (ctx) => {
    await stations.revokeStationToken({
      orgId: ctx.params.org ?? '',
      stationId: ctx.params.id ?? '',
    });
    ctx.status = 204;
  });

  router.delete('/orgs/:org/keys/:id', async (ctx) => {
    await accounts.revokeApiKey({ orgId: ctx.params.org ?? '', keyId: ctx.params.id ?? '' });
    // Other replicas hear of it on the bus within a second; this one refuses the key at once.
    deps.keys.evictKey(ctx.params.id ?? '');
    ctx.status = 204;
  });

  addPoolAdminRoutes(router, deps);
  return router;
}
