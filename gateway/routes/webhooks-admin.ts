/**
 * Webhook endpoints under `/admin/v1` (DESIGN §5): create (the secret is shown once), list, get,
 * update (URL, events, enable or disable), delete, rotate the secret, send a test `ping`, and the
 * delivery log with resend. Each route has a `spool admin webhook` command printing the same JSON.
 */
import { Router } from '@koa/router';
import { Type } from '@sinclair/typebox';
import type {
  WebhookAttempt,
  WebhookDelivery,
  WebhookEndpoint,
} from '../../gen/spool/v1/webhooks.js';
import { invalid } from '../../lib/errors.js';
import { EVENT_TYPES } from '../../lib/events.js';
import { parseRfc3339, rfc3339OrNull } from '../../lib/time.js';
import { requireOperator } from '../auth.js';
import { body } from '../body.js';
import type { Backends } from '../clients.js';
import { listParams, rejectUnknownParams, single } from '../query.js';
import type { GatewayState } from '../state.js';

const EVENT_NAMES = [...EVENT_TYPES.filter((t) => t !== 'ping'), '*'];

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'an https URL of at most 2048 characters',
});

const Events = Type.Array(Type.String({ maxLength: 64 }), {
  minItems: 1,
  maxItems: 32,
  description: `a list of event types from ${EVENT_NAMES.join(', ')}`,
});

const Description = Type.String({ maxLength: 200, description: 'at most 200 characters' });

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    enabled: Type.Optional(Type.Boolean({ description: 'true or false' })),
    description: Type.Optional(Description),
  },
  { additionalProperties: false },
);

export const RotateWebhookBody = Type.Object(
  {
    grace_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 7 * 24 * 3600,
        description: 'seconds from 0 (end the old secret now) to 604800 (7 days)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ResendFailedBody = Type.Object(
  { since: Type.String({ maxLength: 64, description: 'an RFC 3339 time' }) },
  { additionalProperties: false },
);

const Empty = Type.Object({}, { additionalProperties: false });

export function webhookView(endpoint: WebhookEndpoint | undefined) {
  if (!endpoint) throw new Error('missing webhook endpoint in response');
  return {
    id: endpoint.id,
    org_id: endpoint.orgId,
    url: endpoint.url,
    events: endpoint.events,
    description: endpoint.description,
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason || null,
    disabled_at: rfc3339OrNull(endpoint.disabledAt),
    failing_since: rfc3339OrNull(endpoint.failingSince),
    secret_rotated_at: rfc3339OrNull(endpoint.secretRotatedAt),
    previous_secret_expires_at: rfc3339OrNull(endpoint.previousSecretExpiresAt),
    created_at: rfc3339OrNull(endpoint.createdAt),
    updated_at: rfc3339OrNull(endpoint.updatedAt),
  };
}

function attemptView(attempt: WebhookAttempt) {
  return {
    number: attempt.number,
    at: rfc3339OrNull(attempt.at),
    outcome: attempt.outcome,
    status_code: attempt.statusCode || null,
    error: attempt.error,
    duration_ms: attempt.durationMs,
    response_body: attempt.responseBody,
  };
}

export function deliveryView(delivery: WebhookDelivery | undefined, withPayload = false) {
  if (!delivery) throw new Error('missing delivery in response');
  return {
    id: delivery.id,
    endpoint_id: delivery.endpointId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    state: delivery.state,
    attempt_count: delivery.attemptCount,
    next_attempt_at: rfc3339OrNull(delivery.nextAttemptAt),
    last_attempt_at: rfc3339OrNull(delivery.lastAttemptAt),
    last_status_code: delivery.lastStatusCode || null,
    notice: delivery.notice,
    created_at: rfc3339OrNull(delivery.createdAt),
    finished_at: rfc3339OrNull(delivery.finishedAt),
    attempts: delivery.attempts.map(attemptView),
    ...(withPayload ? { payload: delivery.payload } : {}),
  };
}

export interface WebhooksAdminDeps {
  backends: Backends;
  operatorToken: string;
  bodyLimit: number;
}

export function webhooksAdminRouter(deps: WebhooksAdminDeps): Router<GatewayState> {
  const { accounts, webhooks } = deps.backends;
  const router = new Router<GatewayState>({ prefix: '/admin/v1' });
  router.use(requireOperator(deps.operatorToken));
  const ids = (params: Record<string, string | undefined>) => ({
    orgId: params.org ?? '',
    endpointId: params.id ?? '',
  });

  router.post('/orgs/:org/webhooks', async (ctx) => {
    const req = await body(ctx, CreateWebhookBody, deps.bodyLimit);
    // The organization is the accounts service's: an unknown one answers 404 before anything.
    await accounts.getOrg({ orgId: ctx.params.org ?? '' });
    const { endpoint, secret } = await webhooks.createEndpoint({
      orgId: ctx.params.org ?? '',
      url: req.url,
      events: req.events,
      description: req.description ?? '',
    });
    ctx.status = 201;
    ctx.body = { endpoint: webhookView(endpoint), secret };
  });

  router.get('/orgs/:org/webhooks', async (ctx) => {
    rejectUnknownParams(ctx.query, ['limit', 'cursor']);
    const res = await webhooks.listEndpoints({
      orgId: ctx.params.org ?? '',
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(webhookView), next_cursor: res.nextCursor };
  });

  router.get('/orgs/:org/webhooks/:id', async (ctx) => {
    const { endpoint } = await webhooks.getEndpoint(ids(ctx.params));
    ctx.body = { endpoint: webhookView(endpoint) };
  });

  router.patch('/orgs/:org/webhooks/:id', async (ctx) => {
    const req = await body(ctx, UpdateWebhookBody, deps.bodyLimit);
    const { endpoint } = await webhooks.updateEndpoint({
      ...ids(ctx.params),
      url: req.url,
      events: req.events === undefined ? undefined : { types: req.events },
      enabled: req.enabled,
      description: req.description,
    });
    ctx.body = { endpoint: webhookView(endpoint) };
  });

  router.delete('/orgs/:org/webhooks/:id', async (ctx) => {
    await webhooks.deleteEndpoint(ids(ctx.params));
    ctx.status = 204;
  });

  router.post('/orgs/:org/webhooks/:id/rotate', async (ctx) => {
    const req = await body(ctx, RotateWebhookBody, deps.bodyLimit);
    const { endpoint, secret } = await webhooks.rotateSecret({
      ...ids(ctx.params),
      graceSeconds: req.grace_seconds,
    });
    ctx.body = { endpoint: webhookView(endpoint), secret };
  });

  router.post('/orgs/:org/webhooks/:id/test', async (ctx) => {
    await body(ctx, Empty, deps.bodyLimit);
    const { delivery } = await webhooks.sendTest(ids(ctx.params));
    ctx.status = 202;
    ctx.body = { delivery: deliveryView(delivery) };
  });

  router.get('/orgs/:org/webhooks/:id/deliveries', async (ctx) => {
    rejectUnknownParams(ctx.query, ['limit', 'cursor', 'state']);
    const res = await webhooks.listDeliveries({
      ...ids(ctx.params),
      ...listParams(ctx.query),
      state: single(ctx.query, 'state') ?? '',
    });
    ctx.body = {
      items: res.items.map((d) => deliveryView(d)),
      next_cursor: res.nextCursor,
    };
  });

  router.get('/orgs/:org/webhooks/:id/deliveries/:delivery', async (ctx) => {
    const { delivery } = await webhooks.getDelivery({
      ...ids(ctx.params),
      deliveryId: ctx.params.delivery ?? '',
    });
    ctx.body = { delivery: deliveryView(delivery, true) };
  });

  router.post('/orgs/:org/webhooks/:id/deliveries/:delivery/resend', async (ctx) => {
    await body(ctx, Empty, deps.bodyLimit);
    const { delivery } = await webhooks.resendDelivery({
      ...ids(ctx.params),
      deliveryId: ctx.params.delivery ?? '',
    });
    ctx.status = 202;
    ctx.body = { delivery: deliveryView(delivery) };
  });

  router.post('/orgs/:org/webhooks/:id/resend-failed', async (ctx) => {
    const req = await body(ctx, ResendFailedBody, deps.bodyLimit);
    const since = parseRfc3339(req.since);
    if (!since) throw invalid('since must be an RFC 3339 time', 'since');
    const { resent } = await webhooks.resendFailed({ ...ids(ctx.params), since });
    ctx.status = 202;
    ctx.body = { resent };
  });

  return router;
}
