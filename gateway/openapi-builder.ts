/**
 * Builds an OpenAPI 3.1 document from a table of operations. Spool serves two, built the same way:
 * the key-based API `/v1` (gateway/openapi.ts) and the operator API `/admin/v1`
 * (gateway/openapi-admin.ts). An operation states what only it knows (its id, tag, schemas, the
 * errors its handler and services can answer); what follows from how the gateway reaches it (its
 * authentication, rate limit, Idempotency-Key, body) is added here, so every operation of a kind
 * gets the same responses and headers, and a new route needs one entry in its table.
 */
import type { TSchema } from '@sinclair/typebox';
import { ERROR_CATALOGUE, type ErrorCode } from '../lib/errors.js';
import type { QuerySpec } from './query.js';
import { ErrorSchema } from './schemas.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A JSON Schema: a TypeBox schema, or a plain object with `$ref`s into the document. */
export type Schema = TSchema | Record<string, unknown>;

/** A request header an operation reads. */
export interface HeaderParameter {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

export interface Example {
  summary: string;
  value: unknown;
}

/** How a caller reaches an operation, which decides part of its answers. */
export interface Surface {
  /** `key`: an API key (401, 403, per-key rate limit); `operator`: the operator token (401). */
  auth: 'key' | 'operator' | 'none';
  /** Whether answers carry `RateLimit-*` and 429 may answer. */
  rateLimited: boolean;
  /** Whether POSTs take an `Idempotency-Key`. */
  idempotentPosts: boolean;
}

/** One operation of a document, keyed in its table by `METHOD /path/:param`. */
export interface OperationSpec {
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** The scope an API key needs (said in the description). */
  scope?: string | null;
  /** A JSON body (`schema`) or raw bytes of the given media types. */
  request?:
    | { schema: Schema; examples?: Record<string, Example>; required?: boolean }
    | { binary: readonly string[] };
  success: {
    status: number;
    description: string;
    schema?: Schema;
    binary?: readonly string[];
    example?: unknown;
    /**
     * For a 201: the template of its `Location` header, such as `/v1/orgs/{org}/jobs/{id}`; null
     * for one whose resource has no URL to read it at (an enrollment code).
     */
    location?: string | null;
  };
  /** Other answers that are not errors (a `202` that says to send the request again). */
  also?: ReadonlyArray<{ status: number; description: string; schema: Schema }>;
  /** The query parameters: the very spec the route reads its query with. */
  query?: QuerySpec;
  /** Request headers the operation reads, besides authentication. */
  headers?: readonly HeaderParameter[];
  /** Error codes the handler or the services behind it answer, besides those of the surface. */
  errors?: readonly ErrorCode[];
  /** Overrides the document's surface (the public endpoints of `/v1` take no key). */
  surface?: Surface;
}

export interface DocumentSpec {
  title: string;
  description: string;
  version: string;
  /** The surface most operations have. */
  surface: Surface;
  securityScheme: { name: string; description: string };
  tags: ReadonlyArray<{ name: string; description: string }>;
  /** Operations by `METHOD /path/:param`, in the order the document lists them. */
  operations: ReadonlyArray<[string, OperationSpec]>;
  /** Reusable schemas (`#/components/schemas/NAME`). */
  schemas: Record<string, Schema>;
}

/** `/v1/orgs/:org/jobs/:id` → `/v1/orgs/{org}/jobs/{id}` */
export function openApiPath(path: string): string {
  return path.replace(/:([a-z_]+)/g, '{$1}');
}

/**
 * The server the documents name: relative, so it is the gateway that served the document (OpenAPI
 * resolves it against the document's URL); a client generated from it takes its base URL.
 */
export const DEFAULT_SERVER = '/';

const JSON_BODY_ERRORS: ErrorCode[] = [
  'invalid',
  'unknown_field',
  'malformed_json',
  'payload_too_large',
  'unsupported_media_type',
];

/** A header whose value is a count of seconds or requests. */
const countHeader = (description: string) => ({
  description,
  schema: { type: 'integer', minimum: 0 },
});

const HEADERS = {
  'Request-Id': {
    description: 'the id of this request, as in error bodies; quote it when asking for help',
    schema: { type: 'string', format: 'uuid' },
  },
  'Retry-After': countHeader('seconds to wait before sending the same request again'),
  'RateLimit-Limit': countHeader('requests allowed in the current one-minute window'),
  'RateLimit-Remaining': countHeader('requests left in the current window'),
  'RateLimit-Reset': countHeader('seconds until one more request would be allowed'),
  'Idempotent-Replayed': {
    description:
      'true when this is the stored answer to an earlier request with the same Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
  Location: {
    description: 'the URL of the new resource',
    schema: { type: 'string', format: 'uri-reference' },
  },
} as const;

type HeaderName = keyof typeof HEADERS;

const headerRef = (name: HeaderName) => ({ $ref: `#/components/headers/${name}` });

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload too large',
  415: 'Unsupported media type',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Unavailable',
  504: 'Timeout',
};

const ERROR_MESSAGES: Partial<Record<ErrorCode, string>> = {
  invalid: 'limit must be a whole number from 1 to 200',
  unauthorized: 'the API key is not valid',
  forbidden: 'this API key lacks the jobs:write scope',
  not_found: 'no such job',
  conflict: 'a printed job cannot be cancelled',
  content_deleted: 'the document of this job is past retention',
  payload_too_large: 'the body is larger than 1048576 bytes',
  unsupported_media_type: 'send the body as JSON (Content-Type: application/json)',
  rate_limited: 'too many requests: at most 30 a minute; try again in 12 s',
  internal: 'internal error',
  unavailable: 'the jobs service is unavailable; try again',
  timeout:
    'the jobs service did not answer in time, and may have done what was asked: retry with the same Idempotency-Key, which never does it twice',
};

/** The examples that read otherwise on the operator's surface. */
const OPERATOR_MESSAGES: Partial<Record<ErrorCode, string>> = {
  unauthorized: "wrong operator token: it is not this Spool's operator token (…)",
  not_found: 'no such organization',
  conflict:
    'organization 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d is being deleted: nothing can be added to it or changed; DELETE /admin/v1/orgs/9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d again finishes its deletion',
  unavailable: 'the stations service is unavailable; try again',
  timeout:
    'the stations service did not answer in time, and may have done what was asked: retry with the same Idempotency-Key, which never does it twice',
};

/** The error codes an operation can answer, from its surface, method, path and own list. */
function errorCodes(method: Method, path: string, op: OperationSpec, surface: Surface) {
  const codes = new Set<ErrorCode>(['internal', ...(op.errors ?? [])]);
  if (surface.auth !== 'none') codes.add('unauthorized').add('unavailable');
  if (surface.auth === 'key') {
    // Every route refuses a query parameter it does not take.
    codes.add('forbidden').add('unknown_field');
    if (path.includes(':org')) codes.add('not_found');
  }
  // What would add to an organization being deleted, or change it, is refused.
  const underOrg = path.startsWith('/admin/v1/orgs/:org/');
  if (surface.auth === 'operator' && underOrg && (method === 'POST' || method === 'PATCH')) {
    codes.add('conflict');
  }
  if (surface.rateLimited) codes.add('rate_limited');
  if (op.request && 'schema' in op.request) for (const c of JSON_BODY_ERRORS) codes.add(c);
  if (op.request && 'binary' in op.request) {
    codes.add('payload_too_large').add('unsupported_media_type');
  }
  if (method === 'POST' && surface.idempotentPosts) codes.add('invalid').add('conflict');
  // What calls a service can also wait for it past the call's deadline.
  if (codes.has('unavailable')) codes.add('timeout');
  return codes;
}

function errorResponses(codes: Set<ErrorCode>, method: Method, surface: Surface) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of Object.keys(ERROR_CATALOGUE) as ErrorCode[]) {
    if (!codes.has(code)) continue;
    const status = ERROR_CATALOGUE[code].http;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const replayable = method === 'POST' && surface.idempotentPosts;
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, statusCodes]) => {
        const headers: Partial<Record<HeaderName, unknown>> = {
          'Request-Id': headerRef('Request-Id'),
        };
        // A 409 of an Idempotency-Key whose twin is still running says when to try again.
        if (status === 429 || status >= 503 || (status === 409 && replayable)) {
          headers['Retry-After'] = headerRef('Retry-After');
        }
        // The per-key limit counts after authentication, so a 401 has not been counted.
        if (surface.rateLimited && status !== 401 && status < 500) {
          headers['RateLimit-Limit'] = headerRef('RateLimit-Limit');
          headers['RateLimit-Remaining'] = headerRef('RateLimit-Remaining');
          headers['RateLimit-Reset'] = headerRef('RateLimit-Reset');
        }
        if (replayable && status < 500) {
          headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
        }
        const first = statusCodes[0] as ErrorCode;
        return [
          String(status),
          {
            description: `${STATUS_TEXT[status] ?? 'Error'}: ${statusCodes.join(', ')}`,
            headers,
            content: {
              'application/json': {
                schema: { $ref: '#/components/schemas/Error' },
                example: {
                  error: {
                    code: first,
                    message:
                      (surface.auth === 'operator' ? OPERATOR_MESSAGES[first] : undefined) ??
                      ERROR_MESSAGES[first] ??
                      first,
                    request_id: '5f0c2a7e-3b1d-4e8a-9c6f-2d4b6a8c0e1f',
                  },
                },
              },
            },
          },
        ];
      }),
  );
}

function pathParameters(path: string) {
  return [...path.matchAll(/:([a-z_]+)/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    description: m[1] === 'org' ? 'the id of the organization' : `the id of the ${m[1]}`,
    schema: { type: 'string', format: 'uuid' },
  }));
}

function successResponse(method: Method, op: OperationSpec, surface: Surface) {
  const { success } = op;
  const headers: Partial<Record<HeaderName, unknown>> = { 'Request-Id': headerRef('Request-Id') };
  if (surface.rateLimited) {
    headers['RateLimit-Limit'] = headerRef('RateLimit-Limit');
    headers['RateLimit-Remaining'] = headerRef('RateLimit-Remaining');
    headers['RateLimit-Reset'] = headerRef('RateLimit-Reset');
  }
  if (method === 'POST' && surface.idempotentPosts) {
    headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
  }
  if (success.status === 201 && success.location !== null) {
    if (!success.location) throw new Error(`${op.operationId} answers 201 without a Location`);
    headers.Location = {
      description: `the URL of the new resource: ${success.location}`,
      schema: { type: 'string', format: 'uri-reference' },
    };
  }
  const response: Record<string, unknown> = { description: success.description, headers };
  if (success.schema) {
    response.content = {
      'application/json': {
        schema: success.schema,
        ...(success.example === undefined ? {} : { example: success.example }),
      },
    };
  } else if (success.binary) {
    response.content = Object.fromEntries(
      success.binary.map((t) => [t, { schema: { type: 'string', contentMediaType: t } }]),
    );
  }
  const others = (op.also ?? []).map((other) => [
    String(other.status),
    {
      description: other.description,
      headers: { 'Request-Id': headerRef('Request-Id') },
      content: { 'application/json': { schema: other.schema } },
    },
  ]);
  return { [String(success.status)]: response, ...Object.fromEntries(others) };
}

function describe(op: OperationSpec, surface: Surface): string | undefined {
  const parts = [op.description];
  if (surface.auth === 'key') {
    parts.push(op.scope ? `Needs the \`${op.scope}\` scope.` : 'Any valid API key will do.');
  }
  const text = parts.filter((p) => p !== undefined).join('\n\n');
  return text === '' ? undefined : text;
}

/**
 * Replaces every copy of a named schema in the document by a `$ref` to it, so that generators give
 * one named type (`Job`, `Printer`) where TypeBox composed the same schema into several answers.
 */
function hoistSchemas(doc: Record<string, unknown>, named: Record<string, Schema>): void {
  const byJson = new Map<string, string>();
  for (const [name, schema] of Object.entries(named)) byJson.set(JSON.stringify(schema), name);
  const walk = (node: unknown, self?: string): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n));
    if (node === null || typeof node !== 'object') return node;
    const name = byJson.get(JSON.stringify(node));
    if (name !== undefined && name !== self) return { $ref: `#/components/schemas/${name}` };
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v)]));
  };
  doc.paths = walk(JSON.parse(JSON.stringify(doc.paths)));
  const components = doc.components as { schemas: Record<string, unknown> };
  const schemas = JSON.parse(JSON.stringify(components.schemas)) as Record<string, unknown>;
  components.schemas = Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [name, walk(schema, name)]),
  );
}

/** The document, as JSON (TypeBox's symbols dropped). */
export function buildDocument(spec: DocumentSpec, serverUrl = DEFAULT_SERVER) {
  const paths: Record<string, Record<string, unknown>> = {};
  const seen = new Set<string>();
  for (const [key, op] of spec.operations) {
    const [method, path] = key.split(' ') as [Method, string];
    if (seen.has(op.operationId)) throw new Error(`operationId ${op.operationId} is used twice`);
    seen.add(op.operationId);
    if (!spec.tags.some((t) => t.name === op.tag)) throw new Error(`unknown tag ${op.tag}`);
    const surface = op.surface ?? spec.surface;
    const operation: Record<string, unknown> = {
      operationId: op.operationId,
      summary: op.summary,
      tags: [op.tag],
      ...(describe(op, surface) === undefined ? {} : { description: describe(op, surface) }),
      ...(surface.auth === 'none' ? { security: [] } : {}),
    };
    const parameters = [
      ...pathParameters(path),
      ...Object.entries(op.query ?? {}).map(([name, q]) => ({
        name,
        description: q.description,
        schema: q.schema,
        in: 'query',
        required: false,
      })),
      ...(op.headers ?? []).map((h) => ({ ...h, in: 'header', required: false })),
      ...(method === 'POST' && surface.idempotentPosts
        ? [{ $ref: '#/components/parameters/IdempotencyKey' }]
        : []),
    ];
    if (parameters.length > 0) operation.parameters = parameters;
    if (op.request) {
      operation.requestBody =
        'schema' in op.request
          ? {
              required: op.request.required ?? true,
              content: {
                'application/json': {
                  schema: op.request.schema,
                  ...(op.request.examples ? { examples: op.request.examples } : {}),
                },
              },
            }
          : {
              required: true,
              content: Object.fromEntries(
                op.request.binary.map((t) => [
                  t,
                  { schema: { type: 'string', contentMediaType: t } },
                ]),
              ),
            };
    }
    operation.responses = {
      ...successResponse(method, op, surface),
      ...errorResponses(errorCodes(method, path, op, surface), method, surface),
    };
    const at = openApiPath(path);
    paths[at] ??= {};
    (paths[at] as Record<string, unknown>)[method.toLowerCase()] = operation;
  }
  const doc = {
    openapi: '3.1.0',
    info: {
      title: spec.title,
      version: spec.version,
      description: spec.description,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      {
        url: serverUrl,
        description: 'the Spool gateway that serves this document',
      },
    ],
    security: [{ [spec.securityScheme.name]: [] }],
    tags: spec.tags,
    paths,
    components: {
      securitySchemes: {
        [spec.securityScheme.name]: {
          type: 'http',
          scheme: 'bearer',
          description: spec.securityScheme.description,
        },
      },
      parameters: spec.surface.idempotentPosts
        ? {
            IdempotencyKey: {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              description:
                'the same key with the same request within 24 hours answers what the first answered, without doing the work again',
              schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[!-~]+$' },
              example: 'order-4711-label',
            },
          }
        : undefined,
      headers: {} as Record<string, unknown>,
      schemas: { Error: ErrorSchema, ...spec.schemas },
    },
  };
  hoistSchemas(doc as unknown as Record<string, unknown>, spec.schemas);
  // Only the headers some response refers to, so neither document lists what it never sends.
  const text = JSON.stringify(paths);
  for (const [name, header] of Object.entries(HEADERS)) {
    if (text.includes(`"#/components/headers/${name}"`)) doc.components.headers[name] = header;
  }
  return JSON.parse(JSON.stringify(doc)) as Record<string, unknown>;
}
