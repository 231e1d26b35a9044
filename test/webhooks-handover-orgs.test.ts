/**
 * The fan-out's backpressure counts each organization's cap, not only the worker's room: with
 * room for 8 attempts in all and 2 per organization (one on the wire, one waiting), a receiver
 * that has not answered keeps an organization's other events unacknowledged in JetStream, and
 * every delivery still goes claimed as it is added, none by a round. Another organization's
 * events do not wait behind them, and an event waits for its organization's room for a bounded
 * time only, after which its deliveries are added due.
 */
import anyTest, { type TestFn } from 'ava';
import { ADMISSION_WAIT_MS } from '../services/webhooks/worker.js';
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

systemWithBus(test, { concurrency: 4, endpointConcurrency: 4, orgConcurrency: 1 });

test.serial(
  "an organization at its cap waits in the stream, another's events go meanwhile, all handed over",
  async (t) => {
    const { sys, nc } = t.context;
    const worker = sys.system.webhooks.worker;
    const handedOver = worker.stats.handedOver;
    const busy = await gatedEndpoint(t);

    const busyEvents = await publishJobEvents(nc, busy.orgId, 6);
    // The worker has room for 8, its organization for 2: the other four events wait in JetStream.
    await busy.receiver.until((r) => r.length === 1);
    await heldInStream(nc, 4);
    const before = await busy.hooks.deliveries(busy.endpoint.id, 'limit=100');
    t.is(before.length, 2, "only the deliveries the organization's cap allows are added");
    t.true(before.every((d) => d.state === 'pending' && d.attempts[0]?.outcome === 'in_flight'));

    // A second organization is not held back by the first one's cap.
    const other = await gatedEndpoint(t);
    other.open();
    const otherEvents = await publishJobEvents(nc, other.orgId, 3);
    await other.receiver.until((r) => r.length === otherEvents.length);
    await heldInStream(nc, 4);

    busy.open();
    await busy.receiver.until((r) => r.length === busyEvents.length);
    await heldInStream(nc, 0);
    for (const { hooks, endpoint, receiver, events } of [
      { ...busy, events: busyEvents },
      { ...other, events: otherEvents },
    ]) {
      const log = await eventually(
        () => hooks.deliveries(endpoint.id, 'limit=100'),
        (ds) => ds.length === events.length && ds.every((d) => d.state === 'succeeded'),
      );
      t.deepEqual(log.map((d) => d.event_id).sort(), [...events].sort());
      t.true(log.every((d) => d.attempts.length === 1));
      t.is(new Set(receiver.requests.map((q) => q.delivery)).size, events.length, 'none twice');
    }
    t.is(
      worker.stats.handedOver - handedOver,
      busyEvents.length + otherEvents.length,
      'no round had to claim one',
    );
  },
);

test.serial(
  'an event that waits for its organization longer than the bound is added due, and sent once',
  async (t) => {
    const { sys, nc } = t.context;
    const { orgId, hooks, receiver, open, endpoint } = await gatedEndpoint(t);

    const events = await publishJobEvents(nc, orgId, 6);
    await receiver.until((r) => r.length === 1);
    await heldInStream(nc, 4);

    // The receiver still has not answered: the four events stop waiting and free their places.
    sys.clock.advance(ADMISSION_WAIT_MS);
    await heldInStream(nc, 0);
    const added = await hooks.deliveries(endpoint.id, 'limit=100');
    t.is(added.length, events.length);
    t.is(added.filter((d) => d.attempts.length === 0).length, 4, 'four added due, not claimed');

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
