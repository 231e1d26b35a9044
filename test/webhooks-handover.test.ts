/**
 * The fan-out hands the deliveries it adds to the worker already claimed, and holds events in the
 * stream while the worker has no room for them: with one attempt on the wire and one waiting (a
 * concurrency of 1), a receiver that has not answered yet keeps all but two events unacknowledged
 * in JetStream, and once it answers every delivery arrives once, none of them claimed by a round.
 */
import anyTest, { type TestFn } from 'ava';
import { eventually } from './helpers/system.js';
import {
  gatedEndpoint,
  heldInStream,
  publishJobEvents,
  type SystemWithBus,
  systemWithBus,
} from './helpers/webhooks.js';

type Ctx = SystemWithBus;

const test = anyTest as TestFn<Ctx>;

systemWithBus(test, { concurrency: 1, endpointConcurrency: 1 });

test.serial(
  'events wait in the stream while the worker has no room, then each delivery arrives once without a claim round',
  async (t) => {
    const { sys, nc } = t.context;
    const { orgId, hooks, receiver, open, endpoint } = await gatedEndpoint(t);
    const worker = sys.system.webhooks.worker;
    const handedOver = worker.stats.handedOver;

    const events = await publishJobEvents(nc, orgId, 6);
    // One attempt on the wire, one claimed and waiting: the other four events are not fanned out.
    await receiver.until((r) => r.length === 1);
    await heldInStream(nc, 4);
    const before = await hooks.deliveries(endpoint.id, 'limit=100');
    t.is(before.length, 2, 'only the deliveries the worker has room for are added');
    t.true(before.every((d) => d.state === 'pending' && d.attempts[0]?.outcome === 'in_flight'));

    open();
    await receiver.until((r) => r.length === events.length);
    await heldInStream(nc, 0);
    const log = await eventually(
      () => hooks.deliveries(endpoint.id, 'limit=100'),
      (ds) => ds.length === events.length && ds.every((d) => d.state === 'succeeded'),
    );
    t.deepEqual(log.map((d) => d.event_id).sort(), [...events].sort());
    t.true(log.every((d) => d.attempts.length === 1 && d.attempts[0]?.outcome === 'succeeded'));
    t.is(new Set(receiver.requests.map((q) => q.delivery)).size, events.length, 'none sent twice');
    t.is(worker.stats.handedOver - handedOver, events.length, 'no round had to claim one');
  },
);

test.serial(
  'a fan-out that stops adds the events still waiting for room, and the worker sends them',
  async (t) => {
    const { sys, nc } = t.context;
    const { orgId, hooks, receiver, open, endpoint } = await gatedEndpoint(t);

    const events = await publishJobEvents(nc, orgId, 5);
    await receiver.until((r) => r.length === 1);
    await heldInStream(nc, 3);

    // Stopping does not wait for room: the three events are committed as due deliveries.
    await sys.system.webhooks.fanout.stop();
    await heldInStream(nc, 0);
    const added = await hooks.deliveries(endpoint.id, 'limit=100');
    t.is(added.length, events.length);

    open();
    await receiver.until((r) => r.length === events.length);
    const log = await eventually(
      () => hooks.deliveries(endpoint.id, 'limit=100'),
      (ds) => ds.every((d) => d.state === 'succeeded'),
    );
    t.deepEqual(log.map((d) => d.event_id).sort(), [...events].sort());
    t.is(new Set(receiver.requests.map((q) => q.delivery)).size, events.length, 'none sent twice');
  },
);
