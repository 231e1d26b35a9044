/**
 * Webhook endpoints under `/admin/v1` (DESIGN §5): create (the secret is shown once), list, get,
 * update (URL, events, enable or disable), delete, rotate the secret, send a test `ping`, and the
 * delivery log with resend. Each route has a `spool admin webhook` command printing the same JSON.
 * The handlers are shared with `/v1` (`webhooks.ts`), so both APIs answer alike.
 */
import { Router } from '@koa/router';
import type { Middleware } from 'koa';
import { type OperatorToken, requireOperator } from '../auth.js';
import type { Backends } from '../clients.js';
import { type Created, setLocation } from '../http-manners.js';
import { refuseChangesWhileDeleting } from '../org-deletion.js';
import type { GatewayState } from '../state.js';
import { webhookHandlers } from './webhooks.js';

/** What the 201 of endpoint creation creates, named in its `Location` header. */
export const WEBHOOK_CREATED: Created = {
  field: 'endpoint',
  location: '/admin/v1/orgs/{org}/webhooks/{id}',
};

export interface WebhooksAdminDeps {
  backends: Backends;
  operatorToken: OperatorToken;
  bodyLimit: number;
}

export function webhooksAdminRouter(deps: WebhooksAdminDeps): Router<GatewayState> {
  const h = webhookHandlers(deps);
  const router = new Router<GatewayState>({ prefix: '/admin/v1' });
  router.use(requireOperator(deps.operatorToken));
  router.use(refuseChangesWhileDeleting(deps.backends.accounts));
  // The webhooks service keeps no organizations: an endpoint list of an organization that does
  // not exist would read as "it has none", and a created endpoint would belong to nobody. The
  // guard of changes above looks the organization up for every POST; the list asks here.
  const knownOrg: Middleware<GatewayState, { params: Record<string, string> }> = async (
    ctx,
    next,
  ) => {
    await deps.backends.accounts.getOrg({ orgId: ctx.params.org ?? '' });
    await next();
  };
  router.post('/orgs/:org/webhooks', setLocation(WEBHOOK_CREATED), h.createWebhookEndpoint);
  router.get('/orgs/:org/webhooks', knownOrg, h.listWebhookEndpoints);
  router.get('/orgs/:org/webhooks/:id', h.getWebhookEndpoint);
  router.patch('/orgs/:org/webhooks/:id', h.updateWebhookEndpoint);
  router.delete('/orgs/:org/webhooks/:id', h.deleteWebhookEndpoint);
  router.post('/orgs/:org/webhooks/:id/rotate', h.rotateWebhookSecret);
  router.post('/orgs/:org/webhooks/:id/test', h.sendWebhookTest);
  router.get('/orgs/:org/webhooks/:id/deliveries', h.listWebhookDeliveries);
  router.get('/orgs/:org/webhooks/:id/deliveries/:delivery', h.getWebhookDelivery);
  router.post('/orgs/:org/webhooks/:id/deliveries/:delivery/resend', h.resendWebhookDelivery);
  router.post('/orgs/:org/webhooks/:id/resend-failed', h.resendFailedWebhookDeliveries);
  return router;
}
