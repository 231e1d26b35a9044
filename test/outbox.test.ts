import { jetstreamManager } from '@nats-io/jetstream';
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import anyTest, { type TestFn } from 'ava';
import { connectBus, ensureStreams, type NatsConnection } from '../lib/bus.js';
import { ManualClock } from '../lib/clock.js';
import { createPool, type Pool, withTx } from '../lib/db.js';
import { FailureLog } from '../lib/failure-log.js';
import { createLogger, silentLogger } from '../lib/logger.js';
import { enqueue, OutboxRelay } from '../lib/outbox.js';
import { startTestNats, type TestNats, untilJetStreamAnswers } from './helpers/nats.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const test = anyTest as TestFn<{
  db: TestDatabase;
  pool: Pool;
  nats: TestNats;
  nc: NatsConnection;
}>;

const TABLE = 'test_outbox';

/** Reads this process's metrics on demand, as a scrape does. */
class OnDemandReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}
const reader = new OnDemandReader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

/** The value a gauge has for the test table, or undefined when it was not observed. */
async function gauge(name: string): Promise<number | undefined> {
  const { resourceMetrics } = await reader.collect();
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      const point = metric.dataPoints.find((p) => p.attributes['spool.outbox.table'] === TABLE);
      if (point) return point.value as number;
    }
  }
  return undefined;
}

test.before(async (t) => {
  const [db, nats] = await Promise.all([createTestDatabase(), startTestNats()]);
  const pool = createPool({ url: db.url });
  await pool.query(`CREATE TABLE ${TABLE} (
    id UUID PRIMARY KEY, subject TEXT NOT NULL, payload BYTEA NOT NULL,
    headers JSONB NOT NULL DEFAULT '{}', created_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
  const nc = await connectBus({ url: nats.url, name: 'outbox-test', logger: silentLogger });
  await ensureStreams(nc);
  t.context = { db, pool, nats, nc };
});

test.after.always(async (t) => {
  await t.context.nc?.close();
  await t.context.pool?.end();
  await Promise.all([t.context.nats?.stop(), t.context.db?.drop()]);
});

async function streamCount(nc: NatsConnection, subject: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info('EVENTS', { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

async function rowsLeft(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${TABLE}`);
  return Number(rows[0]?.n);
}

test.serial('two relays publish each committed row once and empty the outbox', async (t) => {
  const { pool, nc } = t.context;
  const subject = 'events.org-a.job.created';
  await withTx(pool, (tx) =>
    enqueue(
      tx,
      TABLE,
      Array.from({ length: 300 }, (_, i) => ({ subject, payload: { n: i } })),
    ),
  );
  // A rolled-back transaction leaves nothing to publish.
  await t.throwsAsync(
    withTx(pool, async (tx) => {
      await enqueue(tx, TABLE, [{ subject, payload: { n: 'never' } }]);
      throw new Error('abandon');
    }),
  );
  const relays = [1, 2].map(
    () => new OutboxRelay({ pool, nc, table: TABLE, logger: silentLogger, batchSize: 64 }),
  );
  for (const relay of relays) relay.kick();
  await Promise.all(relays.map((r) => r.stop()));
  t.is(await rowsLeft(pool), 0);
  t.is(await streamCount(nc, subject), 300);
});

test.serial('rows written while NATS is down are published once it is back', async (t) => {
  const { pool, nats } = t.context;
  const nc = await connectBus({ url: nats.url, name: 'outbox-restart', logger: silentLogger });
  t.teardown(() => nc.close());
  const lines: Array<{ level: string; msg: string; failures?: number }> = [];
  const logger = createLogger(
    { level: 'info', name: 'relay' },
    { write: (l) => lines.push(JSON.parse(l)) },
  );
  const relay = new OutboxRelay({ pool, nc, table: TABLE, logger });
  const subject = 'events.org-b.job.printed';
  nats.kill('SIGKILL');
  await withTx(pool, (tx) =>
    enqueue(
      tx,
      TABLE,
      Array.from({ length: 5 }, (_, i) => ({ subject, payload: { n: i } })),
    ),
  );
  relay.start();
  await relay.idle();
  t.is(await rowsLeft(pool), 5, 'rows must stay while nothing acknowledged them');
  // The backlog shows in the metrics while it lasts.
  t.is(await gauge('spool.outbox.backlog'), 5);
  t.true(((await gauge('spool.outbox.oldest.age')) ?? -1) >= 0);
  await nats.restart();
  const deadline = Date.now() + 10_000;
  while ((await rowsLeft(pool)) > 0 && Date.now() < deadline) {
    relay.kick();
    await relay.idle();
  }
  t.is(await gauge('spool.outbox.backlog'), 0);
  t.is(await gauge('spool.outbox.oldest.age'), 0);
  await relay.stop();
  t.is(await rowsLeft(pool), 0);
  t.is(await streamCount(nc, subject), 5);
  // The outage is two lines, however many publishes failed in it: when it began, when it ended.
  const failed = lines.filter((l) => l.msg.startsWith('publishing the test_outbox outbox failed'));
  const back = lines.filter((l) => l.msg === 'publishing the test_outbox outbox works again');
  t.is(failed.length, 1);
  t.is(back.length, 1);
  t.true((back[0]?.failures ?? 0) >= 5);
  // The next test publishes on the shared connection, which may still be reconnecting.
  await untilJetStreamAnswers(t.context.nc);
});

test.serial(
  'rows handed over after commit are published and deleted without a poll; the poll takes only older rows',
  async (t) => {
    const { pool, nc } = t.context;
    const subject = 'events.org-c.job.created';
    // A relay that never polls by itself: only what is handed over, or kicked, is published.
    const relay = new OutboxRelay({
      pool,
      nc,
      table: TABLE,
      logger: silentLogger,
      pollMs: 3_600_000,
    });
    const rows = await withTx(pool, (tx) =>
      enqueue(
        tx,
        TABLE,
        Array.from({ length: 50 }, (_, i) => ({ subject, payload: { n: i } })),
      ),
    );
    relay.send(rows);
    await relay.idle();
    t.is(await rowsLeft(pool), 0, 'every handed-over row is deleted once published');
    t.is(await streamCount(nc, subject), 50);

    await relay.stop();

    // The poll leaves a fresh row to the process that wrote it, which is publishing it, and takes a
    // row old enough that its writer must have died with it. The rounds are run by hand, so no
    // timer is involved: `pollMs` never elapses.
    const polling = new OutboxRelay({
      pool,
      nc,
      table: TABLE,
      logger: silentLogger,
      pollMs: 3_600_000,
      handOffMs: 60_000,
    });
    const orphan = 'events.org-c.job.printed';
    await withTx(pool, (tx) => enqueue(tx, TABLE, [{ subject: orphan, payload: { n: 'orphan' } }]));
    await polling.poll();
    t.is(await rowsLeft(pool), 1, 'a poll leaves the fresh row alone');
    // Polls that come while a round runs are folded into the next round, still a poll's round.
    await Promise.all([polling.poll(), polling.poll(), polling.poll()]);
    t.is(await rowsLeft(pool), 1, 'overlapping polls leave the fresh row alone too');
    await pool.query(`UPDATE ${TABLE} SET created_at = now() - INTERVAL '2 minutes'`);
    await polling.poll();
    t.is(await rowsLeft(pool), 0, 'a poll takes a row its writer left behind');
    await polling.stop();
    t.is(await streamCount(nc, orphan), 1);
  },
);

test('a failure that goes on is logged again once a minute with its count, and its end once', (t) => {
  const lines: Array<{ level: string; msg: string; failures?: number; failing_s?: number }> = [];
  const logger = createLogger(
    { level: 'info', name: 'x' },
    { write: (l) => lines.push(JSON.parse(l)) },
  );
  const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
  const log = new FailureLog(logger, 'the work', clock);
  log.failed(new Error('away'));
  clock.advance(30_000);
  log.failed(new Error('away'));
  clock.advance(31_000);
  log.failed(new Error('away'));
  log.succeeded();
  log.succeeded();
  t.deepEqual(
    lines.map(({ level, msg, failures, failing_s }) => ({ level, msg, failures, failing_s })),
    [
      {
        level: 'warn',
        msg: 'the work failed; will retry (until it works again, failures are counted each minute)',
        failures: undefined,
        failing_s: undefined,
      },
      { level: 'warn', msg: 'the work still failing; will retry', failures: 3, failing_s: 61 },
      { level: 'info', msg: 'the work works again', failures: 3, failing_s: undefined },
    ],
  );
});
