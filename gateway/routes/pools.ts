/**
 * Pools of printers (DESIGN §5, "Pools and routing"), as one set of handlers that the key-based
 * API (`/v1/orgs/{org}/pools…`, `printers:read` and `printers:write`) and the operator API
 * (`/admin/v1/orgs/{org}/pools…`) both mount, so the two answer alike. The organization is the
 * one in the path: on `/v1`, `requireOwnOrg` has checked it against the key; on `/admin/v1` it is
 * the operator's to choose. The jobs service keeps the pools and checks their members with the
 * stations service.
 */
import type { Router } from '@koa/router';
import { Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import {
  MAX_FAILOVER_AFTER_S,
  MAX_POOL_MEMBERS,
  MAX_POOL_NAME_LENGTH,
  POOL_STRATEGIES,
} from '../../lib/contracts/pools.js';
import { poolView } from '../../lib/resource-views.js';
import { body, changes } from '../body.js';
import type { Backends } from '../clients.js';
import { type Created, setLocation } from '../http-manners.js';
import { LIST_QUERY, readQuery, rejectUnknownParams } from '../query.js';
import type { GatewayState } from '../state.js';
import { param } from './context.js';

const Name = Type.String({
  minLength: 1,
  maxLength: MAX_POOL_NAME_LENGTH,
  description: `a name of 1 to ${MAX_POOL_NAME_LENGTH} characters`,
});

const PrinterIds = Type.Array(
  Type.String({ maxLength: 64, description: 'the id of a printer of the organization' }),
  {
    minItems: 1,
    maxItems: MAX_POOL_MEMBERS,
    uniqueItems: true,
    description: `1 to ${MAX_POOL_MEMBERS} distinct ids of printers of the organization, in order: \`ordered\` tries them first to last`,
  },
);

const Strategy = Type.Union(
  POOL_STRATEGIES.map((s) => Type.Literal(s)),
  {
    description:
      'least_queued (the default): the member with the fewest unfinished jobs; ordered: the first member in printer_ids that can print the job',
  },
);

const FailoverAfter = Type.Integer({
  minimum: 0,
  maximum: MAX_FAILOVER_AFTER_S,
  description:
    'seconds a chosen printer may stay unable to print before its jobs no station has acknowledged move to another member; 0 never (default 30)',
});

export const CreatePoolBody = Type.Object(
  {
    name: Name,
    printer_ids: PrinterIds,
    strategy: Type.Optional(Strategy),
    failover_after: Type.Optional(FailoverAfter),
  },
  { additionalProperties: false },
);

/** A pool's changes: any of what it is created with; `printer_ids` replaces the members. */
export const UpdatePoolBody = Type.Partial(CreatePoolBody);

const Id = Type.String({ format: 'uuid' });
const Time = Type.String({ format: 'date-time', description: 'RFC 3339, UTC' });

/** The answer shape of `poolView`, for the OpenAPI documents. */
export const PoolSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    printer_ids: Type.Array(Id, {
      description:
        'its members in order; a printer deleted since leaves the pools it was in, so this may be empty',
    }),
    strategy: Type.Union(POOL_STRATEGIES.map((s) => Type.Literal(s))),
    failover_after: Type.Integer({
      minimum: 0,
      maximum: MAX_FAILOVER_AFTER_S,
      description: 'seconds; 0 never fails over',
    }),
    created_at: Time,
    updated_at: Time,
  },
  { additionalProperties: false },
);

/** `{pool}` */
export const PoolAnswer = Type.Object({ pool: PoolSchema }, { additionalProperties: false });

type Handler = Middleware<GatewayState>;

/** The operations on pools, named as the OpenAPI documents name them. */
export type PoolOperation = 'createPool' | 'listPools' | 'getPool' | 'updatePool' | 'deletePool';

export interface PoolHandlerDeps {
  backends: Backends;
  bodyLimit: number;
}

/** The handlers; each reads the organization, and the pool, from the path. */
export function poolHandlers(deps: PoolHandlerDeps): Record<PoolOperation, Handler> {
  const { jobs } = deps.backends;
  const ids = (ctx: Parameters<Handler>[0]) => ({
    orgId: param(ctx, 'org'),
    poolId: param(ctx, 'id'),
  });
  return {
    createPool: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, CreatePoolBody, deps.bodyLimit);
      const { pool } = await jobs.createPool({
        orgId: param(ctx, 'org'),
        name: req.name,
        printerIds: req.printer_ids,
        strategy: req.strategy ?? '',
        failoverAfter: req.failover_after,
      });
      ctx.status = 201;
      ctx.body = { pool: poolView(pool) };
    },

    listPools: async (ctx) => {
      const page = readQuery(ctx.query, LIST_QUERY);
      const res = await jobs.listPools({ orgId: param(ctx, 'org'), ...page });
      ctx.body = { items: res.items.map(poolView), next_cursor: res.nextCursor };
    },

    getPool: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const { pool } = await jobs.getPool(ids(ctx));
      ctx.body = { pool: poolView(pool) };
    },

    updatePool: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await changes(ctx, UpdatePoolBody, deps.bodyLimit);
      const { pool } = await jobs.updatePool({
        ...ids(ctx),
        name: req.name,
        setPrinterIds: req.printer_ids !== undefined,
        printerIds: req.printer_ids ?? [],
        strategy: req.strategy,
        failoverAfter: req.failover_after,
      });
      ctx.body = { pool: poolView(pool) };
    },

    deletePool: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      await jobs.deletePool(ids(ctx));
      ctx.status = 204;
    },
  };
}

/** The `/v1` routes' handlers, keyed as `V1_ROUTES` keys them. */
export function poolV1Handlers(deps: PoolHandlerDeps): Record<string, Handler> {
  const h = poolHandlers(deps);
  return {
    'POST /v1/orgs/:org/pools': h.createPool,
    'GET /v1/orgs/:org/pools': h.listPools,
    'GET /v1/orgs/:org/pools/:id': h.getPool,
    'PATCH /v1/orgs/:org/pools/:id': h.updatePool,
    'DELETE /v1/orgs/:org/pools/:id': h.deletePool,
  };
}

/** What the 201 of a pool's creation under `/admin/v1` creates, named in its `Location`. */
export const ADMIN_POOL_CREATED: Created = {
  field: 'pool',
  location: '/admin/v1/orgs/{org}/pools/{id}',
};

/**
 * Adds the pool routes to the operator API's router (prefix `/admin/v1`), whose guards (the
 * operator token; no change to an organization being deleted, which looks the organization up for
 * every POST and PATCH) run first.
 */
export function addPoolAdminRoutes(
  router: Router<GatewayState>,
  deps: PoolHandlerDeps,
): Router<GatewayState> {
  const h = poolHandlers(deps);
  // The jobs service keeps no organizations: a list of one that does not exist would read as
  // "it has none", so the list asks the accounts service first.
  const knownOrg: Handler = async (ctx, next) => {
    await deps.backends.accounts.getOrg({ orgId: param(ctx, 'org') });
    await next();
  };
  router.post('/orgs/:org/pools', setLocation(ADMIN_POOL_CREATED), h.createPool);
  router.get('/orgs/:org/pools', knownOrg, h.listPools);
  router.get('/orgs/:org/pools/:id', h.getPool);
  router.patch('/orgs/:org/pools/:id', h.updatePool);
  router.delete('/orgs/:org/pools/:id', h.deletePool);
  return router;
}
