/**
 * `POST /v1/orgs/{org}/jobs/validate`: a creation's dry run answers what the creation would, and
 * creates, stores and counts nothing.
 */
import test from 'ava';
import pg from 'pg';
import { SCOPES } from '../lib/credentials.js';
import { connectLink, printer } from './helpers/link-client.js';
import { call, createKey, createOrg, createStation, startTestSystem } from './helpers/system.js';

type Answer = {
  valid?: boolean;
  printer_id?: string;
  pool_id?: string;
  items?: unknown[];
  job?: { id: string };
  error?: { code: string; param?: string };
};

test('validate answers the printer or pool a job would go to, or the error its creation would, and creates and counts nothing', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret: key } = await createKey(sys.url, orgId, { scopes: SCOPES, mode: 'test' });
  const station = await createStation(sys.url, orgId);
  const desk = printer('desk');
  const oneSided = {
    ...desk,
    capabilities: { ...desk.capabilities, duplex: false },
  } as typeof desk;
  const link = await connectLink(sys.linkAddress, station.token, [oneSided]);
  t.teardown(() => link.close());
  const printerId = link.welcome.printerIds.desk as string;
  const pool = await call<{ pool: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/pools`, {
    token: key,
    body: { name: 'Front', printer_ids: [printerId] },
  });
  const poolId = pool.body.pool.id;
  const post = (path: string, body: Record<string, unknown>, headers = {}) =>
    call<Answer>(sys.url, 'POST', `/v1/orgs/${orgId}/${path}`, {
      token: key,
      headers,
      body: { content: { type: 'text', data: 'hello' }, ...body },
    });

  const forPrinter = await post('jobs/validate', { printer_id: printerId });
  t.is(forPrinter.status, 200);
  t.deepEqual(forPrinter.body, { valid: true, printer_id: printerId });
  const forPool = await post('jobs/validate', { pool_id: poolId });
  t.deepEqual(forPool.body, { valid: true, pool_id: poolId });

  // The same refusals as a creation's.
  for (const body of [
    { printer_id: printerId, options: { duplex: 'two_sided_long_edge' } },
    { pool_id: poolId, options: { duplex: 'two_sided_long_edge' } },
    { printer_id: printerId, pool_id: poolId },
    { printer_id: printerId, content: { type: 'text', data: '' } },
  ]) {
    const checked = await post('jobs/validate', body);
    const created = await post('jobs', body);
    t.is(checked.status, created.status, JSON.stringify(body));
    t.is(checked.body.error?.param, created.body.error?.param, JSON.stringify(body));
    t.is(checked.status, 400);
  }

  // Nothing was made, and an Idempotency-Key is not kept: the creation after it is a new job.
  const listed = await call<Answer>(sys.url, 'GET', `/v1/orgs/${orgId}/jobs`, { token: key });
  t.deepEqual(listed.body.items, []);
  const again = await post('jobs/validate', { printer_id: printerId }, { 'idempotency-key': 'k1' });
  t.is(again.status, 200);
  const made = await post('jobs', { printer_id: printerId }, { 'idempotency-key': 'k1' });
  t.is(made.status, 201);

  // A test key's prints of the day: counted by creations only, refused as a creation would be.
  const db = new pg.Client({ connectionString: sys.db.url });
  await db.connect();
  t.teardown(() => db.end());
  const count = async () =>
    Number(
      (await db.query('SELECT n FROM test_print_counts WHERE org_id = $1', [orgId])).rows[0]?.n,
    );
  t.is(await count(), 1);
  await post('jobs/validate', { printer_id: printerId });
  t.is(await count(), 1);
  await db.query('UPDATE test_print_counts SET n = 200 WHERE org_id = $1', [orgId]);
  const used = await post('jobs/validate', { printer_id: printerId });
  t.is(used.status, 429);
  t.is(used.body.error?.code, 'rate_limited');
});
