/**
 * Webhook endpoints and their delivery log, as one set of handlers that both the operator API
 * (`/admin/v1/orgs/{org}/webhooks…`, DESIGN §5) and the key-based API (`/v1/orgs/{org}/webhooks…`
 * under `webhooks:read` and `webhooks:write`) mount, so the two answer alike: the same bodies, the
 * same answers, the same rules (https and the SSRF guard outside `spool dev`, 20 endpoints per
 * organization, the secret shown only by create and rotate). The organization is always the one in
 * the path: `/admin/v1` is the operator's to choose, and on `/v1` `requireOwnOrg` has checked it
 * against the key before a handler runs. The webhooks service scopes every query by it.
 */
import { Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import type { WebhookAttempt, WebhookDelivery } from '../../gen/spool/v1/webhooks.js';
import { invalid } from '../../lib/errors.js';
import { EVENT_TYPES } from '../../lib/events.js';
import { webhookView } from '../../lib/resource-views.js';
import { parseRfc3339, rfc3339OrNull } from '../../lib/time.js';
import { body, changes } from '../body.js';
import type { Backends } from '../clients.js';
import {
  choiceParam,
  LIST_QUERY,
  type QuerySpec,
  readQuery,
  rejectUnknownParams,
} from '../query.js';
import type { GatewayState } from '../state.js';
import { param } from './context.js';

export { webhookView };

const EVENT_NAMES = [...EVENT_TYPES, '*'];

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

/** The states of a delivery: in its answers, and the filter of the delivery log. */
const DELIVERY_STATES = ['pending', 'succeeded', 'failed'] as const;

/** The query of an endpoint's delivery log; the webhooks service checks `state`. */
export const DELIVERY_LIST_QUERY = {
  ...LIST_QUERY,
  state: choiceParam('only deliveries in this state', DELIVERY_STATES),
} as const satisfies QuerySpec;

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

const Time = Type.String({ format: 'date-time', description: 'RFC 3339, UTC' });
const NullableTime = Type.Union([Time, Type.Null()]);
const Id = Type.String({ format: 'uuid' });
const Secret = Type.String({
  pattern: '^whsec_',
  description: 'the signing secret (whsec_…); shown only in this answer',
});

/** The answer shape of `webhookView`, for the OpenAPI document. */
export const WebhookEndpointSchema = Type.Object(
  {
    id: Id,
    org_id: Id,
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: Type.String(),
    enabled: Type.Boolean(),
    disabled_reason: Type.Union([
      Type.Literal('operator'),
      Type.Literal('gone'),
      Type.Literal('failing'),
      Type.Null(),
    ]),
    disabled_at: NullableTime,
    failing_since: NullableTime,
    secret_rotated_at: NullableTime,
    previous_secret_expires_at: NullableTime,
    created_at: Time,
    updated_at: Time,
  },
  { additionalProperties: false },
);

/** The answer shape of `deliveryView` (without `payload`), for the OpenAPI document. */
export const WebhookDeliverySchema = Type.Object(
  {
    id: Id,
    endpoint_id: Id,
    event_id: Id,
    event_type: Type.String(),
    state: Type.Union(DELIVERY_STATES.map((s) => Type.Literal(s))),
    attempt_count: Type.Integer({ minimum: 0 }),
    next_attempt_at: NullableTime,
    last_attempt_at: NullableTime,
    last_status_code: Type.Union([Type.Integer(), Type.Null()]),
    notice: Type.String(),
    created_at: Time,
    finished_at: NullableTime,
    attempts: Type.Array(
      Type.Object(
        {
          number: Type.Integer({ minimum: 1 }),
          at: Time,
          outcome: Type.String({ description: 'succeeded, failed, in_flight or abandoned' }),
          status_code: Type.Union([Type.Integer(), Type.Null()]),
          error: Type.String(),
          duration_ms: Type.Integer({ minimum: 0 }),
          response_body: Type.String({ description: "the first 1 KiB of the receiver's answer" }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** `{endpoint}` */
export const WebhookEndpointAnswer = Type.Object(
  { endpoint: WebhookEndpointSchema },
  { additionalProperties: false },
);

/**
 * `{endpoint, secret}`: the answers of create and rotate. A replay for an `Idempotency-Key` has no
 * `secret`: it is shown once and never kept outside the webhooks service's encryption.
 */
export const WebhookSecretAnswer = Type.Object(
  { endpoint: WebhookEndpointSchema, secret: Type.Optional(Secret) },
  { additionalProperties: false },
);

/** `{delivery}`: the answers of test and resend, `202`: the delivery is queued, not yet sent. */
export const WebhookDeliveryAnswer = Type.Object(
  { delivery: WebhookDeliverySchema },
  { additionalProperties: false },
);

type Handler = Middleware<GatewayState>;

/** The operations on endpoints and their deliveries; `/v1` has all but the last two. */
export type WebhookOperation =
  | 'listWebhookEndpoints'
  | 'createWebhookEndpoint'
  | 'getWebhookEndpoint'
  | 'updateWebhookEndpoint'
  | 'deleteWebhookEndpoint'
  | 'rotateWebhookSecret'
  | 'sendWebhookTest'
  | 'listWebhookDeliveries'
  | 'resendWebhookDelivery'
  | 'getWebhookDelivery'
  | 'resendFailedWebhookDeliveries';

export interface WebhookHandlerDeps {
  backends: Backends;
  bodyLimit: number;
}

/**
 * The handlers, named as the OpenAPI document names their `/v1` operations. Each reads the
 * organization, endpoint and delivery from the path.
 */
export function webhookHandlers(deps: WebhookHandlerDeps): Record<WebhookOperation, Handler> {
  const { accounts, webhooks } = deps.backends;
  const ids = (ctx: Parameters<Handler>[0]) => ({
    orgId: param(ctx, 'org'),
    endpointId: param(ctx, 'id'),
  });
  return {
    createWebhookEndpoint: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, CreateWebhookBody, deps.bodyLimit);
      // The organization is the accounts service's: an unknown one answers 404 before anything.
      await accounts.getOrg({ orgId: param(ctx, 'org') });
      const { endpoint, secret } = await webhooks.createEndpoint({
        orgId: param(ctx, 'org'),
        url: req.url,
        events: req.events,
        description: req.description ?? '',
      });
      ctx.status = 201;
      ctx.body = { endpoint: webhookView(endpoint), secret };
    },

    listWebhookEndpoints: async (ctx) => {
      const page = readQuery(ctx.query, LIST_QUERY);
      const res = await webhooks.listEndpoints({ orgId: param(ctx, 'org'), ...page });
      ctx.body = { items: res.items.map(webhookView), next_cursor: res.nextCursor };
    },

    getWebhookEndpoint: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const { endpoint } = await webhooks.getEndpoint(ids(ctx));
      ctx.body = { endpoint: webhookView(endpoint) };
    },

    updateWebhookEndpoint: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await changes(ctx, UpdateWebhookBody, deps.bodyLimit);
      const { endpoint } = await webhooks.updateEndpoint({
        ...ids(ctx),
        url: req.url,
        events: req.events === undefined ? undefined : { types: req.events },
        enabled: req.enabled,
        description: req.description,
      });
      ctx.body = { endpoint: webhookView(endpoint) };
    },

    deleteWebhookEndpoint: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      await webhooks.deleteEndpoint(ids(ctx));
      ctx.status = 204;
    },

    rotateWebhookSecret: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, RotateWebhookBody, deps.bodyLimit);
      const { endpoint, secret } = await webhooks.rotateSecret({
        ...ids(ctx),
        graceSeconds: req.grace_seconds,
      });
      ctx.body = { endpoint: webhookView(endpoint), secret };
    },

    sendWebhookTest: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      await body(ctx, Empty, deps.bodyLimit);
      const { delivery } = await webhooks.sendTest(ids(ctx));
      ctx.status = 202;
      ctx.body = { delivery: deliveryView(delivery) };
    },

    listWebhookDeliveries: async (ctx) => {
      const q = readQuery(ctx.query, DELIVERY_LIST_QUERY);
      const res = await webhooks.listDeliveries({ ...ids(ctx), ...q });
      ctx.body = {
        items: res.items.map((d) => deliveryView(d)),
        next_cursor: res.nextCursor,
      };
    },

    getWebhookDelivery: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const { delivery } = await webhooks.getDelivery({
        ...ids(ctx),
        deliveryId: param(ctx, 'delivery'),
      });
      ctx.body = { delivery: deliveryView(delivery, true) };
    },

    resendWebhookDelivery: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      await body(ctx, Empty, deps.bodyLimit);
      const { delivery } = await webhooks.resendDelivery({
        ...ids(ctx),
        deliveryId: param(ctx, 'delivery'),
      });
      ctx.status = 202;
      ctx.body = { delivery: deliveryView(delivery) };
    },

    resendFailedWebhookDeliveries: async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, ResendFailedBody, deps.bodyLimit);
      const since = parseRfc3339(req.since);
      if (!since) throw invalid('since must be an RFC 3339 time', 'since');
      const { resent } = await webhooks.resendFailed({ ...ids(ctx), since });
      ctx.status = 202;
      ctx.body = { resent };
    },
  };
}

/** The `/v1` routes' handlers, keyed as `V1_ROUTES` keys them. */
export function webhookV1Handlers(deps: WebhookHandlerDeps): Record<string, Handler> {
  const h = webhookHandlers(deps);
  return {
    'GET /v1/orgs/:org/webhooks': h.listWebhookEndpoints,
    'POST /v1/orgs/:org/webhooks': h.createWebhookEndpoint,
    'GET /v1/orgs/:org/webhooks/:id': h.getWebhookEndpoint,
    'PATCH /v1/orgs/:org/webhooks/:id': h.updateWebhookEndpoint,
    'DELETE /v1/orgs/:org/webhooks/:id': h.deleteWebhookEndpoint,
    'POST /v1/orgs/:org/webhooks/:id/rotate': h.rotateWebhookSecret,
    'POST /v1/orgs/:org/webhooks/:id/test': h.sendWebhookTest,
    'GET /v1/orgs/:org/webhooks/:id/deliveries': h.listWebhookDeliveries,
    'POST /v1/orgs/:org/webhooks/:id/deliveries/:delivery/resend': h.resendWebhookDelivery,
    'POST /v1/orgs/:org/webhooks/:id/resend-failed': h.resendFailedWebhookDeliveries,
  };
}
