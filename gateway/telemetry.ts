/**
 * The gateway's server span and request metric: one middleware at the head of the chain, so both
 * see the status the error middleware decided and the route the router matched. The span continues
 * a W3C `traceparent` the caller sent, and every gRPC call made for the request is its child.
 */
import { performance } from 'node:perf_hooks';
import {
  type Attributes,
  context,
  propagation,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { Middleware, ParameterizedContext } from 'koa';
import { spoolMetrics } from '../lib/metrics.js';
import { recordError, SpanKind, tracer, tracing } from '../lib/tracing.js';
import type { GatewayState } from './state.js';

/** Probes and scrapes come every few seconds; they get neither a span nor a sample. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

export function telemetryMiddleware(): Middleware<GatewayState> {
  const { httpServerDuration } = spoolMetrics();
  return async (ctx, next) => {
    if (ctx.method === 'GET' && UNTRACED.has(ctx.path)) return next();
    const started = performance.now();
    if (!tracing()) {
      // No span to build: the request metric alone.
      try {
        await next();
      } finally {
        httpServerDuration.record((performance.now() - started) / 1000, metricAttributes(ctx));
      }
      return;
    }
    const parent = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const span = tracer.startSpan(
      ctx.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': ctx.method,
          // An invitation token may be in the path (/console/v1/invitations/{token}): keep it out.
          'url.path': ctx.path.replace(/svc_[a-z]+_[0-9A-Za-z]{43}/g, 'svc_…'),
          'url.scheme': ctx.protocol,
          'client.address': ctx.ip,
          'user_agent.original': ctx.get('user-agent'),
        },
      },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } catch (err) {
      recordError(span, err);
      throw err;
    } finally {
      const attributes = metricAttributes(ctx);
      const route = attributes['http.route'];
      if (route) span.updateName(`${ctx.method} ${route}`);
      span.setAttributes({
        ...attributes,
        'spool.request.id': ctx.state.requestId ?? '',
        ...(ctx.state.key ? { 'spool.org.id': ctx.state.key.orgId } : {}),
      });
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      httpServerDuration.record((performance.now() - started) / 1000, attributes);
    }
  };
}

/** The request metric's attributes, which the span carries too. */
function metricAttributes(ctx: ParameterizedContext<GatewayState>): Attributes {
  const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : undefined;
  return {
    'http.request.method': ctx.method,
    'http.response.status_code': ctx.status,
    ...(route ? { 'http.route': route } : {}),
  };
}
