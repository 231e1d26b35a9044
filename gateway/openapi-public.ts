/**
 * The OpenAPI operations of the public endpoints of `/v1` (routes/public.ts): no key, a rate limit
 * per client address, and no query parameter. gateway/openapi.ts lists them after the keyed ones.
 */
import { Type } from '@sinclair/typebox';
import type { OperationSpec, Surface } from './openapi-builder.js';
import { ENROLL_OPERATION } from './openapi-enrollments.js';

const PUBLIC_SURFACE: Surface = { auth: 'none', rateLimited: true, idempotentPosts: false };

const Level = Type.Union([
  Type.Literal('operational'),
  Type.Literal('degraded'),
  Type.Literal('outage'),
]);

const published = (what: string) =>
  Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: `${what} as the operator published them, or null when not published`,
  });

const PUBLIC_DESCRIPTION =
  'No key needed. At most 30 requests a minute per client address (429 with Retry-After beyond). Any web page may read it (CORS).';

/** The operations without a key: the public endpoints. */
export const PUBLIC_OPERATIONS: Record<string, OperationSpec> = {
  'GET /v1/public/server-key': {
    operationId: 'getServerKey',
    tag: 'Public',
    summary: 'The public key to seal content to (HPKE, RFC 9180)',
    description: PUBLIC_DESCRIPTION,
    surface: PUBLIC_SURFACE,
    success: {
      status: 200,
      description: 'the key',
      schema: Type.Object(
        {
          public_key: Type.String({
            description: 'the raw X25519 key, base64url without padding',
          }),
          algorithm: Type.Literal('HPKE-Base-X25519-SHA256-AES256GCM'),
        },
        { additionalProperties: false },
      ),
    },
    errors: ['unknown_field', 'unavailable'],
  },
  'GET /v1/public/status': {
    operationId: 'getStatus',
    tag: 'Public',
    summary: 'Whether the API and print delivery work',
    description: PUBLIC_DESCRIPTION,
    surface: PUBLIC_SURFACE,
    success: {
      status: 200,
      description: 'the status',
      schema: Type.Object(
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
    },
    errors: ['unknown_field'],
  },
  'GET /v1/public/pricing': {
    operationId: 'getPricing',
    tag: 'Public',
    summary: 'Current prices in cents',
    description: PUBLIC_DESCRIPTION,
    surface: PUBLIC_SURFACE,
    success: { status: 200, description: 'the prices', schema: published('the prices') },
    errors: ['unknown_field', 'unavailable'],
  },
  'GET /v1/public/downloads': {
    operationId: 'getDownloads',
    tag: 'Public',
    summary: 'The latest stable agent release per platform',
    description: PUBLIC_DESCRIPTION,
    surface: PUBLIC_SURFACE,
    success: {
      status: 200,
      description: 'the releases',
      schema: published('the releases'),
    },
    errors: ['unknown_field', 'unavailable'],
  },
  'POST /v1/public/enroll': ENROLL_OPERATION,
};
