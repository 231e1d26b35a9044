/**
 * The cluster helpers against real nats-server processes: a three-node JetStream cluster that
 * loses a stream's leader, and a supercluster of two regions whose gateway link is cut.
 */
import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';
import { type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import anyTest, { type TestFn } from 'ava';
import {
  retryUntil,
  startTestNatsCluster,
  startTestSupercluster,
  type TestNatsCluster,
  type TestSupercluster,
} from './helpers/nats-cluster.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';

const test = anyTest as TestFn<{ cluster?: TestNatsCluster; supercluster?: TestSupercluster }>;

test.before(async (t) => {
  const [cluster, supercluster] = await Promise.allSettled([
    startTestNatsCluster({ name: 'c1', size: 3 }),
    startTestSupercluster({ regions: ['a', 'b'] }),
  ]);
  t.context = {
    cluster: cluster.status === 'fulfilled' ? cluster.value : undefined,
    supercluster: supercluster.status === 'fulfilled' ? supercluster.value : undefined,
  };
  for (const result of [cluster, supercluster]) {
    if (result.status === 'rejected') throw result.reason;
  }
});

test.after.always(async (t) => {
  await Promise.all([t.context.cluster?.stop(), t.context.supercluster?.stop()]);
});

function given<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('fixture missing');
  return value;
}

async function messagesOf(jsm: JetStreamManager, stream: string, last: number): Promise<string[]> {
  const texts: string[] = [];
  for (let seq = 1; seq <= last; seq++) {
    const msg = await jsm.streams.getMessage(stream, { seq });
    if (!msg) throw new Error(`${stream} has no message ${seq}`);
    texts.push(msg.string());
  }
  return texts;
}

test('a replicated stream keeps every acknowledged message through the loss of its leader', async (t) => {
  const cluster = given(t.context.cluster);
  const nc = await connect({ servers: cluster.urls, reconnectTimeWait: 100 });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc, { timeout: 2_000 });
  const js = jetstream(nc, { timeout: 2_000 });
  await retryUntil(
    () => jsm.streams.add({ name: 'ORDERS', subjects: ['orders.>'], num_replicas: 3 }),
    { what: 'a stream with three replicas' },
  );

  const sent: string[] = [];
  for (let i = 1; i <= 20; i++) {
    const ack = await js.publish('orders.placed', `order ${i}`);
    t.is(ack.seq, i);
    sent.push(`order ${i}`);
  }

  const { cluster: before } = await jsm.streams.info('ORDERS');
  const leader = cluster.nodes.find((node) => node.serverName === before?.leader);
  if (!leader) throw new Error(`no node is the leader ${before?.leader}`);
  t.is(before?.replicas?.length, 2);
  leader.kill();

  // The survivors elect a new leader; until then a publish times out or finds no responder.
  const ack = await retryUntil(() => js.publish('orders.placed', 'after the leader died'), {
    timeoutMs: 30_000,
    what: 'a publish after the leader was killed',
  });
  sent.push('after the leader died');
  t.is(ack.seq, sent.length);
  const { cluster: after, state } = await jsm.streams.info('ORDERS');
  t.not(after?.leader, leader.serverName);
  t.is(state.messages, sent.length);
  t.deepEqual(await messagesOf(jsm, 'ORDERS', sent.length), sent);

  await leader.restart();
  await retryUntil(
    async () => {
      const info = await jsm.streams.info('ORDERS');
      const peer = info.cluster?.replicas?.find((replica) => replica.name === leader.serverName);
      if (!peer?.current || peer.offline || (peer.lag ?? 0) > 0) {
        throw new Error(`${leader.serverName} is not current: ${JSON.stringify(peer)}`);
      }
    },
    { timeoutMs: 30_000, what: 'the restarted node catching up' },
  );
  // Proof that it holds the messages: make it the leader and read them from it.
  await retryUntil(
    async () => {
      const { cluster: now } = await jsm.streams.info('ORDERS');
      if (now?.leader === leader.serverName) return;
      await nc.request('$JS.API.STREAM.LEADER.STEPDOWN.ORDERS', '', { timeout: 2_000 });
      throw new Error(`the leader is ${now?.leader}`);
    },
    { timeoutMs: 40_000, intervalMs: 500, what: 'the restarted node leading the stream' },
  );
  t.is((await jsm.streams.info('ORDERS')).state.messages, sent.length);
  t.deepEqual(await messagesOf(jsm, 'ORDERS', sent.length), sent);
});

test('a cut between regions stops core NATS across it but not the streams placed in a region', async (t) => {
  const { regions, link } = given(t.context.supercluster);
  const connectTo = async (region: string): Promise<NatsConnection> => {
    const nc = await connect({ servers: given(regions[region]).urls, name: `client-${region}` });
    t.teardown(() => nc.close());
    return nc;
  };
  const [a, b] = await Promise.all([connectTo('a'), connectTo('b')]);
  b.subscribe('probe.>', {
    callback: (_error, msg) => {
      msg.respond('b');
    },
  });
  await b.flush();
  const probe = async (timeout: number): Promise<string> =>
    (await a.request('probe.ping', '', { timeout })).string();
  // a learns of the subscription in b over the gateway a moment after b has it.
  t.is(await retryUntil(() => probe(500), { what: 'a request from a answered in b' }), 'b');

  // Each region's own client creates its stream, so the placement is what puts it there.
  const jsmA = await jetstreamManager(a, { timeout: 2_000 });
  const jsmB = await jetstreamManager(b, { timeout: 2_000 });
  const jsA = jetstream(a, { timeout: 1_000 });
  const jsB = jetstream(b, { timeout: 1_000 });
  const inA = await retryUntil(
    () =>
      jsmA.streams.add({
        name: 'IN_A',
        subjects: ['in-a.>'],
        placement: { cluster: 'a', tags: [] },
      }),
    { what: 'a stream placed in a' },
  );
  const inB = await retryUntil(
    () =>
      jsmB.streams.add({
        name: 'IN_B',
        subjects: ['in-b.>'],
        placement: { cluster: 'b', tags: [] },
      }),
    { what: 'a stream placed in b' },
  );
  t.is(inA.cluster?.name, 'a');
  t.is(inB.cluster?.name, 'b');
  await jsB.publish('in-b.event', 'before the cut');

  // A delay on the link holds back both the request and the reply.
  link.setDelay(150);
  const started = Date.now();
  t.is(await probe(5_000), 'b');
  t.true(Date.now() - started >= 300, `round trip took ${Date.now() - started} ms`);
  link.setDelay(0);

  await link.cut();
  await t.throwsAsync(probe(500));
  // A stream's own group lives in its region: it takes writes there without the other region,
  // although the JetStream meta group (one server in each region) has no majority.
  t.is((await jsA.publish('in-a.event', 'during the cut')).seq, 1);
  t.is((await jsB.publish('in-b.event', 'during the cut')).seq, 2);
  t.is((await jsmA.streams.info('IN_A')).state.messages, 1);
  // ...but a region cannot write to the other's stream.
  await t.throwsAsync(jsA.publish('in-b.event', 'from a during the cut'));

  link.restore();
  t.is(await retryUntil(() => probe(500), { timeoutMs: 15_000, what: 'the link back' }), 'b');
  const fromA = await retryUntil(() => messagesOf(jsmA, 'IN_B', 2), {
    timeoutMs: 15_000,
    what: 'the stream in b read from a',
  });
  t.deepEqual(fromA, ['before the cut', 'during the cut']);
  // Read with a consumer too, as the services read streams.
  const read = await retryUntil(
    async () => {
      const consumer = await jsA.consumers.get('IN_B');
      const texts: string[] = [];
      for await (const msg of await consumer.fetch({ max_messages: 2, expires: 1_000 })) {
        texts.push(msg.string());
      }
      if (texts.length < 2) throw new Error(`read ${texts.length} of 2`);
      return texts;
    },
    { timeoutMs: 30_000, what: 'a consumer in a of the stream in b' },
  );
  t.deepEqual(read, ['before the cut', 'during the cut']);
});

test('the proxy keeps the order of chunks while its delay changes, and refuses while cut', async (t) => {
  const echo = createServer((socket) => socket.pipe(socket));
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  t.teardown(() => echo.close());
  const address = echo.address();
  if (address === null || typeof address === 'string') throw new Error('echo has no port');
  const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: address.port } });
  t.teardown(() => proxy.stop());

  const open = async (): Promise<{ socket: Socket; received: () => string }> => {
    const socket = createConnection({ host: '127.0.0.1', port: proxy.port });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', () => {});
    await once(socket, 'connect');
    return { socket, received: () => text };
  };
  const { socket, received } = await open();
  const expected: string[] = [];
  for (let i = 0; i < 20; i++) {
    // Lowering the delay mid-stream must not let a later chunk overtake an earlier one.
    proxy.setDelay(i % 2 === 0 ? 60 : 0);
    expected.push(`<${i}>`);
    socket.write(`<${i}>`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await retryUntil(async () => {
    if (received().length < expected.join('').length) throw new Error(received());
  });
  t.is(received(), expected.join(''));

  proxy.setDelay(0);
  const closed = once(socket, 'close');
  await proxy.cut();
  await closed;
  const refused = await open();
  await once(refused.socket, 'close');
  t.is(refused.received(), '');

  proxy.restore();
  const again = await open();
  again.socket.write('back');
  await retryUntil(async () => {
    if (again.received() !== 'back') throw new Error(again.received());
  });
  again.socket.destroy();
  t.is(again.received(), 'back');
});
