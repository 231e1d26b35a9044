/**
 * The webhooks gRPC service: checks requests (URLs against the SSRF rules, event types, limits),
 * makes secrets and leaves storage to the store. Changes that create work kick the worker, so a
 * test ping or a resend leaves at once.
 */
import type { WebhooksServiceServer } from '../../gen/spool/v1/webhooks.js';
import { usageRequestProblem } from '../../lib/contracts/usage.js';
import { invalid, trimmedText } from '../../lib/errors.js';
import { EVENT_TYPES } from '../../lib/events.js';
import type { AsyncServer } from '../../lib/grpc.js';
import { isUuid, requireUuid } from '../../lib/ids.js';
import { pageLimit } from '../../lib/paging.js';
import { checkPublicUrl } from '../../lib/ssrf.js';
import { generateSecret } from './crypto.js';
import type { DeliveryState } from './delivery-rows.js';
import { ALL_EVENTS } from './endpoints.js';
import type { WebhookStore } from './store.js';

/**
 * The event types an endpoint may choose: every type of spec §6, `ping` included. Choosing `ping`
 * changes nothing: the test action pings an endpoint whatever it chose, and nothing else sends one.
 */
export const SUBSCRIBABLE_EVENTS: readonly string[] = EVENT_TYPES;

export const MAX_DESCRIPTION_LENGTH = 200;

/** The longest grace a rotation may give the previous secret: 7 days. */
export const MAX_GRACE_SECONDS = 7 * 24 * 60 * 60;
/** Deliveries one `PurgeOrg` call deletes at most, with their attempts. */
export const PURGE_BATCH = 1000;

const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'succeeded', 'failed'];

function checkEvents(events: string[], param = 'events'): string[] {
  if (events.length === 0) throw invalid(`${param} must name at least one event type`, param);
  events.forEach((type, i) => {
    if (type !== ALL_EVENTS && !SUBSCRIBABLE_EVENTS.includes(type)) {
      throw invalid(
        `${param}.${i} must be an event type, not ${JSON.stringify(type)}: types are ${SUBSCRIBABLE_EVENTS.join(', ')}, or * for all`,
        `${param}.${i}`,
      );
    }
  });
  const unique = [...new Set(events)];
  return unique.includes(ALL_EVENTS) ? [ALL_EVENTS] : unique;
}

function checkDescription(text: string): string {
  return trimmedText(text, MAX_DESCRIPTION_LENGTH, 'description');
}

export interface WebhooksServerDeps {
  store: WebhookStore;
  /** `spool dev` or `SPOOL_WEBHOOKS_ALLOW_INSECURE`: http and private addresses are accepted. */
  allowInsecure: boolean;
  /** Grace of the previous secret when a rotation does not say. */
  rotationGraceMs: number;
  /** Called when there is new work for the worker. */
  onWork: () => void;
  /**
   * Called after a change to which endpoints want which events committed, and awaited before the
   * answer, so that every replica's fan-out knows of it before the caller can cause an event.
   */
  onEndpointsChanged: (orgId: string) => Promise<void>;
  /** Called after a change queued events in the outbox commits, so they leave at once. */
  onAnnounced?: () => void;
}

export function createWebhooksServer(deps: WebhooksServerDeps): AsyncServer<WebhooksServiceServer> {
  const { store } = deps;
  const org = (id: string) => requireUuid(id, 'organization');
  const endpoint = (id: string) => requireUuid(id, 'webhook endpoint in this organization');
  const delivery = (id: string) => requireUuid(id, 'delivery for this webhook endpoint');

  return {
    async createEndpoint(req) {
      const orgId = org(req.orgId);
      const url = checkPublicUrl(req.url, deps.allowInsecure);
      const events = checkEvents(req.events);
      const secret = generateSecret();
      const created = await store.createEndpoint({
        orgId,
        url,
        events,
        description: checkDescription(req.description),
        secret,
      });
      deps.onAnnounced?.();
      await deps.onEndpointsChanged(orgId);
      return { endpoint: created, secret };
    },

    async listAllEndpoints(req) {
      if (req.state !== '' && req.state !== 'failing' && req.state !== 'disabled') {
        throw invalid('state must be failing or disabled', 'state');
      }
      return store.listAllEndpoints(req.state, pageLimit(req.limit), req.cursor);
    },

    async listEndpoints(req) {
      return store.listEndpoints(org(req.orgId), pageLimit(req.limit), req.cursor);
    },

    async getEndpoint(req) {
      return { endpoint: await store.getEndpoint(org(req.orgId), endpoint(req.endpointId)) };
    },

    async updateEndpoint(req) {
      const orgId = org(req.orgId);
      const endpointId = endpoint(req.endpointId);
      const updated = await store.updateEndpoint(orgId, endpointId, {
        url: req.url === undefined ? undefined : checkPublicUrl(req.url, deps.allowInsecure),
        events: req.events === undefined ? undefined : checkEvents(req.events.types),
        enabled: req.enabled,
        description: req.description === undefined ? undefined : checkDescription(req.description),
      });
      deps.onAnnounced?.();
      await deps.onEndpointsChanged(orgId);
      return { endpoint: updated };
    },

    async purgeOrg(req) {
      const orgId = org(req.orgId);
      const { deleted, endpointsChanged, done } = await store.purgeOrg(orgId, PURGE_BATCH);
      if (endpointsChanged) await deps.onEndpointsChanged(orgId);
      return { deleted, done };
    },

    async deleteEndpoint(req) {
      const orgId = org(req.orgId);
      await store.deleteEndpoint(orgId, endpoint(req.endpointId));
      deps.onAnnounced?.();
      await deps.onEndpointsChanged(orgId);
      return {};
    },

    async rotateSecret(req) {
      const orgId = org(req.orgId);
      const endpointId = endpoint(req.endpointId);
      if (req.graceSeconds !== undefined && req.graceSeconds > MAX_GRACE_SECONDS) {
        throw invalid(
          `grace_seconds must be from 0 to ${MAX_GRACE_SECONDS} (7 days)`,
          'grace_seconds',
        );
      }
      const graceMs =
        req.graceSeconds === undefined ? deps.rotationGraceMs : req.graceSeconds * 1000;
      const secret = generateSecret();
      const rotated = await store.rotateSecret(orgId, endpointId, secret, graceMs);
      deps.onAnnounced?.();
      return { endpoint: rotated, secret };
    },

    async sendTest(req) {
      const created = await store.createTestDelivery(org(req.orgId), endpoint(req.endpointId));
      deps.onWork();
      return { delivery: created };
    },

    async listDeliveries(req) {
      const state = req.state === '' ? undefined : (req.state as DeliveryState);
      if (state !== undefined && !DELIVERY_STATES.includes(state)) {
        throw invalid(`state must be one of ${DELIVERY_STATES.join(', ')}`, 'state');
      }
      return store.listDeliveries(org(req.orgId), endpoint(req.endpointId), {
        limit: pageLimit(req.limit),
        cursor: req.cursor,
        state,
      });
    },

    async getDelivery(req) {
      return {
        delivery: await store.getDelivery(
          org(req.orgId),
          endpoint(req.endpointId),
          delivery(req.deliveryId),
        ),
      };
    },

    async resendDelivery(req) {
      const resent = await store.resendDelivery(
        org(req.orgId),
        endpoint(req.endpointId),
        delivery(req.deliveryId),
      );
      deps.onWork();
      return { delivery: resent };
    },

    async resendFailed(req) {
      if (!req.since) throw invalid('since is required', 'since');
      const resent = await store.resendFailed(org(req.orgId), endpoint(req.endpointId), req.since);
      if (resent > 0) deps.onWork();
      return { resent };
    },

    async getDeliveryUsage(req) {
      const problem = usageRequestProblem(req);
      if (problem) throw invalid(problem.message, problem.param);
      if (!req.orgIds.every(isUuid)) throw invalid('org_ids must be organization ids', 'org_ids');
      return { items: await store.deliveryUsage(req.orgIds, req.from, req.to) };
    },
  };
}
