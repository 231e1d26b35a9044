/**
 * The OpenAPI 3.1 document of the operator API `/admin/v1` (DESIGN §5), served at
 * `GET /admin/v1/openapi.json`, built as the `/v1` one is. Its webhook operations are those of
 * `/v1` (the same handlers answer both) under the operator's paths, plus the two only the operator
 * has. Every route the admin routers register must be described here: the gateway refuses to start
 * otherwise (see {@link assertDescribed}).
 */
import { type TSchema, Type } from '@sinclair/typebox';
import type { ErrorCode } from '../lib/errors.js';
import { ROLES } from '../lib/roles.js';
import { AUDIT_TAG, AuditEntrySchema, FLEET_OPERATIONS } from './openapi-admin-fleet.js';
import {
  buildDocument,
  DEFAULT_SERVER,
  type OperationSpec,
  type Surface,
} from './openapi-builder.js';
import { adminPoolOperations, POOLS_TAG } from './openapi-pools.js';
import { RELEASE_OPERATIONS, RELEASES_TAG } from './openapi-releases.js';
import { EXAMPLE_ID, LOCATIONS_TAG, operatorList, TEMPLATES_TAG } from './openapi-shared.js';
import { WEBHOOK_OPERATIONS, WEBHOOKS_TAG } from './openapi-webhooks.js';
import {
  ADMIN_CREATED,
  ChangeRoleBody,
  CreateKeyBody,
  CreateLocationBody,
  CreateOrgBody,
  CreateStationBody,
  CreateTemplateBody,
  InviteBody,
  SettingsBody,
} from './routes/admin.js';
import { PoolSchema } from './routes/pools.js';
import { WebhookDeliverySchema, WebhookEndpointSchema } from './routes/webhooks.js';
import { WEBHOOK_CREATED } from './routes/webhooks-admin.js';
import {
  ApiKeySchema,
  itemsOf,
  LocationSchema,
  OrgSchema,
  SettingsSchema,
  StationSchema,
  TemplateSchema,
} from './schemas.js';

const SURFACE: Surface = { auth: 'operator', rateLimited: false, idempotentPosts: false };

const answer = (field: string, schema: TSchema, extra: Record<string, TSchema> = {}) =>
  Type.Object({ [field]: schema, ...extra }, { additionalProperties: false });

const ORG = {
  id: EXAMPLE_ID.org,
  name: 'Acme Print',
  deleting_since: null,
  parent_id: null,
  reference: '',
};
const STATION = {
  id: EXAMPLE_ID.station,
  org_id: EXAMPLE_ID.org,
  name: 'Front desk',
  location_id: null,
  online: false,
  last_seen_at: null,
  agent_version: null,
  region: 'default',
  token_revoked_at: null,
  created_at: '2026-05-01T12:00:00Z',
};
const ORG_ERRORS: ErrorCode[] = ['not_found'];

/** A member of an organization, with their role. */
const MemberSchema = Type.Object(
  {
    person_id: Type.String({ format: 'uuid' }),
    email: Type.String(),
    display_name: Type.String(),
    role: Type.Union(ROLES.map((r) => Type.Literal(r))),
    joined_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const InvitationSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    email: Type.String({ description: 'the invitee, lowercased' }),
    role: Type.Union(
      ROLES.map((r) => Type.Literal(r)),
      { description: ROLES.join(', ') },
    ),
    expires_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const PendingInvitationSchema = Type.Object(
  {
    ...InvitationSchema.properties,
    created_at: Type.String({ format: 'date-time' }),
    invited_by: Type.Union(
      [
        Type.Object(
          {
            person_id: Type.String({ format: 'uuid' }),
            email: Type.String(),
            display_name: Type.String(),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'the member who invited; null when the operator did' },
    ),
  },
  { additionalProperties: false },
);
const empty = { schema: { $ref: '#/components/schemas/EmptyBody' }, required: false };

/** The operations of `/admin/v1` besides webhook endpoints, by `METHOD /path`. */
const ADMIN_OPERATIONS: Record<string, OperationSpec> = {
  'POST /admin/v1/orgs': {
    operationId: 'createOrg',
    tag: 'Organizations',
    summary: 'Create an organization',
    request: {
      schema: CreateOrgBody,
      examples: { acme: { summary: 'a name', value: { name: ORG.name } } },
    },
    success: {
      status: 201,
      description: 'the organization',
      schema: answer('org', OrgSchema),
      example: { org: { ...ORG, created_at: '2026-05-01T12:00:00Z' } },
      location: ADMIN_CREATED.org.location,
    },
  },
  'GET /admin/v1/orgs/:org': {
    operationId: 'getOrg',
    tag: 'Organizations',
    summary: 'An organization',
    success: { status: 200, description: 'the organization', schema: answer('org', OrgSchema) },
    errors: ORG_ERRORS,
  },
  'DELETE /admin/v1/orgs/:org': {
    operationId: 'deleteOrg',
    tag: 'Organizations',
    summary: 'Delete an organization and everything it has',
    description:
      'First closes it: every API key is revoked (gateways refuse them at once), every invitation withdrawn and every membership ended. Then its stations (their agents are disconnected) and printers, locations, jobs with their documents, uploads, templates, webhook endpoints and deliveries are deleted, and last the organization itself; the audit log keeps its entries. It cannot be undone. A large organization may take more than one request: the answer is then `202`, and the same DELETE goes on where it stopped, until `204`. From the first request on, the organization reads `deleting_since`, and what would add to it or change it answers `409`. An organization that has child organizations (a platform) answers `409` naming them, and nothing is deleted: delete its children first.',
    success: { status: 204, description: 'the organization is gone' },
    also: [
      {
        status: 202,
        description: 'keys revoked and partly deleted: send the same DELETE again to go on',
        schema: Type.Object(
          {
            deleting: Type.Literal(true),
            deleted: Type.Integer({ description: 'rows deleted by this request' }),
            message: Type.String(),
          },
          { additionalProperties: false },
        ),
      },
    ],
    errors: [...ORG_ERRORS, 'conflict'],
  },
  'POST /admin/v1/orgs/:org/keys': {
    operationId: 'createKey',
    tag: 'Keys',
    summary: 'Create an API key',
    description: 'The secret is in this answer only; Spool keeps a SHA-256 of it.',
    request: {
      schema: CreateKeyBody,
      examples: {
        live: { summary: 'a live key', value: { mode: 'live', scopes: ['jobs:write'] } },
      },
    },
    success: {
      status: 201,
      description: 'the key and its secret',
      schema: answer('key', ApiKeySchema, {
        secret: Type.String({ pattern: '^svc_(live|test)_', description: 'shown only here' }),
      }),
      location: ADMIN_CREATED.key.location,
    },
    errors: ORG_ERRORS,
  },
  'GET /admin/v1/orgs/:org/keys': operatorList({
    operationId: 'listKeys',
    tag: 'Keys',
    summary: 'API keys, revoked ones included',
    page: 'a page of keys',
    item: ApiKeySchema,
    errors: ORG_ERRORS,
  }),
  'DELETE /admin/v1/orgs/:org/keys/:id': {
    operationId: 'revokeKey',
    tag: 'Keys',
    summary: 'Revoke an API key',
    description: 'It stops working on every gateway within a second. Revoking again answers 204.',
    success: { status: 204, description: 'revoked' },
    errors: ORG_ERRORS,
  },
  'POST /admin/v1/orgs/:org/invitations': {
    operationId: 'createInvitation',
    tag: 'People',
    summary: 'Invite a person to the console',
    description:
      'The invitee opens `url` (the token is in its fragment), chooses a display name and a password, and is signed in as a member with `role`. Invitations are single-use and last 7 days. `url` starts with PUBLIC_URL when it is set, else with the origin of this request. A pending invitation of the same email to this organization is revoked: only the newest link works.',
    request: {
      schema: InviteBody,
      examples: {
        owner: { summary: 'the first owner', value: { email: 'ada@example.com', role: 'owner' } },
      },
    },
    success: {
      status: 201,
      description: 'the invitation and its one-time link',
      schema: answer('invitation', InvitationSchema, {
        url: Type.String({ description: 'the link to send the invitee; shown only here' }),
      }),
      location: ADMIN_CREATED.invitation.location,
    },
    errors: ['conflict', ...ORG_ERRORS],
  },
  'GET /admin/v1/orgs/:org/invitations/:id': {
    operationId: 'getInvitation',
    tag: 'People',
    summary: 'An invitation, used, revoked or pending, with who sent it and when',
    success: {
      status: 200,
      description:
        'the invitation; used_at is null until it is accepted, revoked_at until it is revoked or superseded by a newer invitation of the same email',
      schema: answer(
        'invitation',
        Type.Object(
          {
            ...PendingInvitationSchema.properties,
            used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
            revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
          },
          { additionalProperties: false },
        ),
      ),
    },
    errors: ORG_ERRORS,
  },
  'GET /admin/v1/orgs/:org/people': {
    operationId: 'listPeople',
    tag: 'People',
    summary: "The organization's members, with their roles",
    description: 'Every member on one page (`next_cursor` is always empty), oldest first.',
    success: { status: 200, description: 'the members', schema: itemsOf(MemberSchema) },
    errors: ['unknown_field', ...ORG_ERRORS],
  },
  'PATCH /admin/v1/orgs/:org/people/:person_id': {
    operationId: 'changeRole',
    tag: 'People',
    summary: "Change a member's role",
    description:
      'As an owner would, owners included; the last owner cannot be made anything else (409). Their sessions have the new role at once.',
    request: {
      schema: ChangeRoleBody,
      examples: { admin: { summary: 'make them an admin', value: { role: 'admin' } } },
    },
    success: { status: 200, description: 'the member', schema: answer('member', MemberSchema) },
    errors: ['invalid', 'conflict', 'not_found'],
  },
  'DELETE /admin/v1/orgs/:org/people/:person_id': {
    operationId: 'removeMember',
    tag: 'People',
    summary: 'Remove a member from the organization',
    description:
      'As an owner would; the last owner cannot be removed (409). Their sessions lose the organization at once; the person keeps their account and their other organizations.',
    success: { status: 204, description: 'removed' },
    errors: ['conflict', 'not_found'],
  },
  'GET /admin/v1/orgs/:org/invitations': operatorList({
    operationId: 'listInvitations',
    tag: 'People',
    summary: 'Pending invitations, oldest first',
    description:
      'Invitations neither accepted, revoked, superseded nor expired, with who sent each; never their tokens or links.',
    page: 'a page of pending invitations',
    item: PendingInvitationSchema,
    errors: ORG_ERRORS,
  }),
  'DELETE /admin/v1/orgs/:org/invitations/:id': {
    operationId: 'revokeInvitation',
    tag: 'People',
    summary: 'Revoke an invitation',
    description:
      'Its link then answers 404, as an unknown one does. Revoking one that is no longer pending (revoked, superseded or expired) answers 204 again; one already accepted answers 409: remove the member instead.',
    success: { status: 204, description: 'revoked' },
    errors: ['conflict', ...ORG_ERRORS],
  },
  'POST /admin/v1/orgs/:org/locations': {
    operationId: 'createLocation',
    tag: 'Locations',
    summary: 'Create a location',
    request: { schema: CreateLocationBody },
    success: {
      status: 201,
      description: 'the location',
      schema: answer('location', LocationSchema),
      location: ADMIN_CREATED.location.location,
    },
    errors: ORG_ERRORS,
  },
  'POST /admin/v1/orgs/:org/stations': {
    operationId: 'createStation',
    tag: 'Stations',
    summary: 'Create a station and its device token',
    description:
      'The token (`svc_dev_…`) is what `spool agent --token` takes; it is in this answer only.',
    request: { schema: CreateStationBody },
    success: {
      status: 201,
      description: 'the station and its token',
      schema: answer('station', StationSchema, { token: Type.String({ pattern: '^svc_dev_' }) }),
      example: { station: STATION, token: 'svc_dev_3xAmPl3t0k3nN0tR3al' },
      location: ADMIN_CREATED.station.location,
    },
    errors: ORG_ERRORS,
  },
  'POST /admin/v1/orgs/:org/stations/:id/token': {
    operationId: 'rotateStationToken',
    tag: 'Stations',
    summary: 'A new device token; the old one stops working and its link is cut',
    request: empty,
    success: {
      status: 200,
      description: 'the station and its new token',
      schema: answer('station', StationSchema, { token: Type.String({ pattern: '^svc_dev_' }) }),
    },
    errors: ORG_ERRORS,
  },
  'DELETE /admin/v1/orgs/:org/stations/:id/token': {
    operationId: 'revokeStationToken',
    tag: 'Stations',
    summary: "Revoke a station's device token and cut its link",
    success: { status: 204, description: 'revoked' },
    errors: ORG_ERRORS,
  },
  'POST /admin/v1/orgs/:org/templates': {
    operationId: 'createTemplate',
    tag: 'Templates',
    summary: 'Create a template',
    request: { schema: CreateTemplateBody },
    success: {
      status: 201,
      description: 'the template',
      schema: answer('template', TemplateSchema),
      location: ADMIN_CREATED.template.location,
    },
    errors: ORG_ERRORS,
  },
  'GET /admin/v1/settings': {
    operationId: 'getSettings',
    tag: 'Settings',
    summary: 'The settings of this Spool',
    success: {
      status: 200,
      description: 'the settings',
      schema: answer('settings', SettingsSchema),
    },
  },
  'PATCH /admin/v1/settings': {
    operationId: 'updateSettings',
    tag: 'Settings',
    summary: 'Change settings; fields left out keep their value',
    request: { schema: SettingsBody },
    success: {
      status: 200,
      description: 'the settings',
      schema: answer('settings', SettingsSchema),
    },
  },
  'GET /admin/v1/orgs/:org/webhooks/:id/deliveries/:delivery': {
    operationId: 'getWebhookDelivery',
    tag: WEBHOOKS_TAG.name,
    summary: 'A delivery with its payload, the exact body sent',
    success: {
      status: 200,
      description: 'the delivery',
      schema: Type.Object(
        {
          delivery: Type.Object(
            {
              ...WebhookDeliverySchema.properties,
              payload: Type.String({ description: 'the exact body sent' }),
            },
            { additionalProperties: false },
          ),
        },
        { additionalProperties: false },
      ),
    },
    errors: ORG_ERRORS,
  },
};

/** The webhook operations of `/v1`, at their `/admin/v1` paths, where any org is the operator's. */
function adminWebhookOperations(): Array<[string, OperationSpec]> {
  return Object.entries(WEBHOOK_OPERATIONS).map(([key, op]) => {
    const adminKey = key.replace(' /v1/', ' /admin/v1/');
    const success =
      op.success.status === 201
        ? { ...op.success, location: WEBHOOK_CREATED.location }
        : op.success;
    return [adminKey, { ...op, success, scope: null, errors: [...(op.errors ?? []), 'not_found'] }];
  });
}

/** Every operation of the document by `METHOD /path`. */
export function adminOperations(): Map<string, OperationSpec> {
  return new Map([
    ...Object.entries(ADMIN_OPERATIONS),
    ...Object.entries(FLEET_OPERATIONS),
    ...Object.entries(RELEASE_OPERATIONS),
    ...adminWebhookOperations(),
    ...adminPoolOperations(),
  ]);
}

/** Throws when a route the gateway answers under `/admin/v1` has no operation here. */
export function assertDescribed(routes: ReadonlyArray<{ method: string; path: string }>): void {
  const ops = adminOperations();
  for (const { method, path } of routes) {
    if (!ops.has(`${method} ${path}`))
      throw new Error(`no OpenAPI description for ${method} ${path}`);
  }
}

/** The document; built once per process. */
export function buildAdminOpenApi(serverUrl = DEFAULT_SERVER): Record<string, unknown> {
  const operations = [...adminOperations().entries()].sort(
    ([a], [b]) => a.split(' ')[1]?.localeCompare(b.split(' ')[1] ?? '') ?? 0,
  );
  return buildDocument(
    {
      title: 'Spool operator API',
      version: '1',
      description:
        'Organizations, API keys, stations, printers, pools of printers, locations, templates, settings, webhook endpoints and the audit log, for the operator of a Spool. Authenticate with the operator token (`SPOOL_ADMIN_TOKEN`) as `Authorization: Bearer <token>`. Each operation has a `spool admin` command that prints the same JSON.',
      surface: SURFACE,
      securityScheme: {
        name: 'operatorToken',
        description: 'the operator token, SPOOL_ADMIN_TOKEN',
      },
      tags: [
        { name: 'Organizations', description: 'The organizations this Spool serves' },
        { name: 'Keys', description: "API keys of an organization's integrations" },
        { name: 'People', description: 'Invitations of people to the console' },
        {
          name: 'Stations',
          description: 'Stations, where the agent runs, and their device tokens',
        },
        { name: 'Printers', description: 'The printers stations report' },
        POOLS_TAG,
        LOCATIONS_TAG,
        TEMPLATES_TAG,
        { name: 'Jobs', description: "An organization's jobs and their events, for support" },
        WEBHOOKS_TAG,
        { name: 'Settings', description: 'Retention, the status notice, prices and downloads' },
        RELEASES_TAG,
        AUDIT_TAG,
      ],
      operations,
      schemas: {
        EmptyBody: Type.Object({}, { additionalProperties: false }),
        Org: OrgSchema,
        ApiKey: ApiKeySchema,
        Station: StationSchema,
        Location: LocationSchema,
        Template: TemplateSchema,
        Pool: PoolSchema,
        Settings: SettingsSchema,
        AuditEntry: AuditEntrySchema,
        Invitation: InvitationSchema,
        PendingInvitation: PendingInvitationSchema,
        WebhookEndpoint: WebhookEndpointSchema,
        WebhookDelivery: WebhookDeliverySchema,
      },
    },
    serverUrl,
  );
}
