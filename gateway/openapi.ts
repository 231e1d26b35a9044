/**
 * The OpenAPI 3.1 document of every `/v1` path, built from the route table and the very schemas
 * that validate requests (TypeBox schemas are JSON Schema), served at `GET /v1/openapi.json`.
 */
import type { TSchema } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import { ERROR_CATALOGUE } from '../lib/errors.js';
import { CreateJobBody, ReprintBody } from './routes/jobs.js';
import { V1_ROUTES } from './routes/v1.js';
import {
  ErrorSchema,
  JobAnswer,
  JobList,
  JobWithEvents,
  KeyInfoSchema,
  LocationSchema,
  listOf,
  PrinterSchema,
  TemplateSchema,
  UploadSchema,
} from './schemas.js';

interface Operation {
  summary: string;
  request?: { schema: TSchema } | { binary: string[] };
  success: { status: number; schema?: TSchema; binary?: string[]; description?: string };
  query?: Array<{ name: string; description: string; schema: object }>;
}

const listQuery = [
  {
    name: 'limit',
    description: 'page size, 1 to 200 (default 50)',
    schema: { type: 'integer', minimum: 1, maximum: 200 },
  },
  { name: 'cursor', description: 'next_cursor of the previous page', schema: { type: 'string' } },
];

const DOCUMENT_TYPES = ['application/pdf', 'application/octet-stream', 'text/plain'];

const OPERATIONS: Record<string, Operation> = {
  'GET /v1/key': {
    summary: 'The calling API key',
    success: { status: 200, schema: KeyInfoSchema },
  },
  'POST /v1/orgs/:org/jobs': {
    summary: 'Create a print job',
    request: { schema: CreateJobBody },
    success: { status: 201, schema: JobAnswer },
  },
  'GET /v1/orgs/:org/jobs': {
    summary: 'List jobs, newest first',
    query: [
      ...listQuery,
      { name: 'status', description: 'a comma list of statuses', schema: { type: 'string' } },
      {
        name: 'reference',
        description: 'the reference given at creation',
        schema: { type: 'string' },
      },
      {
        name: 'printer_id',
        description: 'a printer id',
        schema: { type: 'string', format: 'uuid' },
      },
      {
        name: 'station_id',
        description: 'a station id',
        schema: { type: 'string', format: 'uuid' },
      },
      {
        name: 'created_after',
        description: 'RFC 3339',
        schema: { type: 'string', format: 'date-time' },
      },
      {
        name: 'created_before',
        description: 'RFC 3339',
        schema: { type: 'string', format: 'date-time' },
      },
    ],
    success: { status: 200, schema: JobList },
  },
  'GET /v1/orgs/:org/jobs/:id': {
    summary: 'A job and its events',
    success: { status: 200, schema: JobWithEvents },
  },
  'POST /v1/orgs/:org/jobs/:id/cancel': {
    summary: 'Cancel a scheduled, held, queued or sent job',
    success: { status: 200, schema: JobAnswer },
  },
  'POST /v1/orgs/:org/jobs/:id/retry': {
    summary: 'Queue a failed or held job again',
    success: { status: 200, schema: JobAnswer },
  },
  'POST /v1/orgs/:org/jobs/:id/reprint': {
    summary: 'A new job with the same content and options',
    request: { schema: ReprintBody },
    success: { status: 201, schema: JobAnswer },
  },
  'GET /v1/orgs/:org/jobs/:id/content': {
    summary: "The job's document; 410 after retention",
    success: { status: 200, binary: DOCUMENT_TYPES, description: 'the document bytes' },
  },
  'GET /v1/orgs/:org/jobs/:id/preview': {
    summary: 'An image of the first page of a PDF, or the text of a text job; 410 after retention',
    success: { status: 200, binary: ['image/png', 'text/plain'], description: 'the preview' },
  },
  'POST /v1/orgs/:org/uploads': {
    summary: 'Upload a document to print later (content type upload); kept 7 days by default',
    request: { binary: DOCUMENT_TYPES },
    success: {
      status: 201,
      schema: Type.Object({ upload: UploadSchema }, { additionalProperties: false }),
    },
  },
  'GET /v1/orgs/:org/printers': {
    summary: 'Printers, as their stations report them',
    query: [
      ...listQuery,
      {
        name: 'station_id',
        description: 'a station id',
        schema: { type: 'string', format: 'uuid' },
      },
      {
        name: 'location_id',
        description: 'a location id',
        schema: { type: 'string', format: 'uuid' },
      },
    ],
    success: { status: 200, schema: listOf('printers', PrinterSchema) },
  },
  'GET /v1/orgs/:org/locations': {
    summary: 'Locations',
    query: listQuery,
    success: { status: 200, schema: listOf('locations', LocationSchema) },
  },
  'GET /v1/orgs/:org/locations/:id': {
    summary: 'A location',
    success: {
      status: 200,
      schema: Type.Object({ location: LocationSchema }, { additionalProperties: false }),
    },
  },
  'GET /v1/orgs/:org/templates': {
    summary: 'Templates jobs can be made from',
    query: listQuery,
    success: { status: 200, schema: listOf('templates', TemplateSchema) },
  },
};

const Level = Type.Union([
  Type.Literal('operational'),
  Type.Literal('degraded'),
  Type.Literal('outage'),
]);

const PUBLIC_OPERATIONS: Array<[string, string, TSchema]> = [
  [
    '/v1/public/server-key',
    'The public key to seal content to (HPKE, RFC 9180)',
    Type.Object(
      {
        public_key: Type.String({ description: 'the raw X25519 key, base64url without padding' }),
        algorithm: Type.Literal('HPKE-Base-X25519-SHA256-AES256GCM'),
      },
      { additionalProperties: false },
    ),
  ],
  [
    '/v1/public/status',
    'Whether the API and print delivery work',
    Type.Object(
      {
        status: Level,
        components: Type.Array(
          Type.Object({ name: Type.String(), status: Level }, { additionalProperties: false }),
        ),
        notice: Type.Union([Type.String(), Type.Null()]),
        checked_at: Type.String({ format: 'date-time' }),
      },
      { additionalProperties: false },
    ),
  ],
  [
    '/v1/public/pricing',
    'Current prices in cents; null when not published',
    Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  ],
  [
    '/v1/public/downloads',
    'The latest stable agent release per platform; null when none is published',
    Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  ],
];

/** `/v1/orgs/:org/jobs/:id` → `/v1/orgs/{org}/jobs/{id}` */
export function openApiPath(path: string): string {
  return path.replace(/:([a-z_]+)/g, '{$1}');
}

const ERROR_STATUSES = [...new Set(Object.values(ERROR_CATALOGUE).map((e) => e.http))].sort();

function errorResponses() {
  return Object.fromEntries(
    ERROR_STATUSES.map((status) => [
      String(status),
      {
        description: Object.entries(ERROR_CATALOGUE)
          .filter(([, e]) => e.http === status)
          .map(([code]) => code)
          .join(', '),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
}

/** The document; built once per process. */
export function buildOpenApi(serverUrl = '/'): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of V1_ROUTES) {
    const key = `${route.method} ${route.path}`;
    const op = OPERATIONS[key];
    if (!op) throw new Error(`no OpenAPI description for ${key}`);
    const params = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string', format: 'uuid' },
    }));
    const operation: Record<string, unknown> = {
      summary: op.summary,
      operationId: key.replace(/[^A-Za-z]+/g, '_').replace(/^_|_$/g, ''),
      parameters: [
        ...params,
        ...(op.query ?? []).map((q) => ({ ...q, in: 'query', required: false })),
        ...(route.method === 'POST'
          ? [
              {
                name: 'Idempotency-Key',
                in: 'header',
                required: false,
                description: 'the same key and request within 24 hours answer the first answer',
                schema: { type: 'string', maxLength: 255 },
              },
            ]
          : []),
      ],
      responses: {
        [String(op.success.status)]: {
          description: op.success.description ?? 'success',
          content: op.success.schema
            ? { 'application/json': { schema: op.success.schema } }
            : Object.fromEntries(
                (op.success.binary ?? []).map((t) => [
                  t,
                  { schema: { type: 'string', contentMediaType: t } },
                ]),
              ),
        },
        ...errorResponses(),
      },
      ...(route.scope ? { description: `Needs the ${route.scope} scope.` } : {}),
    };
    if (op.request) {
      operation.requestBody = {
        required: true,
        content:
          'schema' in op.request
            ? { 'application/json': { schema: op.request.schema } }
            : Object.fromEntries(
                op.request.binary.map((t) => [
                  t,
                  { schema: { type: 'string', contentMediaType: t } },
                ]),
              ),
      };
    }
    const path = openApiPath(route.path);
    paths[path] ??= {};
    (paths[path] as Record<string, unknown>)[route.method.toLowerCase()] = operation;
  }
  for (const [path, summary, schema] of PUBLIC_OPERATIONS) {
    paths[path] = {
      get: {
        summary,
        operationId: `public_${path.split('/').pop()?.replace(/-/g, '_')}`,
        security: [],
        description:
          'No key needed. At most 30 requests a minute per client address (429 with Retry-After beyond).',
        responses: {
          '200': { description: 'success', content: { 'application/json': { schema } } },
          ...errorResponses(),
        },
      },
    };
  }
  paths['/v1/openapi.json'] = {
    get: {
      summary: 'This document',
      operationId: 'openapi',
      security: [],
      responses: {
        '200': {
          description: 'the OpenAPI 3.1 document',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Spool print job API',
      version: '1',
      description:
        'Send print jobs to printers attached to stations, and follow them until they print.',
    },
    servers: [{ url: serverUrl }],
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'svc_live_… or svc_test_…' },
      },
      schemas: { Error: ErrorSchema },
    },
    paths,
  };
}
