/**
 * The key-based API under `/v1` (spec §4). Each route states the scope it needs in one table, which
 * the router, the tests and the docs all read.
 */
import { Router } from '@koa/router';
import type { Middleware } from 'koa';
import type { Clock } from '../../lib/clock.js';
import type { Scope } from '../../lib/credentials.js';
import { SpoolError } from '../../lib/errors.js';
import { type OperatorToken, operatorMatcher, requireOwnOrg, requireScope } from '../auth.js';
import { childOrgCache } from '../child-orgs.js';
import type { Backends } from '../clients.js';
import type { EventStreams } from '../event-stream.js';
import { type Created, setLocation } from '../http-manners.js';
import { idempotency } from '../idempotency.js';
import type { KeyCache } from '../key-cache.js';
import { rejectUnknownParams } from '../query.js';
import { requireKeyOrSession, type SessionOptions } from '../session-auth.js';
import type { GatewayState } from '../state.js';
import { childV1Handlers } from './children.js';
import { enrollmentV1Handlers } from './enrollments.js';
import { fleetHandlers } from './fleet.js';
import { jobHandlers } from './jobs.js';
import { poolV1Handlers } from './pools.js';
import { STREAM_SCOPE, streamHandlers } from './stream.js';
import { usageV1Handlers } from './usage.js';
import { webhookV1Handlers } from './webhooks.js';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface V1Route {
  method: HttpMethod;
  path: string;
  /** The scope a key needs; null where any valid key will do. */
  scope: Scope | null;
  /** For a route answering 201: the new resource, named in its `Location` header. */
  created?: Created;
  /** A POST that changes nothing (a dry run): an Idempotency-Key is not kept for it. */
  dryRun?: true;
}

const JOB_CREATED: Created = { field: 'job', location: '/v1/orgs/{org}/jobs/{id}' };

/** A route from its key, `METHOD /path`, as the handlers and the OpenAPI table key it. */
function route(key: string, scope: Scope | null, created?: Created): V1Route {
  const [method, path] = key.split(' ') as [HttpMethod, string];
  return { method, path, scope, ...(created ? { created } : {}) };
}

/** A POST that checks and answers, changing nothing. */
const dryRun = (key: string, scope: Scope): V1Route => ({ ...route(key, scope), dryRun: true });

export const V1_ROUTES: readonly V1Route[] = [
  route('GET /v1/key', null),
  route('POST /v1/orgs/:org/jobs', 'jobs:write', JOB_CREATED),
  dryRun('POST /v1/orgs/:org/jobs/validate', 'jobs:write'),
  route('GET /v1/orgs/:org/jobs', 'jobs:read'),
  route('GET /v1/orgs/:org/jobs/:id', 'jobs:read'),
  route('POST /v1/orgs/:org/jobs/:id/cancel', 'jobs:write'),
  route('POST /v1/orgs/:org/jobs/:id/retry', 'jobs:write'),
  route('POST /v1/orgs/:org/jobs/:id/reprint', 'jobs:write', JOB_CREATED),
  route('POST /v1/orgs/:org/jobs/:id/move', 'jobs:write'),
  route('GET /v1/orgs/:org/printers', 'printers:read'),
  route('POST /v1/orgs/:org/pools', 'printers:write', {
    field: 'pool',
    location: '/v1/orgs/{org}/pools/{id}',
  }),
  route('GET /v1/orgs/:org/pools', 'printers:read'),
  route('GET /v1/orgs/:org/pools/:id', 'printers:read'),
  route('PATCH /v1/orgs/:org/pools/:id', 'printers:write'),
  route('DELETE /v1/orgs/:org/pools/:id', 'printers:write'),
  route('GET /v1/orgs/:org/locations', 'locations:read'),
  route('GET /v1/orgs/:org/locations/:id', 'locations:read'),
  route('GET /v1/orgs/:org/templates', 'jobs:write'),
  route('GET /v1/orgs/:org/jobs/:id/content', 'jobs:read'),
  route('GET /v1/orgs/:org/jobs/:id/preview', 'jobs:read'),
  route('POST /v1/orgs/:org/uploads', 'jobs:write', {
    field: 'upload',
    location: '/v1/orgs/{org}/uploads/{id}',
  }),
  route('GET /v1/orgs/:org/webhooks', 'webhooks:read'),
  route('POST /v1/orgs/:org/webhooks', 'webhooks:write', {
    field: 'endpoint',
    location: '/v1/orgs/{org}/webhooks/{id}',
  }),
  route('GET /v1/orgs/:org/webhooks/:id', 'webhooks:read'),
  route('PATCH /v1/orgs/:org/webhooks/:id', 'webhooks:write'),
  route('DELETE /v1/orgs/:org/webhooks/:id', 'webhooks:write'),
  route('POST /v1/orgs/:org/webhooks/:id/rotate', 'webhooks:write'),
  route('POST /v1/orgs/:org/webhooks/:id/test', 'webhooks:write'),
  route('GET /v1/orgs/:org/webhooks/:id/deliveries', 'webhooks:read'),
  route('POST /v1/orgs/:org/webhooks/:id/deliveries/:delivery/resend', 'webhooks:write'),
  route('POST /v1/orgs/:org/webhooks/:id/resend-failed', 'webhooks:write'),
  route('GET /v1/orgs/:org/stream', STREAM_SCOPE),
  route('POST /v1/orgs/:org/children', 'orgs:write', {
    field: 'org',
    location: '/v1/orgs/{org}/children/{id}',
  }),
  route('GET /v1/orgs/:org/children', 'orgs:read'),
  route('GET /v1/orgs/:org/children/:id', 'orgs:read'),
  route('DELETE /v1/orgs/:org/children/:id', 'orgs:write'),
  route('POST /v1/orgs/:org/enrollments', 'stations:write'),
  route('GET /v1/orgs/:org/usage', 'jobs:read'),
];

export interface V1Deps {
  cache: KeyCache;
  clock: Clock;
  /** Signed-in sessions (cookie) accepted beside API keys; without it, keys only. */
  sessions?: SessionOptions;
  /** The per-key rate limit, after authentication. */
  keyLimit: Middleware<GatewayState>;
  backends: Backends;
  bodyLimit: number;
  jobBodyLimit: number;
  maxDocumentBytes: number;
  /** This process's event streams (`GET /v1/orgs/{org}/stream`). */
  events: EventStreams;
  /** The operator token(s), only to tell one sent as an API key what it is. */
  operatorToken?: OperatorToken;
}

const keyHandlers: Record<string, Middleware<GatewayState>> = {
  'GET /v1/key': (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const key = ctx.state.key;
    if (!key) throw new SpoolError('internal', 'no key on an authenticated request');
    ctx.body = {
      id: key.id,
      org_id: key.orgId,
      org_name: key.orgName,
      live: key.live,
      scopes: key.scopes,
    };
  },
};

export function v1Router(deps: V1Deps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const isOperator = deps.operatorToken ? operatorMatcher(deps.operatorToken) : undefined;
  // A parent's key acts on its children's routes; the one place that says which are its children.
  const children = childOrgCache(deps.backends.accounts, deps.clock);
  const ownOrg = requireOwnOrg(children);
  const handlers: Partial<Record<string, Middleware<GatewayState>>> = {
    ...keyHandlers,
    ...jobHandlers(deps),
    ...fleetHandlers(deps.backends),
    ...poolV1Handlers(deps),
    ...webhookV1Handlers(deps),
    ...streamHandlers({ ...deps, ownOrg }),
    ...childV1Handlers({ ...deps, children }),
    ...enrollmentV1Handlers(deps),
    ...usageV1Handlers(deps),
  };
  for (const route of V1_ROUTES) {
    const chain: Middleware<GatewayState>[] = [
      // First, so that a 201 replayed for an Idempotency-Key names its resource too.
      ...(route.created ? [setLocation(route.created)] : []),
      requireKeyOrSession(
        {
          cache: deps.cache,
          clock: deps.clock,
          sessionIsInvalid: route.path === '/v1/key',
          ...(isOperator ? { isOperator } : {}),
        },
        deps.sessions,
      ),
      ownOrg,
      deps.keyLimit,
    ];
    if (route.scope) chain.push(requireScope(route.scope));
    if (route.method === 'POST' && !route.dryRun) {
      // The body is read here, for its fingerprint: no larger than the route itself takes.
      const limit =
        route.path === '/v1/orgs/:org/jobs'
          ? deps.jobBodyLimit
          : route.path === '/v1/orgs/:org/uploads'
            ? deps.maxDocumentBytes
            : deps.bodyLimit;
      chain.push(idempotency(deps.backends.jobs, limit));
    }
    const handler = handlers[`${route.method} ${route.path}`];
    if (!handler) throw new Error(`no handler for ${route.method} ${route.path}`);
    chain.push(handler);
    router.register(route.path, [route.method], chain);
  }
  return router;
}
