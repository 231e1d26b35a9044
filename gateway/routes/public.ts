/**
 * The public endpoints (spec §4), answered without authentication and rate limited per client
 * address across every gateway replica: the server key for sealing, the status, prices and
 * downloads.
 */
import { Router } from '@koa/router';
import type { Middleware } from 'koa';
import type { Backends } from '../clients.js';
import type { GatewayState } from '../state.js';
import type { PublicStatus } from '../status.js';

export interface PublicDeps {
  backends: Backends;
  status: { check(): Promise<PublicStatus> };
  limit: Middleware<GatewayState>;
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

export function publicRouter(deps: PublicDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/v1/public' });
  router.use(deps.limit);

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
  return router;
}
