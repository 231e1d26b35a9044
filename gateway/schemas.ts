/**
 * The shapes of the API's answers as JSON Schema (TypeBox), for the OpenAPI documents of `/v1` and
 * `/admin/v1`. The tests check every answer they receive against them, so they stay true to the
 * views.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { JOB_STATUSES } from '../lib/contracts/job-status.js';
import { SCOPES } from '../lib/credentials.js';
import { ERROR_CATALOGUE } from '../lib/errors.js';
import { MAX_PRIORITY } from '../lib/job-view.js';
import { LINK_PRINTER_STATUSES } from '../lib/printer-status.js';

/** A printer's status: what the station link reports (docs/station-link.md), or `removed`. */
export const PRINTER_STATUSES = [...LINK_PRINTER_STATUSES, 'removed'] as const;

const oneOfStrings = (values: readonly string[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description === undefined ? {} : { description },
  );

const Time = Type.String({ format: 'date-time', description: 'RFC 3339, UTC' });
const NullableTime = Type.Union([Time, Type.Null()]);
const Id = Type.String({ format: 'uuid', examples: ['0b7f4c1e-5d2a-4c3b-9e8f-1a2b3c4d5e6f'] });
const NullableId = Type.Union([Id, Type.Null()]);
const Cursor = Type.String({
  description: 'pass as cursor for the next page; empty on the last page',
});

export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.Union(Object.keys(ERROR_CATALOGUE).map((c) => Type.Literal(c))),
        message: Type.String(),
        param: Type.Optional(Type.String({ description: 'the field or parameter at fault' })),
        request_id: Type.String({ description: 'also in the Request-Id header' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const KeyInfoSchema = Type.Object(
  {
    id: Id,
    org_id: Id,
    org_name: Type.String(),
    live: Type.Boolean(),
    scopes: Type.Array(oneOfStrings(SCOPES)),
  },
  { additionalProperties: false },
);

/** What a printed job's printer confirmed (docs/jobs.md, "Did it really print?"). */
const ConfirmationSchema = Type.Object(
  {
    level: Type.Union([Type.Literal('handed_off'), Type.Literal('device_completed')], {
      description:
        'handed_off: a spooler or socket took the whole job (file, raw, CUPS); device_completed: the printer itself said it completed (IPP)',
    }),
    pages: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'the impressions the printer counted, where it reports them',
    }),
  },
  { additionalProperties: false },
);

export const JobSchema = Type.Object(
  {
    id: Id,
    org_id: Id,
    status: oneOfStrings(JOB_STATUSES),
    status_detail: Type.String({
      description:
        'why the job failed; while it is queued or sent, what it waits on (starting "waiting: "); empty otherwise',
    }),
    reference: Type.String(),
    title: Type.String(),
    printer_id: Type.Union([Id, Type.Null()], {
      description:
        'the printer it prints on: the one it was created for, or the member of its pool chosen; null while a pool job waits for one',
    }),
    station_id: Type.Union([Id, Type.Null()], {
      description: "its printer's station; null while a pool job waits for a printer",
    }),
    pool_id: Type.Union([Id, Type.Null()], {
      description: 'the pool it was created for; null for a job created for a printer',
    }),
    priority: Type.Integer({
      minimum: 1,
      maximum: MAX_PRIORITY,
      description:
        'of the jobs waiting for one printer, the highest priority is offered first, then the oldest',
    }),
    region: Type.String({
      description:
        'the home region of its station: where it is dispatched and, once reported, printed (`default` with one region)',
    }),
    live: Type.Boolean({ description: 'false for jobs made with a test key' }),
    options: Type.Object(
      {
        copies: Type.Optional(Type.Integer({ minimum: 1 })),
        duplex: Type.Optional(
          oneOfStrings(['one_sided', 'two_sided_long_edge', 'two_sided_short_edge']),
        ),
        color: Type.Optional(oneOfStrings(['color', 'monochrome'])),
        paper: Type.Optional(Type.String()),
        tray: Type.Optional(Type.String()),
        pages: Type.Optional(Type.String()),
        fit_to_page: Type.Optional(Type.Boolean()),
        rotate: Type.Optional(Type.Union([90, 180, 270].map((v) => Type.Literal(v)))),
      },
      {
        additionalProperties: false,
        description: 'the options given at creation; unset ones are left out',
      },
    ),
    content_type: Type.String(),
    size: Type.Integer({ minimum: 0 }),
    attempt: Type.Integer({ minimum: 1 }),
    schedule_at: NullableTime,
    expire_at: NullableTime,
    reprint_of: NullableId,
    content_deleted: Type.Boolean({ description: 'the document is past retention' }),
    confirmation: Type.Union([ConfirmationSchema, Type.Null()], {
      description: 'set once the job is printed: what its printer confirmed',
    }),
    created_at: Time,
    updated_at: Time,
  },
  { additionalProperties: false },
);

export const EventSchema = Type.Object(
  {
    at: Time,
    status: oneOfStrings(JOB_STATUSES),
    detail: Type.String(),
    actor: Type.String({
      description:
        'api_key:<id>, person:<id> (a signed-in session), station:<id>, system, or admin (an operator deleting its printer or station)',
    }),
    confirmation: Type.Optional(ConfirmationSchema),
  },
  { additionalProperties: false },
);

export const PrinterSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    station_id: Id,
    location_id: NullableId,
    region: Type.String({
      description: 'the home region of its station (`default` with one region)',
    }),
    status: oneOfStrings(
      PRINTER_STATUSES,
      'as the station reports it; removed when its station no longer reports it',
    ),
    detail: Type.String(),
    station_online: Type.Boolean(),
    capabilities: Type.Object(
      {
        paper_sizes: Type.Array(Type.String()),
        duplex: Type.Boolean(),
        color: Type.Boolean(),
        copies: Type.Boolean(),
        trays: Type.Array(Type.String(), {
          description: 'the input trays a job may name in options.tray; empty when not known',
        }),
        document_formats: Type.Array(Type.String(), {
          description:
            'the content types the printer takes; empty when it takes any the job may have',
        }),
      },
      { additionalProperties: false },
    ),
    updated_at: NullableTime,
  },
  { additionalProperties: false },
);

export const LocationSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    address: Type.String(),
    timezone: Type.String(),
    created_at: NullableTime,
  },
  { additionalProperties: false },
);

export const TemplateSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    kind: oneOfStrings(['text', 'zpl', 'escpos']),
    body: Type.String(),
    fields: Type.Array(
      Type.Object(
        {
          name: Type.String(),
          required: Type.Boolean(),
          default: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
    created_at: NullableTime,
  },
  { additionalProperties: false },
);

export const UploadSchema = Type.Object(
  {
    id: Id,
    content_type: Type.String(),
    size: Type.Integer({ minimum: 0 }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    created_at: NullableTime,
  },
  { additionalProperties: false },
);

export const JobAnswer = Type.Object({ job: JobSchema }, { additionalProperties: false });

export const JobWithEvents = Type.Object(
  { job: JobSchema, events: Type.Array(EventSchema) },
  { additionalProperties: false },
);

export const JobList = Type.Object(
  {
    items: Type.Array(JobSchema),
    next_cursor: Cursor,
    counts: Type.Record(Type.String(), Type.Integer(), {
      description: 'jobs by status for the same filters, without the status filter',
    }),
  },
  { additionalProperties: false },
);

/** A page of a list whose array is named `name`. */
export function listOf(name: string, item: TSchema) {
  return Type.Object(
    { [name]: Type.Array(item), next_cursor: Cursor },
    { additionalProperties: false },
  );
}

/** An organization (`/admin/v1`). */
export const OrgSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    created_at: NullableTime,
    deleting_since: Type.Union([Time, Type.Null()], {
      description:
        'when its deletion began, for one a deletion left part-deleted (send the DELETE again); null otherwise',
    }),
    parent_id: Type.Union([Id, Type.Null()], {
      description:
        "for a platform's child organization, its parent (which cannot be deleted before it); null otherwise",
    }),
    reference: Type.String({
      description: "the parent's reference for a child organization; empty otherwise",
    }),
  },
  { additionalProperties: false },
);

/** An API key as the operator API shows it; the secret is only in the answer to its creation. */
export const ApiKeySchema = Type.Object(
  {
    id: Id,
    org_id: Id,
    name: Type.String(),
    live: Type.Boolean(),
    scopes: Type.Array(oneOfStrings(SCOPES)),
    hint: Type.String({ description: 'the prefix and last four characters, as svc_live_…a1B2' }),
    allowed_ips: Type.Array(Type.String({ description: 'an IP address or CIDR range' })),
    expires_at: NullableTime,
    created_at: NullableTime,
    revoked_at: NullableTime,
    last_used_at: Type.Union([Time, Type.Null()], {
      description:
        'when a request was last let in with it, to about the minute (gateways write their uses every minute); null if never',
    }),
  },
  { additionalProperties: false },
);

/** A station, where the agent runs. */
export const StationSchema = Type.Object(
  {
    id: Id,
    org_id: Id,
    name: Type.String(),
    location_id: NullableId,
    online: Type.Boolean(),
    last_seen_at: NullableTime,
    agent_version: Type.Union([Type.String(), Type.Null()], {
      description: "the agent's version at its last connection; null before the first",
    }),
    region: Type.String({
      description:
        'its home region: where its jobs are dispatched and its agent should connect (`default` with one region)',
    }),
    token_revoked_at: Type.Union([Time, Type.Null()], {
      description:
        'when its device token was revoked: its agent is refused until a new token is made (rotate); null while its token works',
    }),
    created_at: NullableTime,
  },
  { additionalProperties: false },
);

/** A station as the operator API shows it: with its agent's platform and update state. */
export const AdminStationSchema = Type.Object(
  {
    ...StationSchema.properties,
    platform: Type.Union([Type.String(), Type.Null()], {
      description: "its agent's package platform (linux-x64); null when it runs from source",
    }),
    update_state: Type.Union([Type.String(), Type.Null()], {
      description:
        'where its last update stands: current, downloading, failed: <reason> or rolled_back; null when never reported',
    }),
    update_version: Type.Union([Type.String(), Type.Null()], {
      description: 'the version its last update report is about',
    }),
    update_at: NullableTime,
  },
  { additionalProperties: false },
);

/** The settings of this Spool. */
export const SettingsSchema = Type.Object(
  {
    job_document_retention_days: Type.Integer({ minimum: 1 }),
    upload_retention_days: Type.Integer({ minimum: 1 }),
    webhook_delivery_retention_days: Type.Integer({ minimum: 1 }),
    audit_retention_days: Type.Integer({ minimum: 1 }),
    notice: Type.Union([Type.String(), Type.Null()], {
      description: 'the notice on the public status page',
    }),
    pricing: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    downloads: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  },
  { additionalProperties: false },
);

/** A page of a list whose array is `items`, as the operator API's lists answer. */
export function itemsOf(item: TSchema) {
  return Type.Object(
    { items: Type.Array(item), next_cursor: Cursor },
    { additionalProperties: false },
  );
}
