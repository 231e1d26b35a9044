/**
 * Group commit in the jobs store, on a real PostgreSQL: creations (services/jobs/creation.ts) and
 * transitions (a station's reports, the API's actions) that arrive together commit together, each
 * answered with its own outcome, and one that cannot be made fails alone.
 */
import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { ManualClock } from '../lib/clock.js';
import type { Pool } from '../lib/db.js';
import type { OutboxRow } from '../lib/outbox.js';
import { migrations } from '../services/jobs/index.js';
import type { NewJob } from '../services/jobs/job-rows.js';
import { createJobStore } from '../services/jobs/store.js';
import { DAILY_TEST_LIMIT } from '../services/jobs/test-prints.js';
import { createStoreDatabase, type StoreDatabase } from './helpers/store-database.js';

type Ctx = StoreDatabase;

const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  t.context = await createStoreDatabase([migrations], 8);
});

test.after.always(async (t) => {
  await t.context?.close();
});

function storeFor(t: { context: Ctx }) {
  const handed: OutboxRow[][] = [];
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  const store = createJobStore(t.context.pool, clock, { onCommit: (rows) => handed.push(rows) });
  return { store, handed, clock };
}

function newJob(orgId: string, overrides: Partial<NewJob> = {}): NewJob {
  const document = Buffer.from('hello\n');
  return {
    id: randomUUID(),
    orgId,
    printerId: randomUUID(),
    stationId: randomUUID(),
    region: 'default',
    live: true,
    title: 'a job',
    reference: '',
    options: {} as NewJob['options'],
    contentType: 'text/plain',
    size: document.length,
    sha256: 'x'.repeat(64),
    actor: 'key:test',
    document,
    ...overrides,
  };
}

async function count(pool: Pool, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(sql, params);
  return Number(rows[0]?.n);
}

test('creations that arrive together are committed in groups, each answered with its own job', async (t) => {
  const { store, handed } = storeFor(t);
  const orgId = randomUUID();
  const asked = Array.from({ length: 60 }, (_, i) => newJob(orgId, { reference: `r${i}` }));
  const jobs = await Promise.all(asked.map((job) => store.create(job)));

  t.deepEqual(
    jobs.map((j) => [j.id, j.reference, j.status]),
    asked.map((j) => [j.id, j.reference, 'queued']),
  );
  t.is(
    await count(t.context.pool, 'SELECT count(*) AS n FROM jobs WHERE org_id = $1', [orgId]),
    60,
  );
  t.is(
    await count(
      t.context.pool,
      'SELECT count(*) AS n FROM job_events WHERE org_id = $1 AND seq = 1',
      [orgId],
    ),
    60,
  );
  // Every job's created event and offer went to the relay, in fewer commits than jobs.
  const subjects = handed.flat().map((r) => r.subject);
  t.is(subjects.filter((s) => s.endsWith('.job.created')).length, 60);
  t.is(subjects.filter((s) => s.startsWith('dispatch.')).length, 60);
  t.true(handed.length < 60, `${handed.length} commits for 60 jobs`);
});

test('a job whose row the database refuses fails alone; the rest of its group is created', async (t) => {
  const { store } = storeFor(t);
  const orgId = randomUUID();
  const first = await store.create(newJob(orgId));
  const asked = [
    newJob(orgId),
    newJob(orgId),
    newJob(orgId, { id: first.id }),
    newJob(orgId),
    newJob(orgId),
  ];
  const results = await Promise.allSettled(asked.map((job) => store.create(job)));
  t.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
  );
  t.is(await count(t.context.pool, 'SELECT count(*) AS n FROM jobs WHERE org_id = $1', [orgId]), 5);
});

test('test-key jobs past the daily limit are refused one by one, in their group', async (t) => {
  const { store, clock } = storeFor(t);
  const orgId = randomUUID();
  const day = clock.now().toISOString().slice(0, 10);
  await t.context.pool.query('INSERT INTO test_print_counts (org_id, day, n) VALUES ($1, $2, $3)', [
    orgId,
    day,
    DAILY_TEST_LIMIT - 3,
  ]);
  const asked = [
    ...Array.from({ length: 6 }, () => newJob(orgId, { live: false })),
    newJob(orgId, { live: true }),
  ];
  const results = await Promise.allSettled(asked.map((job) => store.create(job)));
  const refused = results.filter((r) => r.status === 'rejected');
  t.is(
    results.filter((r) => r.status === 'fulfilled').length,
    4,
    'three test jobs and the live one',
  );
  t.is(refused.length, 3);
  for (const r of refused) t.is((r as PromiseRejectedResult).reason.code, 'rate_limited');
  t.is(results[6]?.status, 'fulfilled');
  t.is(
    await count(t.context.pool, 'SELECT n FROM test_print_counts WHERE org_id = $1 AND day = $2', [
      orgId,
      day,
    ]),
    DAILY_TEST_LIMIT,
  );
  t.is(
    await count(t.context.pool, 'SELECT count(*) AS n FROM jobs WHERE org_id = $1 AND NOT live', [
      orgId,
    ]),
    3,
  );
});

test('a creation whose Idempotency-Key claim was taken over fails alone', async (t) => {
  const { store, clock } = storeFor(t);
  const orgId = randomUUID();
  const claim = randomUUID();
  await t.context.pool.query(
    `INSERT INTO idempotency_keys (org_id, key, fingerprint, claim, created_at)
     VALUES ($1, 'k-held', 'f', $2, $3)`,
    [orgId, claim, clock.now()],
  );
  const asked = [
    newJob(orgId, { idempotency: { key: 'k-held', claim } }),
    newJob(orgId, { idempotency: { key: 'k-held', claim: randomUUID() } }),
    newJob(orgId),
  ];
  const results = await Promise.allSettled(asked.map((job) => store.create(job)));
  t.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.is((results[1] as PromiseRejectedResult).reason.code, 'conflict');
  const { rows } = await t.context.pool.query(
    'SELECT status, job_id FROM idempotency_keys WHERE org_id = $1',
    [orgId],
  );
  t.deepEqual(rows, [{ status: 201, job_id: asked[0]?.id }]);
});

test('a job whose printer cannot print starts with the reason it waits', async (t) => {
  const { store } = storeFor(t);
  const job = await store.create(
    newJob(randomUUID(), { waiting: 'waiting: the station of printer "front" is offline' }),
  );
  t.is(job.statusDetail, 'waiting: the station of printer "front" is offline');
  const held = await store.create(newJob(randomUUID(), { hold: true, waiting: 'waiting: x' }));
  t.is(held.statusDetail, '', 'only queued jobs wait on their printer');
});

test("a station's received and result reports sent together apply in order, in groups", async (t) => {
  const { store, handed } = storeFor(t);
  const orgId = randomUUID();
  const jobs = await Promise.all(Array.from({ length: 30 }, () => store.create(newJob(orgId))));
  handed.length = 0;
  const how = { actor: 'station:s1', attempt: 1, region: 'default' };
  const applied = await Promise.all(
    jobs.flatMap((job) => [
      store.apply(orgId, job.id, 'received', how),
      store.apply(orgId, job.id, 'printed', how),
    ]),
  );
  t.true(applied.every((a) => a.changed));
  for (const job of jobs) {
    const { job: now, events } = await store.get(orgId, job.id);
    t.is(now.status, 'printed');
    t.deepEqual(
      events.map((e) => [e.status, e.actor]),
      [
        ['queued', 'key:test'],
        ['sent', 'station:s1'],
        ['printed', 'station:s1'],
      ],
    );
  }
  const { rows } = await t.context.pool.query<{ seqs: number[] }>(
    'SELECT array_agg(seq ORDER BY seq) AS seqs FROM job_events WHERE org_id = $1 GROUP BY job_id',
    [orgId],
  );
  t.true(rows.every((r) => r.seqs.join() === '1,2,3'));
  // Each printed job's event reached the relay, in fewer commits than reports.
  t.is(handed.flat().filter((r) => r.subject.endsWith('.job.printed')).length, 30);
  t.true(handed.length < 30, `${handed.length} commits for 60 reports`);
});

test('a transition that cannot apply fails alone; the rest of its group commits', async (t) => {
  const { store } = storeFor(t);
  const orgId = randomUUID();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => store.create(newJob(orgId))));
  const how = { actor: 'station:s1', attempt: 1 };
  await store.apply(orgId, (b as { id: string }).id, 'printed', how);
  const results = await Promise.allSettled([
    store.apply(orgId, (a as { id: string }).id, 'printed', how),
    store.apply(orgId, (b as { id: string }).id, 'cancel', { actor: 'key:test' }),
    store.apply(orgId, randomUUID(), 'printed', how),
    store.apply(randomUUID(), (c as { id: string }).id, 'printed', how),
    store.apply(orgId, (c as { id: string }).id, 'cancel', { actor: 'key:test' }),
  ]);
  t.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value.job.status : r.reason.code)),
    ['printed', 'conflict', 'not_found', 'not_found', 'cancelled'],
  );
});

test('a group that finds a job moved by another replica since its read reads it again and numbers no event twice', async (t) => {
  const { store: other } = storeFor(t);
  const orgId = randomUUID();
  const job = await other.create(newJob(orgId));
  const how = { actor: 'station:s1', attempt: 1, region: 'default' };
  // This replica's pool runs the other replica's transition right after this one's first read
  // of the job, before this one writes: the report arrived at both.
  let raced = false;
  const pool = new Proxy(t.context.pool, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver);
      return async (text: unknown, values?: unknown[]) => {
        const result = await target.query(text as string, values);
        if (!raced && String(text).includes('JOIN jobs ON jobs.org_id = k.job_org_id')) {
          raced = true;
          await other.apply(orgId, job.id, 'received', how);
        }
        return result;
      };
    },
  });
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  const handed: OutboxRow[][] = [];
  const store = createJobStore(pool, clock, { onCommit: (rows) => handed.push(rows) });

  const [received, printed] = await Promise.all([
    store.apply(orgId, job.id, 'received', how),
    store.apply(orgId, job.id, 'printed', how),
  ]);
  t.true(raced);
  // Read again after the race: `received` had been applied already, `printed` applies after it.
  t.false(received.changed);
  t.true(printed.changed);
  const { job: now, events } = await store.get(orgId, job.id);
  t.is(now.status, 'printed');
  t.deepEqual(
    events.map((e) => e.status),
    ['queued', 'sent', 'printed'],
  );
  t.deepEqual(
    handed.flat().map((r) => r.subject.split('.').slice(2).join('.')),
    ['job.printed'],
  );
});
