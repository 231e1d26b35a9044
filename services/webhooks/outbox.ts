/**
 * The webhooks service's outbox: the event stream's `webhook_endpoint.created`, `.updated` and
 * `.deleted`, queued in the transaction of the change, with the endpoint as the API shows it
 * (never a secret).
 */
import type pg from 'pg';
import type { WebhookEndpoint } from '../../gen/spool/v1/webhooks.js';
import { eventMessage } from '../../lib/events.js';
import { enqueue } from '../../lib/outbox.js';
import { webhookView } from '../../lib/resource-views.js';

export const OUTBOX_TABLE = 'webhooks_outbox';

export type EndpointEventType =
  | 'webhook_endpoint.created'
  | 'webhook_endpoint.updated'
  | 'webhook_endpoint.deleted';

/** Queues the event of each endpoint in the caller's transaction: `{endpoint}`. */
export async function announceEndpoints(
  tx: pg.PoolClient,
  type: EndpointEventType,
  endpoints: readonly WebhookEndpoint[],
  at: Date,
): Promise<void> {
  await enqueue(
    tx,
    OUTBOX_TABLE,
    endpoints.map((e) => eventMessage(e.orgId, type, { endpoint: webhookView(e) }, at)),
  );
}
