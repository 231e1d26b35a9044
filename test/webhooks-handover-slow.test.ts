/**
 * One slow receiver does not send its neighbours' deliveries through claim rounds: with room for
 * 16 attempts and one per endpoint on the wire (two held), an endpoint whose receiver has not
 * answered gets its later deliveries added due, to be claimed in order by rounds, while every
 * delivery of another endpoint of the same organization still goes claimed as the fan-out adds
 * it. Once the slow receiver answers, each of its deliveries arrives once.
 */
import anyTest, { type TestFn } from 'ava';
import { startReceiver } from './helpers/receiver.js';
import { eventually } from './helpers/system.js';
import {
  gatedEndpoint,
  heldInStream,
  publishJobEvents,
  type SystemWithBus,
  systemWithBus,
} from './helpers/webhooks.js';

const test = anyTest as TestFn<SystemWithBus>;

systemWithBus(test, { concurrency: 8, endpointConcurrency: 1, orgConcurrency: 8 });

test.serial(
  'an endpoint past its cap goes through rounds; the other endpoints of its organization are still handed over',
  async (t) => {
    const { sys, nc } = t.context;
    const worker = sys.system.webhooks.worker;
    const slow = await gatedEndpoint(t);
    const fastReceiver = await startReceiver();
    t.teardown(() => fastReceiver.close());
    const { endpoint: fast } = await slow.hooks.create(fastReceiver.url, ['job.created']);
    const handedOver = worker.stats.handedOver;

    const events: string[] = [];
    // One at a time, so that the fast endpoint itself never reaches its cap.
    for (let i = 0; i < 10; i++) {
      events.push(...(await publishJobEvents(nc, slow.orgId, 1)));
      await fastReceiver.until((r) => r.length === events.length);
    }
    await heldInStream(nc, 0);
    // The slow receiver holds its first request; one more of its deliveries waits for a slot.
    t.is(slow.receiver.requests.length, 1);
    const fastLog = await eventually(
      () => slow.hooks.deliveries(fast.id, 'limit=100'),
      (ds) => ds.length === events.length && ds.every((d) => d.state === 'succeeded'),
    );
    t.true(fastLog.every((d) => d.attempts.length === 1));
    t.is(
      worker.stats.handedOver - handedOver,
      events.length + 2,
      "every delivery of the fast endpoint, and the slow one's first two, went claimed as added",
    );

    slow.open();
    await slow.receiver.until((r) => r.length === events.length);
    const slowLog = await eventually(
      () => slow.hooks.deliveries(slow.endpoint.id, 'limit=100'),
      (ds) => ds.length === events.length && ds.every((d) => d.state === 'succeeded'),
    );
    t.deepEqual(slowLog.map((d) => d.event_id).sort(), [...events].sort());
    t.is(new Set(slow.receiver.requests.map((q) => q.delivery)).size, events.length, 'none twice');
    t.is(new Set(fastReceiver.requests.map((q) => q.delivery)).size, events.length, 'none twice');
  },
);

test.serial(
  'attempts waiting for a slot to an endpoint that is deleted are not sent; the one on the wire is',
  async (t) => {
    const { sys, nc } = t.context;
    const worker = sys.system.webhooks.worker;
    const slow = await gatedEndpoint(t);
    await publishJobEvents(nc, slow.orgId, 5);
    await heldInStream(nc, 0);
    // The receiver holds the first request; the next waits in the worker for its slot, and the
    // rest wait in the database.
    await slow.receiver.until((r) => r.length === 1);
    await slow.hooks.remove(slow.endpoint.id);
    slow.open();
    await worker.runDue();
    t.is(slow.receiver.requests.length, 1, 'only the attempt already on the wire reached it');
  },
);
