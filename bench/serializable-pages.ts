/**
 * How often two jobs replicas' groups of transitions fail each other on PostgreSQL, outside
 * Spool: two clients move disjoint sets of queued jobs to `printed`, ten jobs a transaction, as
 * the jobs service's group commit does (`SELECT … FOR UPDATE` by key, the `UPDATE`, the jobs'
 * events and outbox rows), each transaction SERIALIZABLE and retried on SQLSTATE 40001. Two
 * transactions never touch the same job, so every failure is PostgreSQL's predicate locking,
 * which tracks reads by index and heap page: jobs that share a page conflict. It prints, for each
 * table size and way of reading, the commits, the failures and the failures per commit.
 *
 * `locked` reads the jobs inside the transaction with `SELECT … FOR UPDATE`, as the jobs service
 * did; `outside` reads them before it and updates each only at the version read, as it does now.
 *
 *   node --import tsx bench/serializable-pages.ts [--jobs 3000,20000,100000] [--read locked,outside]
 *
 * It starts a private PostgreSQL (or uses `TEST_DATABASE_URL`) with a fresh database per size.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Pool } from '../lib/db.js';
import { migrations } from '../services/jobs/index.js';
import { createStoreDatabase } from '../test/helpers/store-database.js';

const GROUP = 10;
const STATIONS = 50;

type Read = 'locked' | 'outside';

/** Moves `ids` to printed, a group at a time; answers the 40001 failures met on the way. */
async function moveAll(pool: Pool, orgId: string, ids: string[], read: Read): Promise<number> {
  let failures = 0;
  for (let i = 0; i + GROUP <= ids.length; i += GROUP) {
    const group = ids.slice(i, i + GROUP);
    for (;;) {
      const client = await pool.connect();
      try {
        let versions = group.map(() => 0);
        if (read === 'outside') {
          const { rows } = await client.query<{ id: string; version: number }>(
            'SELECT id, version FROM jobs WHERE id = ANY($1::UUID[])',
            [group],
          );
          const byId = new Map(rows.map((r) => [r.id, r.version]));
          versions = group.map((id) => byId.get(id) ?? 0);
        }
        await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
        if (read === 'locked') {
          await client.query(
            `SELECT jobs.id FROM unnest($1::UUID[]) AS k (id) JOIN jobs ON jobs.id = k.id
             WHERE jobs.id = ANY($1::UUID[]) ORDER BY jobs.id FOR UPDATE OF jobs`,
            [group],
          );
        }
        await client.query(
          `UPDATE jobs SET status = 'printed', version = jobs.version + 1, updated_at = now(),
             finished_at = now()
           FROM unnest($1::UUID[], $2::INT4[]) AS v (id, version)
           WHERE jobs.id = ANY($1::UUID[]) AND jobs.id = v.id
             ${read === 'outside' ? 'AND jobs.version = v.version' : ''}`,
          [group, versions],
        );
        await client.query(
          `INSERT INTO job_events (id, job_id, org_id, seq, at, status, detail, actor, region)
           SELECT gen_random_uuid(), id, $2, 2, now(), 'printed', '', 'bench', ''
           FROM unnest($1::UUID[]) AS k (id)`,
          [group, orgId],
        );
        await client.query(
          `INSERT INTO jobs_outbox (id, subject, payload)
           SELECT gen_random_uuid(), 'bench', '\\x00' FROM unnest($1::UUID[]) AS k (id)`,
          [group],
        );
        await client.query('COMMIT');
        break;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        if ((err as { code?: string }).code !== '40001') throw err;
        failures++;
      } finally {
        client.release();
      }
    }
  }
  return failures;
}

async function measure(size: number, read: Read): Promise<void> {
  const { pool, close } = await createStoreDatabase([migrations]);
  try {
    const orgId = randomUUID();
    const stations = Array.from({ length: STATIONS }, () => randomUUID());
    await pool.query(
      `INSERT INTO jobs (id, org_id, printer_id, station_id, status, live, content_type, size,
         sha256, created_by, created_at, updated_at)
       SELECT gen_random_uuid(), $1, gen_random_uuid(), ($2::UUID[])[1 + g % ${STATIONS}], 'queued',
         true, 'text/plain', 1, '', 'bench', now() + g * INTERVAL '1 millisecond', now()
       FROM generate_series(1, $3) AS g`,
      [orgId, stations, size],
    );
    await pool.query('ANALYZE jobs');
    const { rows } = await pool.query<{ id: string }>('SELECT id FROM jobs ORDER BY created_at');
    const ids = rows.map((r) => r.id);
    // Alternate jobs, oldest first: the two replicas' reports interleave in time the same way.
    const [a, b] = await Promise.all(
      [0, 1].map((side) =>
        moveAll(
          pool,
          orgId,
          ids.filter((_, i) => i % 2 === side),
          read,
        ),
      ),
    );
    const commits = 2 * Math.floor(size / 2 / GROUP);
    const failures = (a ?? 0) + (b ?? 0);
    console.log(
      `${size} jobs, read ${read}: ${commits} commits, ${failures} failures (${((100 * failures) / commits).toFixed(1)} per 100 commits)`,
    );
  } finally {
    await close();
  }
}

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '3000,20000,100000' },
    read: { type: 'string', default: 'locked,outside' },
  },
});
const reads = (values.read ?? '').split(',');
for (const read of reads) {
  if (read !== 'locked' && read !== 'outside') throw new Error(`--read: ${read} is not a way`);
}
for (const size of (values.jobs ?? '').split(',').map(Number)) {
  if (!Number.isInteger(size) || size < 2 * GROUP) throw new Error(`--jobs: ${size} is too few`);
  for (const read of reads) await measure(size, read as Read);
}
process.exit(0);
