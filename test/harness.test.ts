import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import anyTest, { type TestFn } from 'ava';
import pg from 'pg';
import { startTestNats, type TestNats } from './helpers/nats.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const test = anyTest as TestFn<{ first: TestDatabase; second: TestDatabase; nats: TestNats }>;

test.before(async (t) => {
  const [first, second, nats] = await Promise.all([
    createTestDatabase(),
    createTestDatabase(),
    startTestNats(),
  ]);
  t.context = { first, second, nats };
});

test.after.always(async (t) => {
  // before() may have failed part-way; tear down whatever exists.
  await Promise.all([t.context.first?.drop(), t.context.second?.drop(), t.context.nats?.stop()]);
});

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

test('a fresh database accepts queries and runs transactions serializable', async (t) => {
  const { first } = t.context;
  t.deepEqual(await query(first.url, 'SELECT 1 + 1 AS two'), [{ two: 2 }]);
  t.deepEqual(await query(first.url, 'SHOW transaction_isolation'), [
    { transaction_isolation: 'serializable' },
  ]);
});

test('two fresh databases are distinct', async (t) => {
  const { first, second } = t.context;
  t.not(first.name, second.name);
  await query(first.url, 'CREATE TABLE only_in_first (id INT PRIMARY KEY)');
  const [row] = await query<{ current_database: string; table: string | null }>(
    second.url,
    "SELECT current_database(), to_regclass('only_in_first')::text AS table",
  );
  t.deepEqual(row, { current_database: second.name, table: null });
});

test('the test nats-server keeps a JetStream message across a restart', async (t) => {
  const { nats } = t.context;
  const before = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(before);
    await jsm.streams.add({ name: 'HARNESS', subjects: ['harness.>'] });
    const ack = await jetstream(before).publish('harness.hello', 'kept');
    t.is(ack.seq, 1);
  } finally {
    await before.close();
  }

  const pid = nats.pid;
  await nats.restart();
  t.not(nats.pid, pid);

  const after = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(after);
    const message = await jsm.streams.getMessage('HARNESS', { seq: 1 });
    t.is(message?.subject, 'harness.hello');
    t.is(message?.string(), 'kept');
  } finally {
    await after.close();
  }
});
