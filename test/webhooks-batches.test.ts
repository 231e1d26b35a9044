/**
 * Deliveries claimed and recorded many at a time: a burst of events to several endpoints arrives
 * exactly once per endpoint, each signed with its endpoint's secret; and when one endpoint of a
 * batch fails, only its deliveries are retried.
 */
import anyTest, { type TestFn } from 'ava';
import { verifyWebhook } from '../client/index.js';
import { type Receiver, type Reply, startReceiver } from './helpers/receiver.js';
import { createOrg, eventually, OPERATOR_TOKEN } from './helpers/system.js';
import {
  type DeliveryView,
  publishJobEvents,
  type SystemWithBus,
  systemWithBus,
  type WebhookAdmin,
  webhookAdmin,
} from './helpers/webhooks.js';

type Ctx = SystemWithBus;

const test = anyTest as TestFn<Ctx>;

systemWithBus(test, { concurrency: 64, endpointConcurrency: 16 });

interface Hooked {
  hooks: WebhookAdmin;
  endpoints: Array<{ id: string; secret: string; receiver: Receiver }>;
}

async function endpoints(
  t: { context: Ctx; teardown(fn: () => Promise<unknown>): void },
  replies: Array<() => Reply>,
): Promise<Hooked & { orgId: string }> {
  const orgId = await createOrg(t.context.sys.url);
  const hooks = webhookAdmin(t.context.sys.url, OPERATOR_TOKEN, orgId);
  const out: Hooked['endpoints'] = [];
  for (const reply of replies) {
    const receiver = await startReceiver(reply);
    t.teardown(() => receiver.close());
    const { endpoint, secret } = await hooks.create(receiver.url, ['job.created']);
    out.push({ id: endpoint.id, secret, receiver });
  }
  return { orgId, hooks, endpoints: out };
}

/** Every endpoint's delivery log, read again when a read lost a conflict to the worker (503). */
async function logs(hooked: Hooked): Promise<DeliveryView[][]> {
  try {
    return await Promise.all(
      hooked.endpoints.map((e) => hooked.hooks.deliveries(e.id, 'limit=100')),
    );
  } catch (err) {
    if (/got 503/.test((err as Error).message)) return [];
    throw err;
  }
}

test.serial(
  'a burst of events to several endpoints arrives once per endpoint, each signed with its own secret',
  async (t) => {
    const ok = () => ({ status: 200 });
    const hooked = await endpoints(t, [ok, ok, ok, ok, ok]);
    const events = await publishJobEvents(t.context.nc, hooked.orgId, 40);
    await eventually(
      () => logs(hooked),
      (all) =>
        all.length === hooked.endpoints.length &&
        all.every(
          (log) => log.length === events.length && log.every((d) => d.state === 'succeeded'),
        ),
      30_000,
    );
    const now = t.context.sys.clock.now().getTime();
    for (const { secret, receiver } of hooked.endpoints) {
      const ids = receiver.requests.map((q) => q.delivery);
      t.is(ids.length, events.length, 'one request per event');
      t.is(new Set(ids).size, events.length, 'no delivery sent twice');
      const other = hooked.endpoints.find((e) => e.receiver !== receiver) as { secret: string };
      for (const q of receiver.requests) {
        const header = String(q.headers['service-signature']);
        t.is(verifyWebhook(q.body, header, secret, { now: () => now }).type, 'job.created');
        // Another endpoint's secret does not verify this one's request.
        t.throws(() => verifyWebhook(q.body, header, other.secret, { now: () => now }));
      }
    }
  },
);

test.serial(
  'when one endpoint of a batch fails, only its deliveries are tried again',
  async (t) => {
    const ok = () => ({ status: 200 });
    const hooked = await endpoints(t, [ok, () => ({ status: 500 }), ok]);
    const failing = hooked.endpoints[1] as Hooked['endpoints'][number];
    const events = await publishJobEvents(t.context.nc, hooked.orgId, 12);
    const first = await eventually(
      () => logs(hooked),
      (all) =>
        all.length === 3 &&
        all.every(
          (log) =>
            log.length === events.length &&
            log.every((d) => d.attempts[0]?.outcome !== 'in_flight' && d.attempts.length === 1),
        ),
      30_000,
    );
    for (const [i, log] of first.entries()) {
      if (i === 1) {
        t.true(log.every((d) => d.state === 'pending' && d.next_attempt_at !== null));
        t.true(log.every((d) => d.attempts[0]?.status_code === 500));
      } else {
        t.true(log.every((d) => d.state === 'succeeded'));
      }
    }

    t.context.sys.clock.advance(40_000);
    await t.context.sys.system.webhooks.worker.runDue();
    const second = await eventually(
      () => logs(hooked),
      (all) => all.length === 3 && (all[1] ?? []).every((d) => d.attempts.length === 2),
      30_000,
    );
    for (const [i, log] of second.entries()) {
      t.true(log.every((d) => d.attempts.length === (i === 1 ? 2 : 1)));
    }
    t.is(failing.receiver.requests.length, events.length * 2);
    for (const e of hooked.endpoints) {
      if (e !== failing)
        t.is(e.receiver.requests.length, events.length, 'succeeded ones not sent again');
    }
  },
);
