/**
 * The gateway's Koa application: the only public HTTP surface. It holds no state of its own beyond
 * a cache of keys, and never touches the database; everything it answers comes from the services
 * over gRPC.
 */
import { randomUUID } from 'node:crypto';
import type { ObjectStore } from '@nats-io/obj';
import Koa, { type Middleware } from 'koa';
import type { Clock } from '../lib/clock.js';
import { SpoolError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { accessLogMiddleware } from './access-log.js';
import { auditMiddleware } from './audit.js';
import type { OperatorToken } from './auth.js';
import type { Backends } from './clients.js';
import { consoleStatic } from './console-static.js';
import { docsPages } from './docs-page.js';
import { errorMiddleware } from './errors.js';
import type { EventStreams } from './event-stream.js';
import { fixedPath, type KnownPath, methodNotAllowed, pathsOf } from './http-manners.js';
import type { KeyCache } from './key-cache.js';
import { buildOpenApi } from './openapi.js';
import { assertDescribed, buildAdminOpenApi } from './openapi-admin.js';
import { adminRouter } from './routes/admin.js';
import { adminFleetRouter } from './routes/admin-fleet.js';
import { consoleRouter } from './routes/console.js';
import { publicRouter } from './routes/public.js';
import { adminReleasesRouter, agentReleasesRouter } from './routes/releases.js';
import { v1Router } from './routes/v1.js';
import { webhooksAdminRouter } from './routes/webhooks-admin.js';
import type { SessionOptions } from './session-auth.js';
import type { GatewayState } from './state.js';
import type { PublicStatus } from './status.js';
import { telemetryMiddleware } from './telemetry.js';

export interface AppDeps {
  backends: Backends;
  /** Agent release tarballs: their bucket, opened on first use, and the downloads' rate limit. */
  agentReleases: { store: () => Promise<ObjectStore>; limit: Middleware<GatewayState> };
  cache: KeyCache;
  clock: Clock;
  logger: Logger;
  operatorToken: OperatorToken;
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** Largest document a job may carry, in bytes. */
  maxDocumentBytes: number;
  /**
   * Proxies of the operator's in front adding to X-Forwarded-For (TRUST_PROXY): the client address
   * is the one the outermost saw. 0: the connection's address.
   */
  trustProxy: number;
  /** The public status page's checker. */
  status: { check(): Promise<PublicStatus> };
  /** The rate limit of the public endpoints (per client address, shared by replicas). */
  publicLimit: Middleware<GatewayState>;
  /** The tighter limit of enrollment codes tried (`POST /v1/public/enroll`), per client address. */
  enrollLimit: Middleware<GatewayState>;
  /** The rate limit of authenticated requests (per key). */
  keyLimit: Middleware<GatewayState>;
  /** The rate limit of the console's API (per signed-in session). */
  sessionLimit: Middleware<GatewayState>;
  /** Whether this replica should receive traffic; false while starting or draining. */
  ready(): Promise<boolean>;
  /** The event streams of `GET /v1/orgs/{org}/stream`. */
  events: EventStreams;
  /** Signed-in sessions of the console (cookie, CSRF, session cache). */
  sessions: SessionOptions;
}

/** The paths whose answers are a credential's own: never kept by a cache. */
const PRIVATE_PATHS = /^\/(v1\/orgs\/|v1\/key$|admin\/v1\/|console\/v1\/)/;

/**
 * Headers on every answer: no browser reads one as another type than it says, and an answer to a
 * key, a session or the operator token is stored by no cache (a proxy's, a browser's disk).
 */
const hardeningHeaders: Middleware<GatewayState> = async (ctx, next) => {
  ctx.set('X-Content-Type-Options', 'nosniff');
  await next();
  // A stream's headers went out already (Koa then sets nothing); one that set its own keeps it.
  if (PRIVATE_PATHS.test(ctx.path) && !ctx.response.get('Cache-Control')) {
    ctx.set('Cache-Control', 'no-store');
  }
};

export function createApp(deps: AppDeps): Koa<GatewayState> {
  // Only the last `trustProxy` entries of X-Forwarded-For were written by the operator's proxies;
  // the client's address is the first of them, whatever the client put before.
  const app = new Koa<GatewayState>({
    proxy: deps.trustProxy > 0,
    maxIpsCount: deps.trustProxy,
  });
  app.silent = true;

  app.use(telemetryMiddleware());
  app.use(async (ctx, next) => {
    ctx.state.requestId = randomUUID();
    ctx.set('Request-Id', ctx.state.requestId);
    await next();
  });
  app.use(accessLogMiddleware(deps.logger));
  app.use(hardeningHeaders);
  app.use(errorMiddleware(deps.logger));
  app.use(auditMiddleware(deps));

  const openapi = buildOpenApi();
  const adminOpenapi = buildAdminOpenApi();
  // Fixed GET paths answered before the routers, for the 405 middleware to know of. `/metrics` is
  // not one of them: it is served on its own port (METRICS_PORT), never on the public one.
  const fixed = ['/healthz', '/readyz', '/v1/openapi.json', '/admin/v1/openapi.json'];
  app.use(async (ctx, next) => {
    if (ctx.method !== 'GET') return next();
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/readyz') {
      const ready = await deps.ready();
      ctx.status = ready ? 200 : 503;
      ctx.body = { status: ready ? 'ready' : 'not ready' };
      return;
    }
    if (ctx.path === '/v1/openapi.json') {
      ctx.body = openapi;
      return;
    }
    // Public like /v1's: it describes the operator API, and holds no secret.
    if (ctx.path === '/admin/v1/openapi.json') {
      ctx.body = adminOpenapi;
      return;
    }
    return next();
  });
  const docs = docsPages([
    { path: '/v1/docs', title: 'Spool print job API', spec: '/v1/openapi.json' },
    { path: '/admin/v1/docs', title: 'Spool operator API', spec: '/admin/v1/openapi.json' },
  ]);
  app.use(docs.middleware);
  // The console's web app at /console/ (its API, /console/v1/, is a router below).
  app.use(consoleStatic());

  const admin = adminRouter({
    backends: deps.backends,
    keys: deps.cache,
    operatorToken: deps.operatorToken,
    bodyLimit: deps.bodyLimit,
    publicUrl: deps.sessions.publicUrl,
  });
  const v1 = v1Router({
    operatorToken: deps.operatorToken,
    sessions: deps.sessions,
    cache: deps.cache,
    clock: deps.clock,
    keyLimit: deps.keyLimit,
    backends: deps.backends,
    bodyLimit: deps.bodyLimit,
    maxDocumentBytes: deps.maxDocumentBytes,
    events: deps.events,
    // Inline documents arrive as base64, a third larger, in a JSON envelope.
    jobBodyLimit: Math.ceil((deps.maxDocumentBytes * 4) / 3) + 64 * 1024,
  });
  const webhooksAdmin = webhooksAdminRouter({
    backends: deps.backends,
    operatorToken: deps.operatorToken,
    bodyLimit: deps.bodyLimit,
  });
  const adminFleet = adminFleetRouter({
    backends: deps.backends,
    operatorToken: deps.operatorToken,
    bodyLimit: deps.bodyLimit,
  });
  const publicApi = publicRouter({
    backends: deps.backends,
    status: deps.status,
    limit: deps.publicLimit,
    enrollLimit: deps.enrollLimit,
  });
  const consoleApi = consoleRouter({
    ...deps,
    keys: deps.cache,
    publicUrl: deps.sessions.publicUrl,
  });
  const adminReleases = adminReleasesRouter({
    backends: deps.backends,
    operatorToken: deps.operatorToken,
    bodyLimit: deps.bodyLimit,
    releases: deps.agentReleases.store,
  });
  const agentReleases = agentReleasesRouter({
    releases: deps.agentReleases.store,
    limit: deps.agentReleases.limit,
  });
  const routers = [
    admin,
    adminFleet,
    adminReleases,
    webhooksAdmin,
    publicApi,
    agentReleases,
    v1,
    consoleApi,
  ];
  for (const router of routers) app.use(router.routes());

  // A route of the operator API without a description would be missing from its document.
  assertDescribed(
    [admin, adminFleet, adminReleases, webhooksAdmin].flatMap((r) =>
      r.stack
        .filter((l) => l.methods.length > 0)
        .flatMap((l) =>
          l.methods.filter((m) => m !== 'HEAD').map((method) => ({ method, path: String(l.path) })),
        ),
    ),
  );
  const known: KnownPath[] = [
    ...routers.flatMap(pathsOf),
    ...fixed.map((p) => fixedPath(p, ['GET'])),
    ...docs.paths.map((p) => fixedPath(p, ['GET'])),
  ];
  app.use(methodNotAllowed(known));

  app.use((ctx) => {
    throw new SpoolError('not_found', `no endpoint ${ctx.method} ${ctx.path}`);
  });
  return app;
}
