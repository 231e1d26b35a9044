/**
 * Statements with parameters are prepared on each connection (lib/db.ts). The names are the
 * process's, shared by every pool: the two tests that look at a statement's name run first, one
 * after the other, before the test that uses up every name.
 */
import anyTest, { type TestFn } from 'ava';
import { createPool, MAX_PREPARED, type TxClient, withTx } from '../lib/db.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const test = anyTest as TestFn<{ db: TestDatabase }>;

test.before(async (t) => {
  t.context = { db: await createTestDatabase() };
});

test.after.always(async (t) => {
  await t.context.db?.drop();
});

/** The statements prepared on `client`'s connection, by their text. */
async function prepared(client: TxClient): Promise<string[]> {
  const { rows } = await client.query<{ statement: string }>(
    'SELECT statement FROM pg_prepared_statements',
  );
  return rows.map((r) => r.statement);
}

test.serial(
  'a statement with parameters is prepared once on a connection and then run by name',
  async (t) => {
    const pool = createPool({ url: t.context.db.url, max: 1 });
    t.teardown(() => pool.end());
    const text = 'SELECT $1::INT + 1 AS n';
    const answers = [];
    for (const n of [1, 2, 3])
      answers.push((await pool.query<{ n: number }>(text, [n])).rows[0]?.n);
    t.deepEqual(answers, [2, 3, 4]);
    const client = await pool.connect();
    t.teardown(() => client.release());
    t.deepEqual(
      (await prepared(client)).filter((s) => s === text),
      [text],
      'the statement was not prepared, or prepared more than once',
    );
  },
);

test.serial(
  'a statement prepared in a transaction that failed first runs again on the same connection',
  async (t) => {
    const pool = createPool({ url: t.context.db.url, max: 1 });
    t.teardown(() => pool.end());
    await pool.query('CREATE TABLE aborted (id INT PRIMARY KEY)');
    const text = 'SELECT $1::INT * 2 AS n';
    await t.throwsAsync(
      withTx(pool, async (tx) => {
        // Both go out before either is answered: the second is parsed in a transaction the first
        // has already failed, so the server refuses it and keeps no statement of its name.
        const first = tx.query('INSERT INTO aborted VALUES (1), (1)');
        const second = tx.query(text, [1]);
        await Promise.allSettled([first, second]);
        await first;
      }),
      { message: /duplicate key/ },
    );
    const { rows } = await pool.query<{ n: number }>(text, [21]);
    t.is(rows[0]?.n, 42);
  },
);

test(`statements beyond ${MAX_PREPARED} distinct texts still run, unprepared`, async (t) => {
  const pool = createPool({ url: t.context.db.url, max: 1 });
  t.teardown(() => pool.end());
  const count = MAX_PREPARED + 20;
  for (let k = 0; k < count; k++) {
    const { rows } = await pool.query<{ n: number }>(`SELECT $1::INT + ${k} AS n`, [1]);
    t.is(rows[0]?.n, 1 + k);
  }
  const client = await pool.connect();
  t.teardown(() => client.release());
  t.true((await prepared(client)).length <= MAX_PREPARED);
});
