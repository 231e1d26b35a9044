/**
 * Webhooks under more than one worker and across a crash: two replicas share the schedule and send
 * each attempt once; a `spool serve webhooks` process killed with SIGKILL mid-schedule and started
 * again loses no delivery (events published while it was down included) and sends no attempt
 * twice.
 */
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import test from 'ava';
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { connectBus } from '../lib/bus.js';
import { createPool } from '../lib/db.js';
import { createClient } from '../lib/grpc.js';
import { silentLogger } from '../lib/logger.js';
import { createWebhooks, WEBHOOK_DEFAULTS } from '../services/webhooks/index.js';
import { CLUSTER_OPERATOR_TOKEN, startCluster } from './helpers/cluster.js';
import { type Received, type Receiver, startReceiver } from './helpers/receiver.js';
import { call, createOrg, eventually, OPERATOR_TOKEN, startTestSystem } from './helpers/system.js';
import { type DeliveryView, publishJobEvents, webhookAdmin } from './helpers/webhooks.js';

/** Publishes `count` job events of an organization straight to the bus, as the jobs outbox does. */
async function publishEvents(natsUrl: string, orgId: string, count: number): Promise<string[]> {
  const nc = await connect({ servers: natsUrl });
  try {
    return await publishJobEvents(nc, orgId, count);
  } finally {
    await nc.close();
  }
}

/** Each (delivery, attempt) the receiver got, with how often it got it. */
function sends(receiver: Receiver): Map<string, number> {
  const seen = new Map<string, number>();
  for (const q of receiver.requests) {
    const key = `${q.delivery}#${q.attempt}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return seen;
}

test('two webhooks replicas share the schedule and send each attempt once', async (t) => {
  const secretKey = randomBytes(32);
  const settings = { secretKey, concurrency: 4, endpointConcurrency: 2 };
  const sys = await startTestSystem({ webhooks: settings });
  t.teardown(() => sys.stop());
  const pool = createPool({ url: sys.db.url, max: 5 });
  const nc = await connectBus({ url: sys.nats.url, name: 'webhooks-b', logger: silentLogger });
  const accounts = createClient(AccountsServiceClient, {
    service: 'accounts',
    address: sys.system.servicesAddress,
  });
  const b = await createWebhooks({
    pool,
    nc,
    logger: silentLogger,
    clock: sys.clock,
    settings: { ...WEBHOOK_DEFAULTS, allowInsecure: true, ...settings },
    accounts,
  });
  t.teardown(async () => {
    await b.stop();
    accounts.close();
    await nc.drain();
    await pool.end();
  });
  const a = sys.system.webhooks;

  const orgId = await createOrg(sys.url);
  const hooks = webhookAdmin(sys.url, OPERATOR_TOKEN, orgId);
  const fail = (q: Received) => ({ status: q.attempt === 1 ? 500 : 200 });
  const receivers = await Promise.all([1, 2, 3].map(() => startReceiver(fail)));
  t.teardown(() => Promise.all(receivers.map((r) => r.close())));
  const endpoints: string[] = [];
  for (const r of receivers)
    endpoints.push((await hooks.create(r.url, ['job.created'])).endpoint.id);
  // The delivery log of every endpoint, as an operator reads it. A read that loses a serialization
  // conflict to the workers answers 503, which a client tries again, as this poll does.
  const log = async (): Promise<DeliveryView[]> => {
    try {
      return (await Promise.all(endpoints.map((id) => hooks.deliveries(id, 'limit=100')))).flat();
    } catch (err) {
      if (/got 503/.test((err as Error).message)) return [];
      throw err;
    }
  };

  const events = 20;
  await publishEvents(sys.nats.url, orgId, events);
  // A request reaching a receiver is not its attempt being recorded: wait for the log to show every
  // first attempt failed and the second scheduled before moving the clock past the 30 s wait.
  await eventually(
    log,
    (items) =>
      items.length === events * 3 &&
      items.every((d) => d.attempts[0]?.outcome === 'failed' && d.next_attempt_at !== null),
    30_000,
  );

  sys.clock.advance(40_000);
  // Both replicas claim at once. Neither call waits for the other replica, and a replica whose
  // claim found the due rows locked by the other's returns and may claim the rest on its next
  // poll; so the test waits for what it asserts, every delivery recorded as succeeded.
  await Promise.all([a.worker.runDue(), b.worker.runDue()]);
  const done = await eventually(
    log,
    (items) => items.length === events * 3 && items.every((d) => d.state === 'succeeded'),
    30_000,
  );

  for (const d of done) {
    t.deepEqual(
      d.attempts.map((x) => [x.number, x.outcome, x.status_code]),
      [
        [1, 'failed', 500],
        [2, 'succeeded', 200],
      ],
    );
  }
  for (const r of receivers) {
    const seen = sends(r);
    t.is(seen.size, events * 2, 'two attempts of each of the events');
    t.true(
      [...seen.values()].every((n) => n === 1),
      'no attempt sent twice',
    );
  }
  t.true(a.worker.stats.attempts > 0 && b.worker.stats.attempts > 0, 'both replicas worked');
  t.is(a.worker.stats.attempts + b.worker.stats.attempts, events * 3 * 2);
});

test('a webhooks service killed mid-schedule and restarted loses no delivery and sends no attempt twice', async (t) => {
  const cluster = await startCluster({
    webhooksEnv: {
      WEBHOOK_RETRY_WAITS: '1s,1s,1s,1s,1s,1s,1s',
      WEBHOOK_POLL_MS: '100',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_LEASE_MS: '1500',
    },
  });
  t.teardown(() => cluster.stop());
  const created = await call<{ org: { id: string } }>(cluster.url, 'POST', '/admin/v1/orgs', {
    token: CLUSTER_OPERATOR_TOKEN,
    body: { name: 'Acme Print' },
  });
  const orgId = created.body.org.id;
  const hooks = webhookAdmin(cluster.url, CLUSTER_OPERATOR_TOKEN, orgId);
  // Attempts 1 to 3 fail, the 4th succeeds: the schedule is half way when the service dies.
  const receiver = await startReceiver((q) => ({ status: q.attempt <= 3 ? 500 : 200 }));
  t.teardown(() => receiver.close());
  const { endpoint } = await hooks.create(receiver.url);

  const pings: string[] = [];
  for (let i = 0; i < 10; i++) pings.push((await hooks.ping(endpoint.id)).id);
  await receiver.until((r) =>
    pings.every((id) => r.some((q) => q.delivery === id && q.attempt >= 2)),
  );
  const service = cluster.processes.get('webhooks');
  service?.child.kill('SIGKILL');
  await service?.exited;
  const killedAt = receiver.requests.length;

  // Events keep coming while the service is down; they wait in the stream.
  const published = await publishEvents(cluster.nats.url, orgId, 5);
  await cluster.start('webhooks');

  const succeeded = (r: Received[]) => {
    const done = new Set(r.filter((q) => q.attempt >= 4).map((q) => q.delivery));
    return done.size;
  };
  await receiver.until((r) => succeeded(r) === pings.length + published.length, 30_000);
  t.true(receiver.requests.length > killedAt, 'delivery went on after the restart');

  const seen = sends(receiver);
  t.true(
    [...seen.values()].every((n) => n === 1),
    'no attempt was sent twice',
  );
  // The log is read while the worker still writes: a read that loses a serialization conflict
  // answers 503, which a client tries again, as this poll does.
  const log = await eventually(
    () =>
      hooks.deliveries(endpoint.id).catch((err: Error) => {
        if (/got 503/.test(err.message)) return [];
        throw err;
      }),
    (items) => items.length === 15 && items.every((d) => d.state === 'succeeded'),
    10_000,
  );
  t.deepEqual(
    log
      .map((d) => d.event_id)
      .filter((id) => published.includes(id))
      .sort(),
    [...published].sort(),
    'events published while the service was down were delivered',
  );
  const abandoned = log.flatMap((d) => d.attempts).filter((a) => a.outcome === 'abandoned');
  t.log(`${killedAt} requests before the kill, ${abandoned.length} attempts abandoned by it`);
  for (const d of log) {
    const numbers = d.attempts.map((a) => a.number);
    t.deepEqual(
      numbers,
      Array.from({ length: d.attempt_count }, (_, i) => i + 1),
    );
    const received = receiver.forDelivery(d.id).map((q) => q.attempt);
    // Every request the receiver got is a logged attempt; an attempt the killed process had
    // claimed but may not have sent is logged as abandoned.
    t.true(received.every((n) => numbers.includes(n)));
    for (const a of d.attempts) {
      if (a.outcome !== 'abandoned') t.true(received.includes(a.number), `${d.id}#${a.number}`);
    }
  }
});
