/**
 * The OpenAPI operations of pools of printers: those of `/v1` (gateway/openapi.ts spreads them
 * into its table) and the same at their `/admin/v1` paths (gateway/openapi-admin.ts), described
 * from the schemas that check their requests and answers.
 */

import type { OperationSpec } from './openapi-builder.js';
import { EXAMPLE_ID } from './openapi-shared.js';
import { LIST_QUERY } from './query.js';
import {
  ADMIN_POOL_CREATED,
  CreatePoolBody,
  PoolAnswer,
  PoolSchema,
  UpdatePoolBody,
} from './routes/pools.js';
import { listOf } from './schemas.js';

/** The tag of these operations, for the documents' lists of tags. */
export const POOLS_TAG = {
  name: 'Pools',
  description:
    'Pools of printers a job can name instead of one printer: Spool chooses the member, and moves the job when its printer stops',
};

const tag = POOLS_TAG.name;
const base = '/v1/orgs/:org/pools';

const POOL_EXAMPLE = {
  id: '5d4c3b2a-1908-4f7e-a6d5-c4b3a2918070',
  name: 'Warehouse labels',
  printer_ids: [EXAMPLE_ID.printer, 'e5f4a3b2-c1d0-4e9f-8a7b-6c5d4e3f2a1b'],
  strategy: 'ordered',
  failover_after: 30,
  created_at: '2026-05-01T12:00:00Z',
  updated_at: '2026-05-01T12:00:00Z',
};

/** The operations, keyed as V1_ROUTES keys them. */
export const POOL_OPERATIONS: Record<string, OperationSpec> = {
  [`POST ${base}`]: {
    operationId: 'createPool',
    tag,
    summary: 'Create a pool of printers',
    description:
      'Each of `printer_ids` must be a printer of the organization (else 400 naming `printer_ids`). A job created with `pool_id` goes to the member `strategy` chooses among those that can print it now, and waits `queued` while none can.',
    request: {
      schema: CreatePoolBody,
      examples: {
        ordered: {
          summary: 'a primary printer with a fall-back',
          value: {
            name: POOL_EXAMPLE.name,
            printer_ids: POOL_EXAMPLE.printer_ids,
            strategy: 'ordered',
          },
        },
      },
    },
    success: {
      status: 201,
      description: 'the pool',
      schema: PoolAnswer,
      example: { pool: POOL_EXAMPLE },
      location: '/v1/orgs/{org}/pools/{id}',
    },
  },
  [`GET ${base}`]: {
    operationId: 'listPools',
    tag,
    summary: 'Pools of printers, oldest first',
    query: LIST_QUERY,
    success: {
      status: 200,
      description: 'a page of pools',
      schema: listOf('items', PoolSchema),
      example: { items: [POOL_EXAMPLE], next_cursor: '' },
    },
    errors: ['invalid', 'unknown_field'],
  },
  [`GET ${base}/:id`]: {
    operationId: 'getPool',
    tag,
    summary: 'A pool of printers',
    success: {
      status: 200,
      description: 'the pool',
      schema: PoolAnswer,
      example: { pool: POOL_EXAMPLE },
    },
    errors: ['unknown_field'],
  },
  [`PATCH ${base}/:id`]: {
    operationId: 'updatePool',
    tag,
    summary: "Change a pool's name, members, strategy or failover",
    description:
      '`printer_ids` replaces the members, in the order given. Jobs already routed keep their printer.',
    request: { schema: UpdatePoolBody },
    success: {
      status: 200,
      description: 'the pool',
      schema: PoolAnswer,
      example: { pool: POOL_EXAMPLE },
    },
  },
  [`DELETE ${base}/:id`]: {
    operationId: 'deletePool',
    tag,
    summary: 'Delete a pool of printers',
    description:
      'Refused with 409 conflict while jobs of the pool wait for a member (cancel them, or move them to a printer, first). Jobs already routed keep their printer.',
    success: { status: 204, description: 'deleted' },
    errors: ['conflict', 'unknown_field'],
  },
};

/** The operations of `/v1`, at their `/admin/v1` paths, where any organization is the operator's. */
export function adminPoolOperations(): Array<[string, OperationSpec]> {
  return Object.entries(POOL_OPERATIONS).map(([key, op]) => {
    const success =
      op.success.status === 201
        ? { ...op.success, location: ADMIN_POOL_CREATED.location }
        : op.success;
    const errors = [...new Set([...(op.errors ?? []), 'not_found' as const])];
    return [key.replace(' /v1/', ' /admin/v1/'), { ...op, success, scope: null, errors }];
  });
}
