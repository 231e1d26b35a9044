/**
 * The webhook admin API as tests use it: thin typed calls on `/admin/v1/orgs/{org}/webhooks`,
 * each failing loudly on an unexpected status; events published as the jobs outbox does; and a
 * test system with webhooks settings of a file's own.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { TestFn } from 'ava';
import { connectBus, type NatsConnection } from '../../lib/bus.js';
import { silentLogger } from '../../lib/logger.js';
import { FANOUT_CONSUMER } from '../../services/webhooks/fanout.js';
import type { WebhooksSettings } from '../../services/webhooks/index.js';
import { gate, startReceiver } from './receiver.js';
import {
  type Answer,
  call,
  createOrg,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './system.js';

export interface EndpointView {
  id: string;
  org_id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: string | null;
  failing_since: string | null;
  secret_rotated_at: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AttemptView {
  number: number;
  at: string;
  outcome: string;
  status_code: number | null;
  error: string;
  duration_ms: number;
  response_body: string;
}

export interface DeliveryView {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  state: 'pending' | 'succeeded' | 'failed';
  attempt_count: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  notice: string;
  created_at: string;
  finished_at: string | null;
  attempts: AttemptView[];
  payload?: string;
}

export interface WebhookAdmin {
  raw<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<Answer<T>>;
  create(url: string, events?: string[]): Promise<{ endpoint: EndpointView; secret: string }>;
  get(id: string): Promise<EndpointView>;
  update(id: string, changes: Record<string, unknown>): Promise<EndpointView>;
  rotate(id: string, graceSeconds?: number): Promise<{ endpoint: EndpointView; secret: string }>;
  ping(id: string): Promise<DeliveryView>;
  deliveries(id: string, query?: string): Promise<DeliveryView[]>;
  delivery(id: string, deliveryId: string): Promise<DeliveryView>;
  resend(id: string, deliveryId: string): Promise<DeliveryView>;
  resendFailed(id: string, since: string): Promise<number>;
  remove(id: string): Promise<void>;
}

export function webhookAdmin(base: string, token: string, orgId: string): WebhookAdmin {
  const raw = <T>(method: string, path: string, body?: unknown) =>
    call<T>(base, method, `/admin/v1/orgs/${orgId}/webhooks${path}`, {
      token,
      ...(body === undefined ? {} : { body }),
    });
  const expect = async <T>(status: number, p: Promise<Answer<T>>): Promise<T> => {
    const res = await p;
    if (res.status !== status) {
      throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
    }
    return res.body;
  };
  return {
    raw,
    create: (url, events = ['*']) =>
      expect(201, raw<{ endpoint: EndpointView; secret: string }>('POST', '', { url, events })),
    get: async (id) =>
      (await expect(200, raw<{ endpoint: EndpointView }>('GET', `/${id}`))).endpoint,
    update: async (id, changes) =>
      (await expect(200, raw<{ endpoint: EndpointView }>('PATCH', `/${id}`, changes))).endpoint,
    rotate: (id, graceSeconds) =>
      expect(
        200,
        raw<{ endpoint: EndpointView; secret: string }>(
          'POST',
          `/${id}/rotate`,
          graceSeconds === undefined ? {} : { grace_seconds: graceSeconds },
        ),
      ),
    ping: async (id) =>
      (await expect(202, raw<{ delivery: DeliveryView }>('POST', `/${id}/test`))).delivery,
    deliveries: async (id, query = '') =>
      (
        await expect(
          200,
          raw<{ items: DeliveryView[] }>('GET', `/${id}/deliveries${query ? `?${query}` : ''}`),
        )
      ).items,
    delivery: async (id, deliveryId) =>
      (await expect(200, raw<{ delivery: DeliveryView }>('GET', `/${id}/deliveries/${deliveryId}`)))
        .delivery,
    resend: async (id, deliveryId) =>
      (
        await expect(
          202,
          raw<{ delivery: DeliveryView }>('POST', `/${id}/deliveries/${deliveryId}/resend`),
        )
      ).delivery,
    resendFailed: async (id, since) =>
      (await expect(202, raw<{ resent: number }>('POST', `/${id}/resend-failed`, { since })))
        .resent,
    remove: async (id) => {
      await expect(204, raw('DELETE', `/${id}`));
    },
  };
}

/** Publishes `count` job.created events of an organization straight to the bus, as the jobs outbox does. */
export async function publishJobEvents(
  nc: NatsConnection,
  orgId: string,
  count: number,
): Promise<string[]> {
  const js = jetstream(nc);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const event = {
      id: randomUUID(),
      type: 'job.created',
      created_at: new Date().toISOString(),
      org_id: orgId,
      data: { job: { id: randomUUID(), status: 'queued', reference: `ref-${i}` } },
    };
    await js.publish(`events.${orgId}.job.created`, JSON.stringify(event), { msgID: event.id });
    ids.push(event.id);
  }
  return ids;
}

/** A test file's system and its own connection to the system's NATS. */
export interface SystemWithBus {
  sys: TestSystem;
  nc: NatsConnection;
}

/**
 * Starts, before the file's tests, a test system whose webhooks service has `webhooks` (and a
 * fresh secret key), with a NATS connection of the tests' own; stops both after them.
 */
export function systemWithBus(
  test: TestFn<SystemWithBus>,
  webhooks: Partial<WebhooksSettings>,
): void {
  test.before(async (t) => {
    const sys = await startTestSystem({ webhooks: { secretKey: randomBytes(32), ...webhooks } });
    const nc = await connectBus({ url: sys.nats.url, name: 'test', logger: silentLogger });
    t.context = { sys, nc };
  });
  test.after.always(async (t) => {
    await t.context.nc?.drain();
    await t.context.sys?.stop();
  });
}

/**
 * A new organization with one endpoint for `job.created`, whose receiver's answers wait until
 * `open` is called.
 */
export async function gatedEndpoint(t: {
  context: SystemWithBus;
  teardown(fn: () => Promise<unknown>): void;
}) {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const hooks = webhookAdmin(sys.url, OPERATOR_TOKEN, orgId);
  const { reply, open } = gate();
  const receiver = await startReceiver(reply);
  t.teardown(() => receiver.close());
  const { endpoint } = await hooks.create(receiver.url, ['job.created']);
  return { orgId, hooks, receiver, open, endpoint };
}

/** The fan-out consumer's messages pulled and not yet acknowledged, once nothing is left to pull. */
export async function heldInStream(nc: NatsConnection, held: number): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await eventually(
    () => jsm.consumers.info('EVENTS', FANOUT_CONSUMER),
    (info) => info.num_pending === 0 && info.num_ack_pending === held,
  );
}
