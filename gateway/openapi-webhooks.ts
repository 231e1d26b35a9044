/**
 * The OpenAPI operations of webhook endpoints under `/v1` (gateway/openapi.ts spreads them into its
 * table), described from the schemas that check their requests and answers.
 */
import type { OperationSpec } from './openapi-builder.js';
import { EXAMPLE_ID } from './openapi-shared.js';
import { LIST_QUERY } from './query.js';
import {
  CreateWebhookBody,
  DELIVERY_LIST_QUERY,
  ResendFailedBody,
  RotateWebhookBody,
  UpdateWebhookBody,
  WebhookDeliveryAnswer,
  WebhookDeliverySchema,
  WebhookEndpointAnswer,
  WebhookEndpointSchema,
  WebhookSecretAnswer,
} from './routes/webhooks.js';
import { listOf } from './schemas.js';

/** The tag of these operations, for the document's list of tags. */
export const WEBHOOKS_TAG = {
  name: 'Webhooks',
  description:
    'Endpoints that receive signed events, their secrets, test pings and the delivery log',
};

const tag = WEBHOOKS_TAG.name;
const base = '/v1/orgs/:org/webhooks';
const empty = { schema: { $ref: '#/components/schemas/EmptyBody' }, required: false };

const ORG = EXAMPLE_ID.org;
const ENDPOINT = EXAMPLE_ID.endpoint;

const ENDPOINT_EXAMPLE = {
  id: ENDPOINT,
  org_id: ORG,
  url: 'https://erp.example.com/spool',
  events: ['job.printed', 'job.failed'],
  description: 'ERP',
  enabled: true,
  disabled_reason: null,
  disabled_at: null,
  failing_since: null,
  secret_rotated_at: null,
  previous_secret_expires_at: null,
  created_at: '2026-05-01T12:00:00Z',
  updated_at: '2026-05-01T12:00:00Z',
};

const SECRET_EXAMPLE = 'whsec_q3J0Zm9yZXhhbXBsZW9ubHlub3RhcmVhbHNlY3JldDEyMzQ=';

const DELIVERY_EXAMPLE = {
  id: '0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e',
  endpoint_id: ENDPOINT,
  event_id: '5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9',
  event_type: 'ping',
  state: 'succeeded',
  attempt_count: 1,
  next_attempt_at: null,
  last_attempt_at: '2026-05-01T12:00:01Z',
  last_status_code: 200,
  notice: '',
  created_at: '2026-05-01T12:00:00Z',
  finished_at: '2026-05-01T12:00:01Z',
  attempts: [
    {
      number: 1,
      at: '2026-05-01T12:00:01Z',
      outcome: 'succeeded',
      status_code: 200,
      error: '',
      duration_ms: 42,
      response_body: '',
    },
  ],
};

const SECRET_NOTE =
  'The signing secret (`whsec_…`) is in this answer only. A retry with the same `Idempotency-Key` answers the same endpoint without the secret, which is never kept outside the webhooks service’s encryption; rotate it to get a new one.';

/** The operations, keyed as V1_ROUTES keys them. */
export const WEBHOOK_OPERATIONS: Record<string, OperationSpec> = {
  [`GET ${base}`]: {
    operationId: 'listWebhookEndpoints',
    tag,
    summary: 'Webhook endpoints, oldest first',
    query: LIST_QUERY,
    success: {
      status: 200,
      description: 'a page of endpoints',
      schema: listOf('items', WebhookEndpointSchema),
      example: { items: [ENDPOINT_EXAMPLE], next_cursor: '' },
    },
    errors: ['invalid', 'unknown_field'],
  },
  [`POST ${base}`]: {
    operationId: 'createWebhookEndpoint',
    tag,
    summary: 'Register a webhook endpoint',
    description: `The URL must be https and reach a public address. An organization has at most 20 endpoints; the 21st answers 409 conflict. ${SECRET_NOTE}`,
    request: {
      schema: CreateWebhookBody,
      examples: {
        jobs: {
          summary: 'printed and failed jobs',
          value: { url: ENDPOINT_EXAMPLE.url, events: ENDPOINT_EXAMPLE.events, description: 'ERP' },
        },
      },
    },
    success: {
      status: 201,
      description: 'the endpoint and its signing secret',
      schema: WebhookSecretAnswer,
      example: { endpoint: ENDPOINT_EXAMPLE, secret: SECRET_EXAMPLE },
      location: '/v1/orgs/{org}/webhooks/{id}',
    },
    errors: ['conflict'],
  },
  [`GET ${base}/:id`]: {
    operationId: 'getWebhookEndpoint',
    tag,
    summary: 'A webhook endpoint',
    success: {
      status: 200,
      description: 'the endpoint, without its secret',
      schema: WebhookEndpointAnswer,
      example: { endpoint: ENDPOINT_EXAMPLE },
    },
  },
  [`PATCH ${base}/:id`]: {
    operationId: 'updateWebhookEndpoint',
    tag,
    summary: "Change an endpoint's URL, events or description, or disable or enable it",
    description: 'Disabling an endpoint ends its pending deliveries as failed.',
    request: { schema: UpdateWebhookBody },
    success: {
      status: 200,
      description: 'the endpoint',
      schema: WebhookEndpointAnswer,
      example: { endpoint: ENDPOINT_EXAMPLE },
    },
  },
  [`DELETE ${base}/:id`]: {
    operationId: 'deleteWebhookEndpoint',
    tag,
    summary: 'Delete a webhook endpoint and its delivery log',
    success: { status: 204, description: 'deleted' },
  },
  [`POST ${base}/:id/rotate`]: {
    operationId: 'rotateWebhookSecret',
    tag,
    summary: 'A new signing secret, used from the next delivery on',
    description: `\`Service-Signature\` is made with the new secret from the next delivery on. For \`grace_seconds\` (24 hours by default) the Standard Webhooks header \`webhook-signature\` carries a second signature made with the old secret; 0 ends it at once. ${SECRET_NOTE}`,
    request: { schema: RotateWebhookBody, required: false },
    success: {
      status: 200,
      description: 'the endpoint and its new signing secret',
      schema: WebhookSecretAnswer,
      example: {
        endpoint: { ...ENDPOINT_EXAMPLE, secret_rotated_at: '2026-05-02T09:00:00Z' },
        secret: SECRET_EXAMPLE,
      },
    },
  },
  [`POST ${base}/:id/test`]: {
    operationId: 'sendWebhookTest',
    tag,
    summary: 'Send a ping to the endpoint',
    description: 'A disabled endpoint answers 409 conflict.',
    request: empty,
    success: {
      status: 202,
      description: 'the ping, queued for delivery',
      schema: WebhookDeliveryAnswer,
      example: { delivery: { ...DELIVERY_EXAMPLE, state: 'pending', attempt_count: 0 } },
    },
    errors: ['conflict'],
  },
  [`GET ${base}/:id/deliveries`]: {
    operationId: 'listWebhookDeliveries',
    tag,
    summary: "The endpoint's deliveries with their attempts, newest first",
    query: DELIVERY_LIST_QUERY,
    success: {
      status: 200,
      description: 'a page of deliveries',
      schema: listOf('items', WebhookDeliverySchema),
      example: { items: [DELIVERY_EXAMPLE], next_cursor: '' },
    },
    errors: ['invalid', 'unknown_field'],
  },
  [`POST ${base}/:id/deliveries/:delivery/resend`]: {
    operationId: 'resendWebhookDelivery',
    tag,
    summary: 'Send a delivery again now, with the same delivery id',
    description:
      'A fresh round of up to 8 attempts; attempt numbers keep counting. A disabled endpoint answers 409 conflict.',
    request: empty,
    success: {
      status: 202,
      description: 'the delivery, queued again',
      schema: WebhookDeliveryAnswer,
      example: { delivery: { ...DELIVERY_EXAMPLE, state: 'pending' } },
    },
    errors: ['conflict'],
  },
  [`POST ${base}/:id/resend-failed`]: {
    operationId: 'resendFailedWebhookDeliveries',
    tag,
    summary: 'Send again every failed delivery since a time',
    description:
      'Each delivery of the endpoint that ended `failed` at or after `since` gets a fresh round of attempts, as a resend does: after the endpoint was down, or disabled and enabled again. A disabled endpoint answers 409 conflict.',
    request: { schema: ResendFailedBody },
    success: {
      status: 202,
      description: 'how many were queued again',
      schema: {
        type: 'object',
        properties: { resent: { type: 'integer', minimum: 0 } },
        required: ['resent'],
        additionalProperties: false,
      },
      example: { resent: 19 },
    },
    errors: ['conflict'],
  },
};
