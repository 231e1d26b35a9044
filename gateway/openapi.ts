/**
 * The OpenAPI 3.1 document of every `/v1` path, served at `GET /v1/openapi.json`: the contract
 * code generators read. It is built from the route table (V1_ROUTES, which must all be described
 * here, or building throws) and the very schemas that validate requests (TypeBox schemas are JSON
 * Schema); the tests check every answer they receive against it.
 */
import { Type } from '@sinclair/typebox';
import {
  buildDocument,
  DEFAULT_SERVER,
  type OperationSpec,
  type Surface,
} from './openapi-builder.js';
import { CHILD_OPERATIONS, ORGANIZATIONS_TAG } from './openapi-children.js';
import { ENROLLMENT_OPERATIONS, STATIONS_TAG } from './openapi-enrollments.js';
import { POOL_OPERATIONS, POOLS_TAG } from './openapi-pools.js';
import { PUBLIC_OPERATIONS } from './openapi-public.js';
import { EXAMPLE_ID as ID, LOCATIONS_TAG, TEMPLATES_TAG } from './openapi-shared.js';
import { USAGE_OPERATIONS } from './openapi-usage.js';
import { WEBHOOK_OPERATIONS, WEBHOOKS_TAG } from './openapi-webhooks.js';
import { LIST_QUERY } from './query.js';
import { PRINTER_LIST_QUERY } from './routes/fleet.js';
import {
  CONTENT_KINDS,
  CONTENT_SCHEMAS,
  type ContentKind,
  DOCUMENT_TYPES,
} from './routes/job-content.js';
import {
  CreateJobBody,
  JOB_LIST_QUERY,
  MoveJobBody,
  OptionsBody,
  ReprintBody,
} from './routes/jobs.js';
import { PoolSchema } from './routes/pools.js';
import { STREAM_QUERY } from './routes/stream.js';
import { V1_ROUTES } from './routes/v1.js';
import {
  EventSchema,
  JobAnswer,
  JobList,
  JobSchema,
  JobWithEvents,
  KeyInfoSchema,
  LocationSchema,
  listOf,
  PrinterSchema,
  TemplateSchema,
  UploadSchema,
} from './schemas.js';

export { openApiPath } from './openapi-builder.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const JOB_EXAMPLE = {
  id: ID.job,
  org_id: ID.org,
  status: 'queued',
  status_detail: '',
  reference: 'order-4711',
  title: 'Shipping label',
  printer_id: ID.printer,
  station_id: ID.station,
  pool_id: null,
  priority: 50,
  region: 'default',
  live: true,
  options: { copies: 2, duplex: 'two_sided_long_edge' },
  content_type: 'application/pdf',
  size: 18234,
  attempt: 1,
  schedule_at: null,
  expire_at: null,
  reprint_of: null,
  content_deleted: false,
  confirmation: null,
  created_at: '2026-05-01T12:00:00Z',
  updated_at: '2026-05-01T12:00:00Z',
};

const CONTENT_EXAMPLES: Record<ContentKind, unknown> = {
  pdf_base64: { type: 'pdf_base64', data: 'JVBERi0xLjQKJcfsj6IK' },
  raw_base64: { type: 'raw_base64', data: 'XlhBXkZPNTAsNTBeQURO' },
  text: { type: 'text', data: 'Table 4: 2 × soup' },
  pdf_uri: { type: 'pdf_uri', uri: 'https://files.example.net/labels/4711.pdf' },
  raw_uri: { type: 'raw_uri', uri: 'https://files.example.net/labels/4711.zpl' },
  upload: { type: 'upload', upload_id: ID.upload },
  template: { type: 'template', template_id: ID.template, fields: { name: 'Ada' } },
  sealed: {
    type: 'sealed',
    content_type: 'application/pdf',
    enc: 'Bq0bTnPzGk4f1XcJ8yqvQm3bW2hS6dE9uR7tY5iO0pA',
    ciphertext: 'x9Yh3kLmN0pQrStUvWxYz1a2B3c4D5e6F7g8H9i0J1k',
  },
};

/** The job `content` as generators should see it: one schema per kind, told apart by `type`. */
const JobContent = {
  description: 'the document to print, by one of several kinds',
  oneOf: CONTENT_KINDS.map((k) => ref(`JobContent_${k}`)),
  discriminator: {
    propertyName: 'type',
    mapping: Object.fromEntries(
      CONTENT_KINDS.map((k) => [k, `#/components/schemas/JobContent_${k}`]),
    ),
  },
};

/** CreateJobBody with its `content` as the oneOf above. */
const CreateJobRequest = {
  ...CreateJobBody,
  properties: {
    ...CreateJobBody.properties,
    content: ref('JobContent'),
    options: ref('PrintOptions'),
  },
};

const jobAnswer = {
  description: 'the job',
  schema: ref('JobAnswer'),
  example: { job: JOB_EXAMPLE },
};

const V1_SURFACE: Surface = { auth: 'key', rateLimited: true, idempotentPosts: true };

/**
 * Every operation of `/v1` by `METHOD /path`. The routes with a key are those of V1_ROUTES; a
 * route added there needs an entry here (building the document throws otherwise).
 */
export const V1_OPERATIONS: Record<string, OperationSpec> = {
  'GET /v1/key': {
    operationId: 'getKey',
    tag: 'Keys',
    summary: 'The calling API key',
    description: 'A signed-in console session answers 400 here rather than 401.',
    success: {
      status: 200,
      description: 'the key',
      schema: KeyInfoSchema,
      example: {
        id: ID.key,
        org_id: ID.org,
        org_name: 'Acme Print',
        live: true,
        scopes: ['jobs:write', 'jobs:read'],
      },
    },
    errors: ['invalid'],
  },
  'POST /v1/orgs/:org/jobs': {
    operationId: 'createJob',
    tag: 'Jobs',
    summary: 'Create a print job',
    description:
      'The job starts `queued`, or `scheduled` with a future `schedule_at`, or `held` with `hold: true`. With an `Idempotency-Key`, the same request within 24 hours answers the first job.',
    request: {
      schema: ref('CreateJobRequest'),
      examples: Object.fromEntries(
        CONTENT_KINDS.map((k) => [
          k,
          {
            summary: `content of type ${k}`,
            value: {
              printer_id: ID.printer,
              reference: 'order-4711',
              content: CONTENT_EXAMPLES[k],
              ...(k === 'pdf_base64' ? { title: 'Shipping label', options: { copies: 2 } } : {}),
            },
          },
        ]),
      ),
    },
    success: { status: 201, ...jobAnswer, description: 'the new job' },
    errors: ['content_deleted'],
  },
  'POST /v1/orgs/:org/jobs/validate': {
    operationId: 'validateJob',
    tag: 'Jobs',
    summary: 'Check a job without creating it',
    description:
      "A creation's dry run: the same body, checked as `POST …/jobs` checks it (the document, the printer or pool and whether it can honour the options, a test key's prints of the day), answering the error the creation would. Nothing is created, stored or counted, and an `Idempotency-Key` is not kept.",
    request: {
      schema: ref('CreateJobRequest'),
      examples: {
        text: {
          summary: 'a text job for a printer',
          value: { printer_id: ID.printer, content: CONTENT_EXAMPLES.text },
        },
      },
    },
    success: {
      status: 200,
      description: 'the job would be created: the printer or the pool it names',
      schema: Type.Union([
        Type.Object(
          { valid: Type.Literal(true), printer_id: Type.String() },
          { additionalProperties: false },
        ),
        Type.Object(
          { valid: Type.Literal(true), pool_id: Type.String() },
          { additionalProperties: false },
        ),
      ]),
      example: { valid: true, printer_id: ID.printer },
    },
    errors: ['content_deleted'],
  },
  'GET /v1/orgs/:org/jobs': {
    operationId: 'listJobs',
    tag: 'Jobs',
    summary: 'List jobs, newest first',
    query: JOB_LIST_QUERY,
    success: {
      status: 200,
      description: 'a page of jobs, with counts by status',
      schema: JobList,
      example: { items: [JOB_EXAMPLE], next_cursor: '', counts: { queued: 1 } },
    },
    errors: ['invalid', 'unknown_field'],
  },
  'GET /v1/orgs/:org/jobs/:id': {
    operationId: 'getJob',
    tag: 'Jobs',
    summary: 'A job and its events',
    success: {
      status: 200,
      description: 'the job and every change it went through, oldest first',
      schema: JobWithEvents,
      example: {
        job: JOB_EXAMPLE,
        events: [
          {
            at: '2026-05-01T12:00:00Z',
            status: 'queued',
            detail: '',
            actor: `api_key:${ID.key}`,
          },
        ],
      },
    },
    errors: ['unknown_field'],
  },
  'POST /v1/orgs/:org/jobs/:id/cancel': {
    operationId: 'cancelJob',
    tag: 'Jobs',
    summary: 'Cancel a scheduled, held, queued or sent job',
    description: 'A job in another status answers 409 conflict.',
    request: { schema: ref('EmptyBody'), required: false },
    success: { status: 200, ...jobAnswer, description: 'the cancelled job' },
  },
  'POST /v1/orgs/:org/jobs/:id/retry': {
    operationId: 'retryJob',
    tag: 'Jobs',
    summary: 'Queue a failed or held job again',
    description: 'A job in another status answers 409 conflict.',
    request: { schema: ref('EmptyBody'), required: false },
    success: { status: 200, ...jobAnswer, description: 'the queued job' },
  },
  'POST /v1/orgs/:org/jobs/:id/reprint': {
    operationId: 'reprintJob',
    tag: 'Jobs',
    summary: 'A new job with the same content and options',
    description: 'A job whose document is past retention answers 410 content_deleted.',
    request: { schema: ReprintBody, required: false },
    success: {
      status: 201,
      ...jobAnswer,
      description: 'the new job',
    },
    errors: ['content_deleted'],
  },
  'POST /v1/orgs/:org/jobs/:id/move': {
    operationId: 'moveJob',
    tag: 'Jobs',
    summary: 'Send a queued, scheduled or held job to another printer',
    description:
      'The printer must be one of the organization that can honour the job options (else 400 naming `printer_id`). A pool job moved to a printer outside its pool leaves the pool. A sent or finished job answers 409 conflict: a job a station has acknowledged is never moved.',
    request: {
      schema: MoveJobBody,
      examples: { move: { summary: 'another printer', value: { printer_id: ID.printer } } },
    },
    success: { status: 200, ...jobAnswer, description: 'the job, on its new printer' },
  },
  'GET /v1/orgs/:org/jobs/:id/content': {
    operationId: 'getJobContent',
    tag: 'Jobs',
    summary: "The job's document",
    description:
      'Answers 410 content_deleted after retention, and 403 forbidden for sealed content, which is never served back.',
    success: { status: 200, binary: DOCUMENT_TYPES, description: 'the document bytes' },
    errors: ['unknown_field', 'content_deleted'],
  },
  'GET /v1/orgs/:org/jobs/:id/preview': {
    operationId: 'getJobPreview',
    tag: 'Jobs',
    summary: 'An image of the first page of a PDF, or the text of a text job',
    description:
      'Answers 410 content_deleted after retention, and 403 forbidden for sealed content, which is never served back; raw documents, and PDFs that cannot be rendered, have no preview (404). Each jobs replica makes two previews at once and keeps eight waiting: beyond, or when one takes over 20 s, 503 with Retry-After.',
    success: { status: 200, binary: ['image/png', 'text/plain'], description: 'the preview' },
    errors: ['invalid', 'unknown_field', 'content_deleted'],
  },
  'POST /v1/orgs/:org/uploads': {
    operationId: 'createUpload',
    tag: 'Uploads',
    summary: 'Upload a document to print later',
    description:
      'Send the bytes as the body with their Content-Type; print them with content `{type: "upload", upload_id}`. Kept 7 days by default.',
    request: { binary: DOCUMENT_TYPES },
    success: {
      status: 201,
      description: 'the upload',
      schema: Type.Object({ upload: UploadSchema }, { additionalProperties: false }),
      example: {
        upload: {
          id: ID.upload,
          content_type: 'application/pdf',
          size: 18234,
          sha256: 'a'.repeat(64),
          created_at: '2026-05-01T12:00:00Z',
        },
      },
    },
  },
  'GET /v1/orgs/:org/printers': {
    operationId: 'listPrinters',
    tag: 'Printers',
    summary: 'Printers, as their stations report them',
    query: PRINTER_LIST_QUERY,
    success: {
      status: 200,
      description: 'a page of printers',
      schema: listOf('printers', PrinterSchema),
      example: {
        printers: [
          {
            id: ID.printer,
            name: 'front-desk',
            station_id: ID.station,
            location_id: ID.location,
            region: 'default',
            status: 'ready',
            detail: '',
            station_online: true,
            capabilities: {
              paper_sizes: ['A4', 'Letter'],
              duplex: true,
              color: false,
              copies: true,
              trays: ['main', 'manual'],
              document_formats: ['application/pdf', 'image/pwg-raster'],
            },
            updated_at: '2026-05-01T12:00:00Z',
          },
        ],
        next_cursor: '',
      },
    },
    errors: ['invalid', 'unknown_field'],
  },
  'GET /v1/orgs/:org/locations': {
    operationId: 'listLocations',
    tag: 'Locations',
    summary: 'Locations',
    query: LIST_QUERY,
    success: {
      status: 200,
      description: 'a page of locations',
      schema: listOf('locations', LocationSchema),
    },
    errors: ['invalid', 'unknown_field'],
  },
  'GET /v1/orgs/:org/locations/:id': {
    operationId: 'getLocation',
    tag: 'Locations',
    summary: 'A location',
    success: {
      status: 200,
      description: 'the location',
      schema: Type.Object({ location: LocationSchema }, { additionalProperties: false }),
      example: {
        location: {
          id: ID.location,
          name: 'Berlin shop',
          address: 'Torstraße 1, Berlin',
          timezone: 'Europe/Berlin',
          created_at: '2026-05-01T12:00:00Z',
        },
      },
    },
    errors: ['unknown_field'],
  },
  'GET /v1/orgs/:org/templates': {
    operationId: 'listTemplates',
    tag: 'Templates',
    summary: 'Templates jobs can be made from',
    query: LIST_QUERY,
    success: {
      status: 200,
      description: 'a page of templates',
      schema: listOf('templates', TemplateSchema),
    },
    errors: ['invalid', 'unknown_field'],
  },
  ...POOL_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
  ...CHILD_OPERATIONS,
  ...ENROLLMENT_OPERATIONS,
  ...USAGE_OPERATIONS,
  'GET /v1/orgs/:org/stream': {
    operationId: 'streamEvents',
    tag: 'Events',
    summary: "The organization's events as they happen (Server-Sent Events)",
    description:
      "A `text/event-stream` that stays open. Each message has `id:` (the event's opaque id), `event:` (its type) and `data:` (the JSON body a webhook delivery of the event carries: `{type, created_at, org_id, data}`). A comment line comes every 15 seconds. Reconnecting with `Last-Event-ID` sends every event of the organization after that id that is under 24 hours old, then live ones. A client that reads too slowly, and every stream of a gateway that shuts down, is ended; reconnect with `Last-Event-ID` to go on.",
    query: STREAM_QUERY,
    headers: [
      {
        name: 'Last-Event-ID',
        description: 'the id of the last message received; the stream goes on after it',
        schema: { type: 'string' },
      },
    ],
    success: {
      status: 200,
      binary: ['text/event-stream'],
      description: 'the event stream, open until the client or the gateway ends it',
    },
    errors: ['invalid', 'unknown_field'],
  },
};

/** The document; built once per process. */
export function buildOpenApi(serverUrl = DEFAULT_SERVER): Record<string, unknown> {
  const operations: Array<[string, OperationSpec]> = [];
  for (const route of V1_ROUTES) {
    const key = `${route.method} ${route.path}`;
    const op = V1_OPERATIONS[key];
    if (!op) throw new Error(`no OpenAPI description for ${key}`);
    const success = route.created
      ? { ...op.success, location: route.created.location }
      : op.success;
    operations.push([key, { ...op, scope: route.scope, success }]);
  }
  operations.push(...Object.entries(PUBLIC_OPERATIONS));
  return buildDocument(
    {
      title: 'Spool print job API',
      version: '1',
      description:
        'Send print jobs to printers attached to stations, and follow them until they print. Authenticate with an API key as `Authorization: Bearer svc_live_…` (or `svc_test_…`). Errors answer `{"error": {"code", "message", "param"?, "request_id"}}`.',
      surface: V1_SURFACE,
      securityScheme: { name: 'apiKey', description: 'an API key: svc_live_… or svc_test_…' },
      tags: [
        {
          name: 'Jobs',
          description: 'Print jobs: create them, follow them, cancel, retry, reprint',
        },
        { name: 'Uploads', description: 'Documents uploaded before the jobs that print them' },
        { name: 'Printers', description: 'Printers, as the agents on the stations report them' },
        POOLS_TAG,
        STATIONS_TAG,
        LOCATIONS_TAG,
        TEMPLATES_TAG,
        { name: 'Keys', description: 'The calling API key' },
        WEBHOOKS_TAG,
        ORGANIZATIONS_TAG,
        {
          name: 'Events',
          description:
            "The organization's events as a stream (Server-Sent Events), as webhooks carry them",
        },
        { name: 'Public', description: 'Endpoints that need no key' },
      ],
      operations,
      schemas: {
        CreateJobRequest,
        JobContent,
        ...Object.fromEntries(CONTENT_KINDS.map((k) => [`JobContent_${k}`, CONTENT_SCHEMAS[k]])),
        PrintOptions: OptionsBody,
        EmptyBody: Type.Object({}, { additionalProperties: false }),
        Job: JobSchema,
        JobEvent: EventSchema,
        JobAnswer,
        Printer: PrinterSchema,
        Pool: PoolSchema,
        Location: LocationSchema,
        Template: TemplateSchema,
        Upload: UploadSchema,
        KeyInfo: KeyInfoSchema,
      },
    },
    serverUrl,
  );
}
