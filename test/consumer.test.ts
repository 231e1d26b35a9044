import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import anyTest, { type TestFn } from 'ava';
import { connectBus, type NatsConnection } from '../lib/bus.js';
import { startDurableConsumer } from '../lib/consumer.js';
import { silentLogger } from '../lib/logger.js';
import { startTestNats, type TestNats } from './helpers/nats.js';

const test = anyTest as TestFn<{ nats: TestNats; nc: NatsConnection }>;

test.before(async (t) => {
  const nats = await startTestNats();
  const nc = await connectBus({ url: nats.url, name: 'consumer-test', logger: silentLogger });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'WORK', subjects: ['work.>'] });
  t.context = { nats, nc };
});

test.after.always(async (t) => {
  await t.context.nc?.close();
  await t.context.nats?.stop();
});

test('a consumer handles at most `concurrency` messages at once, those of a key in order', async (t) => {
  const { nc } = t.context;
  const js = jetstream(nc);
  const total = 40;
  for (let i = 0; i < total; i++) {
    await js.publish(`work.k${i % 5}`, JSON.stringify({ key: `k${i % 5}`, n: i }));
  }
  let running = 0;
  let most = 0;
  const handled: Array<{ key: string; n: number }> = [];
  let done!: () => void;
  const allDone = new Promise<void>((resolve) => {
    done = resolve;
  });
  const consumer = await startDurableConsumer<{ key: string; n: number }>({
    nc,
    stream: 'WORK',
    durable: 'work',
    config: { filter_subject: 'work.>' },
    logger: silentLogger,
    parse: (msg) => msg.json(),
    concurrency: 4,
    keyOf: (v) => v.key,
    async handle(value) {
      running++;
      most = Math.max(most, running);
      // Handlers finish in a different order from the one they started in.
      await new Promise((resolve) => setTimeout(resolve, (value.n * 7) % 5));
      running--;
      handled.push(value);
      if (handled.length === total) done();
      return 'ack';
    },
  });
  t.teardown(() => consumer.stop());
  await allDone;

  t.is(most, 4, 'four at once, never more');
  t.deepEqual(
    handled.map((v) => v.n).sort((a, b) => a - b),
    [...Array(total).keys()],
  );
  for (const key of ['k0', 'k1', 'k2', 'k3', 'k4']) {
    const ns = handled.filter((v) => v.key === key).map((v) => v.n);
    t.deepEqual(
      ns,
      [...ns].sort((a, b) => a - b),
      `${key} in order`,
    );
  }
  const jsm = await jetstreamManager(nc);
  await t.notThrowsAsync(async () => {
    for (let i = 0; i < 50; i++) {
      const info = await jsm.consumers.info('WORK', 'work');
      if (info.num_ack_pending === 0 && info.num_pending === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('messages left unacknowledged');
  });
});

test('a message handled for longer than the ack wait is not sent again meanwhile', async (t) => {
  const { nc } = t.context;
  await (await jetstreamManager(nc)).streams.add({ name: 'SLOW', subjects: ['slow.>'] });
  const js = jetstream(nc);
  // The wait is the server's own timer, which no clock of the test can move: one of a second,
  // against a handler of three (and a message waiting behind it, by key, for as long).
  await js.publish('slow.a', JSON.stringify({ key: 'a', n: 1 }));
  await js.publish('slow.a', JSON.stringify({ key: 'a', n: 2 }));
  const deliveries: number[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const consumer = await startDurableConsumer<{ key: string; n: number }>({
    nc,
    stream: 'SLOW',
    durable: 'slow',
    config: { filter_subject: 'slow.>', ack_wait: 1_000_000_000 },
    logger: silentLogger,
    parse: (msg) => msg.json(),
    concurrency: 2,
    keyOf: (v) => v.key,
    async handle(value) {
      deliveries.push(value.n);
      if (value.n === 1) await new Promise((resolve) => setTimeout(resolve, 3_000));
      else done();
      return 'ack';
    },
  });
  t.teardown(() => consumer.stop());
  await finished;
  // Long enough for a redelivery of either to have come, had the wait run out.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  t.deepEqual(deliveries, [1, 2], 'each message handled once');
  const info = await (await jetstreamManager(nc)).consumers.info('SLOW', 'slow');
  t.is(info.num_redelivered, 0);
});

test('a consumer whose set-up the NATS server does not answer in time is set up once it answers', async (t) => {
  const nats = await startTestNats();
  t.teardown(() => nats.stop());
  const nc = await connectBus({ url: nats.url, name: 'consumer-setup', logger: silentLogger });
  t.teardown(() => nc.close());
  await (await jetstreamManager(nc)).streams.add({ name: 'SLOW', subjects: ['slow.>'] });
  // A server too busy to answer: its JetStream API requests time out.
  nats.kill('SIGSTOP');
  t.teardown(() => nats.kill('SIGCONT'));
  const waits: number[] = [];
  const handled: string[] = [];
  const consumer = await startDurableConsumer<string>({
    nc,
    stream: 'SLOW',
    durable: 'slow',
    config: { filter_subject: 'slow.>' },
    logger: silentLogger,
    parse: (msg) => msg.string(),
    async handle(value) {
      handled.push(value);
      return 'ack';
    },
    async sleep(ms) {
      waits.push(ms);
      nats.kill('SIGCONT');
    },
  });
  t.teardown(() => consumer.stop());
  t.true(waits.length >= 1, 'the first try timed out and was tried again');

  await jetstream(nc).publish('slow.a', 'after a slow start');
  await t.notThrowsAsync(async () => {
    for (let i = 0; i < 100 && handled.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (handled.length === 0) throw new Error('nothing handled');
  });
  t.deepEqual(handled, ['after a slow start']);
});
