/**
 * The fan-out across replicas: replica A answers the endpoint API, replica B alone fans events out
 * (A's fan-out is stopped), so every test shows what B learns of changes made through A. An
 * endpoint receives every event that happens after the answer to its creation (or enabling), and
 * none after it was disabled; a change B never heard of reaches it when its index entry ages out.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import test from 'ava';
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { connectBus, type NatsConnection } from '../lib/bus.js';
import { createPool } from '../lib/db.js';
import { createClient } from '../lib/grpc.js';
import { silentLogger } from '../lib/logger.js';
import { FANOUT_CONSUMER } from '../services/webhooks/fanout.js';
import { createWebhooks, WEBHOOK_DEFAULTS, type WebhooksPart } from '../services/webhooks/index.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import {
  createOrg,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import { webhookAdmin } from './helpers/webhooks.js';

interface Context {
  sys: TestSystem;
  a: WebhooksPart;
  b: WebhooksPart;
  nc: NatsConnection;
  stopB: () => Promise<void>;
}

const ctx = {} as Context;

test.before(async () => {
  const secretKey = randomBytes(32);
  ctx.sys = await startTestSystem({ webhooks: { secretKey } });
  const pool = createPool({ url: ctx.sys.db.url, max: 5 });
  const nc = await connectBus({ url: ctx.sys.nats.url, name: 'webhooks-b', logger: silentLogger });
  const accounts = createClient(AccountsServiceClient, {
    service: 'accounts',
    address: ctx.sys.system.servicesAddress,
  });
  ctx.b = await createWebhooks({
    pool,
    nc,
    logger: silentLogger,
    clock: ctx.sys.clock,
    settings: { ...WEBHOOK_DEFAULTS, allowInsecure: true, secretKey },
    accounts,
  });
  ctx.a = ctx.sys.system.webhooks;
  await ctx.a.fanout.stop();
  ctx.nc = await connectBus({ url: ctx.sys.nats.url, name: 'test', logger: silentLogger });
  ctx.stopB = async () => {
    await ctx.b.stop();
    accounts.close();
    await nc.drain();
    await pool.end();
  };
});

test.after.always(async () => {
  await ctx.stopB?.();
  await ctx.nc?.drain();
  await ctx.sys?.stop();
});

/** Publishes one event of the organization straight to the bus, as the jobs outbox does. */
async function publish(orgId: string, type: string): Promise<string> {
  const event = {
    id: randomUUID(),
    type,
    created_at: new Date().toISOString(),
    org_id: orgId,
    data: { job: { id: randomUUID(), status: 'queued' } },
  };
  await jetstream(ctx.nc).publish(`events.${orgId}.${type}`, JSON.stringify(event), {
    msgID: event.id,
  });
  return event.id;
}

/** Resolves once the fan-out has handled (and acknowledged) every event published so far. */
async function fannedOut(): Promise<void> {
  const jsm = await jetstreamManager(ctx.nc);
  await eventually(
    () => jsm.consumers.info('EVENTS', FANOUT_CONSUMER),
    (info) => info.num_pending === 0 && info.num_ack_pending === 0,
  );
}

async function setup(t: { teardown(fn: () => Promise<unknown>): void }) {
  const orgId = await createOrg(ctx.sys.url);
  const hooks = webhookAdmin(ctx.sys.url, OPERATOR_TOKEN, orgId);
  const receiver: Receiver = await startReceiver();
  t.teardown(() => receiver.close());
  return { orgId, hooks, receiver };
}

test.serial(
  'an endpoint created through one replica receives the next event another replica fans out',
  async (t) => {
    const { orgId, hooks, receiver } = await setup(t);
    await hooks.create(receiver.url, ['job.printed']);
    // B reads the organization's endpoints now: nobody wants job.created.
    await publish(orgId, 'job.created');
    await fannedOut();
    t.is(ctx.b.endpointIndex.size > 0, true, 'replica B keeps what the endpoints want');

    const { endpoint } = await hooks.create(receiver.url, ['job.created']);
    const eventId = await publish(orgId, 'job.created');
    const [got] = await receiver.until((r) =>
      r.some((q) => JSON.parse(q.body.toString()).type === 'job.created'),
    );
    t.truthy(got);
    const log = await eventually(
      () => hooks.deliveries(endpoint.id),
      (items) => items.length === 1,
    );
    t.is(log[0]?.event_id, eventId);
  },
);

test.serial(
  'a disabled endpoint gets no delivery of a later event, and gets them again once enabled',
  async (t) => {
    const { orgId, hooks, receiver } = await setup(t);
    const { endpoint } = await hooks.create(receiver.url, ['job.failed']);
    const first = await publish(orgId, 'job.failed');
    await eventually(
      () => hooks.deliveries(endpoint.id),
      (items) => items.length === 1 && items[0]?.state === 'succeeded',
    );

    await hooks.update(endpoint.id, { enabled: false });
    const whileDisabled = await publish(orgId, 'job.failed');
    await fannedOut();
    await ctx.b.worker.runDue();

    await hooks.update(endpoint.id, { enabled: true });
    const afterEnabled = await publish(orgId, 'job.failed');
    const log = await eventually(
      () => hooks.deliveries(endpoint.id),
      (items) => items.length === 2 && items.every((d) => d.state === 'succeeded'),
    );
    t.deepEqual(log.map((d) => d.event_id).sort(), [first, afterEnabled].sort());
    t.false(log.some((d) => d.event_id === whileDisabled));
    t.is(receiver.requests.length, 2);
  },
);

test.serial(
  'a change another replica never heard of reaches it when its index entry ages out',
  async (t) => {
    const { orgId, hooks, receiver } = await setup(t);
    await hooks.create(receiver.url, ['job.printed']);
    await publish(orgId, 'station.online');
    await fannedOut();
    // Written straight to the database: no replica is told of it.
    const silent = await ctx.a.store.createEndpoint({
      orgId,
      url: receiver.url,
      events: ['station.online'],
      description: '',
      secret: `whsec_${randomBytes(32).toString('base64')}`,
    });
    await publish(orgId, 'station.online');
    await fannedOut();
    t.deepEqual(await hooks.deliveries(silent.id), [], 'B still trusts what it read before');

    ctx.sys.clock.advance(31_000);
    const eventId = await publish(orgId, 'station.online');
    const log = await eventually(
      () => hooks.deliveries(silent.id),
      (items) => items.length === 1,
    );
    t.is(log[0]?.event_id, eventId);
  },
);

test.serial(
  'an event whose body is not the event its subject names is dropped, and the next one is delivered',
  async (t) => {
    const { orgId, hooks, receiver } = await setup(t);
    const { endpoint } = await hooks.create(receiver.url, ['job.printed']);
    const js = jetstream(ctx.nc);
    // Another organization's event, and something that is no event, under this one's subject.
    const otherOrg = await createOrg(ctx.sys.url);
    const foreign = {
      id: randomUUID(),
      type: 'job.printed',
      created_at: new Date().toISOString(),
      org_id: otherOrg,
      data: { job: { id: randomUUID(), status: 'printed' } },
    };
    await js.publish(`events.${orgId}.job.printed`, JSON.stringify(foreign), { msgID: foreign.id });
    await js.publish(`events.${orgId}.job.printed`, '{"not": "an event"', { msgID: randomUUID() });
    const eventId = await publish(orgId, 'job.printed');
    const log = await eventually(
      () => hooks.deliveries(endpoint.id),
      (items) => items.length === 1 && items[0]?.state === 'succeeded',
    );
    await fannedOut();
    t.is(log[0]?.event_id, eventId);
    // The one request is this organization's own event.
    t.deepEqual(
      receiver.requests.map((r) => JSON.parse(r.body.toString()).org_id),
      [orgId],
    );
  },
);
