/**
 * The public endpoints (spec §4), answered without authentication and rate limited per client
 * address across every gateway replica: the server key for sealing, the status, prices and
 * downloads, and the exchange of a station's enrollment code (routes/enrollments.ts), which has a
 * tighter limit of its own. The GETs are the only paths any web page may read (CORS: any origin,
 * GET only); nothing else answers a browser's cross-origin request.
 */
import { Router } from '@koa/router';
import type { Middleware } from 'koa';
import type { Backends } from '../clients.js';
import { rejectUnknownParams } from '../query.js';
import type { GatewayState } from '../state.js';
import type { PublicStatus } from '../status.js';
import { enrollHandler } from './enrollments.js';

export interface PublicDeps {
  backends: Backends;
  status: { check(): Promise<PublicStatus> };
  limit: Middleware<GatewayState>;
  /** The limit of enrollment attempts per client address, after `limit`. */
  enrollLimit: Middleware<GatewayState>;
}

/** A JSON setting as the public sees it: the object, or null when not published. */
function published(json: string): unknown {
  if (json === '') return null;
  try {
    return JSON.parse(json);
  } catch {
    return null;
  }
}

/** The headers a page's script may read off a public answer. */
const EXPOSED = [
  'Request-Id',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
];

const PATHS = ['/server-key', '/status', '/pricing', '/downloads'];

export function publicRouter(deps: PublicDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/v1/public' });
  // Before the limit, so that a 429 can be read by the page too.
  router.use(async (ctx, next) => {
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Access-Control-Expose-Headers', EXPOSED.join(', '));
    await next();
  });
  // A preflight costs the client nothing of its limit.
  router.use((ctx, next) => (ctx.method === 'OPTIONS' ? next() : deps.limit(ctx, next)));
  // None takes a query parameter: one given is refused, as on every other `/v1` path.
  router.use((ctx, next) => {
    if (ctx.method !== 'OPTIONS') rejectUnknownParams(ctx.query, []);
    return next();
  });
  for (const path of PATHS) {
    router.options(path, (ctx) => {
      ctx.set('Access-Control-Allow-Methods', 'GET');
      ctx.set('Access-Control-Max-Age', '86400');
      ctx.set('Allow', 'GET, HEAD, OPTIONS');
      ctx.status = 204;
    });
  }

  router.get('/server-key', async (ctx) => {
    const res = await deps.backends.jobs.getServerKey({});
    ctx.body = { public_key: res.publicKey, algorithm: res.algorithm };
  });

  router.get('/status', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await deps.status.check();
  });

  for (const [path, field] of [
    ['/pricing', 'pricingJson'],
    ['/downloads', 'downloadsJson'],
  ] as const) {
    router.get(path, async (ctx) => {
      const { settings } = await deps.backends.accounts.getSettings({}, { deadlineMs: 2_000 });
      // JSON `null` when not published (a null ctx.body would answer 204).
      ctx.type = 'application/json';
      ctx.body = JSON.stringify(published(settings?.[field] ?? ''));
    });
  }
  router.post('/enroll', deps.enrollLimit, enrollHandler(deps.backends));
  return router;
}
