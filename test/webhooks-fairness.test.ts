/**
 * One organization's slow receivers cannot take every slot of a webhooks replica: with four
 * attempts on the wire at most, two per endpoint and two per organization, an organization whose
 * three endpoints do not answer holds two slots, and another organization's deliveries go meanwhile,
 * whether a round claims them (test pings) or the fan-out hands them over (job events).
 */
import anyTest, { type TestFn } from 'ava';
import { gate, type Receiver, startReceiver } from './helpers/receiver.js';
import { createOrg, eventually, OPERATOR_TOKEN } from './helpers/system.js';
import {
  publishJobEvents,
  type SystemWithBus,
  systemWithBus,
  webhookAdmin,
} from './helpers/webhooks.js';

type Ctx = SystemWithBus;

const test = anyTest as TestFn<Ctx>;

systemWithBus(test, { concurrency: 4, endpointConcurrency: 2, orgConcurrency: 2 });

type Teardown = { teardown(fn: () => Promise<unknown>): void };

/**
 * A new organization with three endpoints whose receivers answer only once `open` is called, and
 * a count of its requests waiting for their answer.
 */
async function stuckOrg(t: { context: Ctx } & Teardown) {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const hooks = webhookAdmin(sys.url, OPERATOR_TOKEN, orgId);
  const { reply, open, waiting } = gate();
  const receivers: Receiver[] = [];
  const endpoints: string[] = [];
  for (let i = 0; i < 3; i++) {
    const receiver = await startReceiver(reply);
    t.teardown(() => receiver.close());
    receivers.push(receiver);
    endpoints.push((await hooks.create(receiver.url, ['job.created', 'ping'])).endpoint.id);
  }
  const received = () => receivers.reduce((n, r) => n + r.requests.length, 0);
  return { orgId, hooks, endpoints, receivers, open, waiting, received };
}

/** Another organization, with one endpoint that answers at once. */
async function quickOrg(t: { context: Ctx } & Teardown) {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const hooks = webhookAdmin(sys.url, OPERATOR_TOKEN, orgId);
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { endpoint } = await hooks.create(receiver.url, ['job.created', 'ping']);
  return { orgId, hooks, endpoint, receiver };
}

test.serial("a round claims another organization's ping past a stuck one's", async (t) => {
  const stuck = await stuckOrg(t);
  for (const id of stuck.endpoints) {
    await stuck.hooks.ping(id);
    await stuck.hooks.ping(id);
  }
  await eventually(
    async () => stuck.waiting.now,
    (n) => n === 2,
  );

  const quick = await quickOrg(t);
  await quick.hooks.ping(quick.endpoint.id);
  await quick.receiver.until((q) => q.length === 1);
  t.is(stuck.waiting.now, 2, 'the stuck organization still waits on two answers');

  stuck.open();
  await eventually(
    async () => stuck.received(),
    (n) => n === 6,
  );
  await t.context.sys.system.webhooks.worker.runDue();
  t.is(stuck.waiting.max, 2, 'never more than its two slots');
  for (const r of stuck.receivers) {
    t.is(new Set(r.requests.map((q) => q.delivery)).size, 2, 'each ping once');
  }
});

test.serial("the fan-out hands over another organization's event past a stuck one's", async (t) => {
  const { nc, sys } = t.context;
  const stuck = await stuckOrg(t);
  const events = await publishJobEvents(nc, stuck.orgId, 8);
  await eventually(
    async () => stuck.waiting.now,
    (n) => n === 2,
  );

  const quick = await quickOrg(t);
  const [event] = await publishJobEvents(nc, quick.orgId, 1);
  const [req] = await quick.receiver.until((q) => q.length === 1);
  t.is(JSON.parse(req?.body.toString('utf8') ?? '{}').org_id, quick.orgId);
  t.truthy(event);
  t.is(stuck.waiting.now, 2, 'the stuck organization still waits on two answers');

  stuck.open();
  await eventually(
    async () => stuck.received(),
    (n) => n === events.length * 3,
  );
  await sys.system.webhooks.worker.runDue();
  t.is(stuck.waiting.max, 2, 'never more than its two slots');
  for (const r of stuck.receivers) {
    t.is(new Set(r.requests.map((q) => q.delivery)).size, events.length, 'each event once');
  }
});
