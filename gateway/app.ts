/**
 * The gateway's Koa application: the only public HTTP surface. It holds no state of its own beyond
 * a cache of keys, and never touches the database; everything it answers comes from the services
 * over gRPC.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa, { type Middleware } from 'koa';
import type { Clock } from '../lib/clock.js';
import { SpoolError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Backends } from './clients.js';
import { errorMiddleware } from './errors.js';
import type { KeyCache } from './key-cache.js';
import { buildOpenApi } from './openapi.js';
import { adminRouter } from './routes/admin.js';
import { publicRouter } from './routes/public.js';
import { v1Router } from './routes/v1.js';
import { webhooksAdminRouter } from './routes/webhooks-admin.js';
import type { GatewayState } from './state.js';
import type { PublicStatus } from './status.js';
import { telemetryMiddleware } from './telemetry.js';

export interface AppDeps {
  backends: Backends;
  cache: KeyCache;
  clock: Clock;
  logger: Logger;
  operatorToken: string;
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** Largest document a job may carry, in bytes. */
  maxDocumentBytes: number;
  /** Take the client address from X-Forwarded-For (only behind a proxy you run). */
  trustProxy: boolean;
  /** The public status page's checker. */
  status: { check(): Promise<PublicStatus> };
  /** The rate limit of the public endpoints (per client address, shared by replicas). */
  publicLimit: Middleware<GatewayState>;
  /** The rate limit of authenticated requests (per key). */
  keyLimit: Middleware<GatewayState>;
  /** Whether this replica should receive traffic; false while starting or draining. */
  ready(): Promise<boolean>;
  /** Answers `GET /metrics` with the process's metrics; without it the path is not found. */
  metricsHandler?: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
}

export function createApp(deps: AppDeps): Koa<GatewayState> {
  const app = new Koa<GatewayState>({ proxy: deps.trustProxy });
  app.silent = true;

  app.use(telemetryMiddleware());
  app.use(async (ctx, next) => {
    ctx.state.requestId = randomUUID();
    ctx.set('Request-Id', ctx.state.requestId);
    await next();
  });
  app.use(errorMiddleware(deps.logger));

  const openapi = buildOpenApi();
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
    if (ctx.path === '/metrics' && deps.metricsHandler) {
      ctx.respond = false;
      deps.metricsHandler(ctx.req, ctx.res);
      return;
    }
    if (ctx.path === '/v1/openapi.json') {
      ctx.body = openapi;
      return;
    }
    return next();
  });

  const admin = adminRouter({
    backends: deps.backends,
    operatorToken: deps.operatorToken,
    bodyLimit: deps.bodyLimit,
  });
  const v1 = v1Router({
    cache: deps.cache,
    clock: deps.clock,
    keyLimit: deps.keyLimit,
    backends: deps.backends,
    bodyLimit: deps.bodyLimit,
    maxDocumentBytes: deps.maxDocumentBytes,
    // Inline documents arrive as base64, a third larger, in a JSON envelope.
    jobBodyLimit: Math.ceil((deps.maxDocumentBytes * 4) / 3) + 64 * 1024,
  });
  app.use(admin.routes());
  app.use(
    webhooksAdminRouter({
      backends: deps.backends,
      operatorToken: deps.operatorToken,
      bodyLimit: deps.bodyLimit,
    }).routes(),
  );
  app.use(
    publicRouter({
      backends: deps.backends,
      status: deps.status,
      limit: deps.publicLimit,
    }).routes(),
  );
  app.use(v1.routes());

  app.use((ctx) => {
    throw new SpoolError('not_found', `no endpoint ${ctx.method} ${ctx.path}`);
  });
  return app;
}
