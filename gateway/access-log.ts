/**
 * The access log: one JSON line per request at info level, once the answer is decided (after the
 * error middleware), with the method, the route template (never the path, which may carry an
 * invitation token), the status, the duration, the request id, the client's address and who
 * called: the API key's id,
 * the session's id, or `operator`; and the organization it was about (the key's, else the path's
 * `{org}` when it is a UUID), to follow one tenant's traffic. Never a header, a credential, a query string or a body. Probes
 * and scrapes (`/healthz`, `/readyz`, `/metrics`) come every few seconds and are left out, as in
 * telemetry.ts; that middleware records spans and metrics, this one writes the log line.
 */
import { performance } from 'node:perf_hooks';
import type { Middleware } from 'koa';
import { isUuid } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayState } from './state.js';

const UNLOGGED = new Set(['/healthz', '/readyz', '/metrics']);

export function accessLogMiddleware(logger: Logger): Middleware<GatewayState> {
  return async (ctx, next) => {
    if (ctx.method === 'GET' && UNLOGGED.has(ctx.path)) return next();
    const started = performance.now();
    try {
      await next();
    } finally {
      const { session, key } = ctx.state;
      const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : null;
      const who = session
        ? { session_id: session.id }
        : key
          ? { key_id: key.id }
          : route?.startsWith('/admin/v1/') && ctx.status !== 401
            ? { operator: true }
            : {};
      const pathOrg = (ctx as unknown as { params?: Record<string, string> }).params?.org;
      const org = key?.orgId ?? (pathOrg !== undefined && isUuid(pathOrg) ? pathOrg : undefined);
      logger.info(
        {
          access: true,
          method: ctx.method,
          route,
          status: ctx.status,
          duration_ms: Math.round((performance.now() - started) * 10) / 10,
          request_id: ctx.state.requestId,
          // The client's address (behind a trusted proxy, the one it forwarded): a leaked key's
          // requests can be traced to where they came from.
          ip: ctx.ip,
          ...(org ? { org_id: org } : {}),
          ...who,
        },
        'request',
      );
    }
  };
}
