import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { ALL_MIGRATIONS } from '../cli/system.js';
import { createPool, type Pool, queryThenCommit, type TxClient, withTx } from '../lib/db.js';
import { migrate, splitStatements } from '../lib/migrate.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const test = anyTest as TestFn<{ db: TestDatabase; pool: Pool }>;

test.before(async (t) => {
  const db = await createTestDatabase();
  t.context = { db, pool: createPool({ url: db.url, max: 20 }) };
});

test.after.always(async (t) => {
  await t.context.pool?.end();
  await t.context.db?.drop();
});

test('transactions run SERIALIZABLE', async (t) => {
  const level = await withTx(t.context.pool, async (tx) => {
    const { rows } = await tx.query<{ transaction_isolation: string }>(
      'SHOW transaction_isolation',
    );
    return rows[0]?.transaction_isolation;
  });
  t.is(level, 'serializable');
});

/**
 * Twenty transactions that each read a counter and write it plus one, all at once, with the write
 * sent by `write`; asserts that every one committed and that some had to be retried.
 */
async function contendedCounter(
  t: ExecutionContext<{ pool: Pool }>,
  table: string,
  write: (tx: TxClient, n: number) => Promise<unknown>,
) {
  const { pool } = t.context;
  await pool.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, n INT NOT NULL)`);
  await pool.query(`INSERT INTO ${table} VALUES (1, 0)`);
  let attempts = 0;
  const writers = 20;
  await Promise.all(
    Array.from({ length: writers }, () =>
      withTx(
        pool,
        async (tx) => {
          attempts++;
          const { rows } = await tx.query<{ n: number }>(`SELECT n FROM ${table} WHERE id = 1`);
          await write(tx, (rows[0]?.n ?? 0) + 1);
        },
        { attempts: 100 },
      ),
    ),
  );
  const { rows } = await pool.query<{ n: number }>(`SELECT n FROM ${table} WHERE id = 1`);
  t.is(rows[0]?.n, writers, 'a lost update means a conflict was not retried');
  t.true(attempts > writers, 'the contention produced no serialization failure to retry');
}

test('conflicting read-then-write transactions are retried until every one commits', (t) =>
  contendedCounter(t, 'counters', (tx, n) =>
    tx.query('UPDATE counters SET n = $1 WHERE id = 1', [n]),
  ));

test('an error that is not a serialization failure rolls back and is not retried', async (t) => {
  const { pool } = t.context;
  await pool.query('CREATE TABLE once (id INT PRIMARY KEY)');
  let attempts = 0;
  await t.throwsAsync(
    withTx(pool, async (tx) => {
      attempts++;
      await tx.query('INSERT INTO once VALUES (1)');
      await tx.query('INSERT INTO once VALUES (1)');
    }),
    { message: /duplicate key/ },
  );
  t.is(attempts, 1);
  const { rows } = await pool.query('SELECT * FROM once');
  t.is(rows.length, 0);
});

test('a last statement sent with its COMMIT is committed when withTx returns, and one that fails commits nothing', async (t) => {
  const { pool } = t.context;
  await pool.query('CREATE TABLE lasts (id INT PRIMARY KEY)');
  const inserted = await withTx(pool, async (tx) => {
    await tx.query('INSERT INTO lasts VALUES (1)');
    const { rows } = await queryThenCommit<{ id: number }>(
      tx,
      'INSERT INTO lasts VALUES (2) RETURNING id',
    );
    return rows.map((r) => r.id);
  });
  t.deepEqual(inserted, [2]);
  await t.throwsAsync(
    withTx(pool, async (tx) => {
      await tx.query('INSERT INTO lasts VALUES (3)');
      await queryThenCommit(tx, 'INSERT INTO lasts VALUES (1)');
    }),
    { message: /duplicate key/ },
  );
  const { rows } = await pool.query<{ id: number }>('SELECT id FROM lasts ORDER BY id');
  t.deepEqual(
    rows.map((r) => r.id),
    [1, 2],
    'an insert of the transaction whose last statement failed was committed',
  );
});

test('conflicting transactions whose last statement carries the COMMIT are retried until every one commits', (t) =>
  contendedCounter(t, 'piped', (tx, n) =>
    queryThenCommit(tx, 'UPDATE piped SET n = $1 WHERE id = 1', [n]),
  ));

test('a last statement with its COMMIT is refused outside a transaction and after another', async (t) => {
  const { pool } = t.context;
  const client = await pool.connect();
  t.teardown(() => client.release());
  t.throws(() => queryThenCommit(client, 'SELECT 1'), { message: /inside withTx/ });
  await t.throwsAsync(
    withTx(pool, async (tx) => {
      await queryThenCommit(tx, 'SELECT 1');
      await queryThenCommit(tx, 'SELECT 2');
    }),
    { message: /inside withTx/ },
  );
});

test('a lone statement the database fails to serialize runs again, and other errors do not', async (t) => {
  const { pool } = t.context;
  // Fails with SQLSTATE 40001 until the sequence, which no rollback turns back, passes `fails`.
  await pool.query(`CREATE SEQUENCE lone_tries;
    CREATE TABLE lone_rows (n INT NOT NULL);
    CREATE FUNCTION lone_flaky(fails INT) RETURNS INT LANGUAGE plpgsql AS $$
    DECLARE n INT := nextval('lone_tries');
    BEGIN
      IF n <= fails THEN
        RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001';
      END IF;
      RETURN n;
    END $$`);
  // A read, with its parameters (prepared), and a write: each is tried until it goes through.
  const { rows } = await pool.query<{ n: number }>('SELECT lone_flaky($1) AS n', [2]);
  t.is(rows[0]?.n, 3);
  await pool.query('INSERT INTO lone_rows (n) SELECT lone_flaky(5)');
  const written = await pool.query<{ n: number }>('SELECT n FROM lone_rows');
  t.deepEqual(
    written.rows.map((r) => r.n),
    [6],
  );
  // Any other error is the caller's at once.
  await t.throwsAsync(pool.query('SELECT lone_flaky($1) / 0', [0]), {
    message: /division by zero/,
  });
  t.is((await pool.query<{ n: string }>('SELECT last_value AS n FROM lone_tries')).rows[0]?.n, '7');
});

test('migrations apply in order once, and a second run applies nothing', async (t) => {
  const { pool } = t.context;
  const dir = await mkdtemp(join(tmpdir(), 'spool-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, '001_first.sql'),
    '-- a table\nCREATE TABLE IF NOT EXISTS widgets (\n  id UUID PRIMARY KEY\n);\n\nCREATE INDEX IF NOT EXISTS widgets_id ON widgets (id);\n',
  );
  await writeFile(
    join(dir, '002_second.sql'),
    'ALTER TABLE widgets ADD COLUMN IF NOT EXISTS name TEXT;\n',
  );
  const set = { service: 'widgets', dir };
  t.deepEqual(await migrate(pool, [set]), ['widgets/001_first.sql', 'widgets/002_second.sql']);
  t.deepEqual(await migrate(pool, [set]), []);
  const { rows } = await pool.query(
    "SELECT column_name FROM information_schema.columns WHERE table_name = 'widgets' ORDER BY 1",
  );
  t.deepEqual(
    rows.map((r) => r.column_name),
    ['id', 'name'],
  );
});

test('migration files split into one statement per trailing semicolon', (t) => {
  t.deepEqual(splitStatements('-- c\nCREATE TABLE a (\n  x INT\n);\nSELECT 1;\n\nSELECT 2'), [
    'CREATE TABLE a (\n  x INT\n)',
    'SELECT 1',
    'SELECT 2',
  ]);
});

test('two runs of every migration at once on a fresh database both succeed, each applied once', async (t) => {
  // As when every region's release runs its migration hook against one database.
  for (let round = 0; round < 3; round++) {
    const db = await createTestDatabase();
    const first = createPool({ url: db.url, max: 2 });
    const second = createPool({ url: db.url, max: 2 });
    try {
      const runs = await Promise.all([first, second].map((pool) => migrate(pool, ALL_MIGRATIONS)));
      const { rows } = await first.query<{ n: string }>(
        'SELECT count(*) AS n FROM schema_migrations',
      );
      const recorded = Number(rows[0]?.n);
      t.true(recorded > ALL_MIGRATIONS.length, `${recorded} migrations recorded`);
      // Between them the two runs applied every migration.
      t.is(new Set(runs.flat()).size, recorded);
      // And a third finds nothing to do.
      t.deepEqual(await migrate(first, ALL_MIGRATIONS), []);
    } finally {
      await Promise.all([first.end(), second.end()]);
      await db.drop();
    }
  }
});
