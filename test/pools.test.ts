/**
 * Pools of printers on a running Spool: the `/v1` routes by key (`printers:read`,
 * `printers:write`) and by signed-in session, the operator's `/admin/v1` routes and
 * `spool admin pool`, what each refuses, and what becomes of a pool when its printers, or its
 * organization, are deleted. Every answer is checked against the OpenAPI documents by `call`.
 */
import anyTest, { type TestFn } from 'ava';
import { ConflictError, NotFoundError, Spool } from '../client/index.js';
import { member } from './helpers/console.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { runSpool } from './helpers/spool.js';
import {
  type Answer,
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Ctx {
  sys: TestSystem;
  links: LinkClient[];
}

const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem(), links: [] };
});

test.after.always(async (t) => {
  for (const link of t.context.links ?? []) link.close();
  await t.context.sys?.stop();
});

interface PoolJson {
  id: string;
  name: string;
  printer_ids: string[];
  strategy: string;
  failover_after: number;
  created_at: string;
  updated_at: string;
}
interface JobJson {
  id: string;
  status: string;
  printer_id: string | null;
  pool_id: string | null;
  priority: number;
}
interface ErrorBody {
  error: { code: string; message: string; param?: string };
}

const ALL = ['printers:read', 'printers:write', 'jobs:write', 'jobs:read'];
const text = { type: 'text', data: 'Pick list 7' };

/**
 * An organization, a key with the scopes of pools and jobs, and a station whose link reports
 * printers `names`, ready.
 */
async function orgWithPrinters(
  t: { context: Ctx },
  names: string[],
): Promise<{ orgId: string; key: string; stationId: string; printers: Record<string, string> }> {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Pools Inc');
  const { secret: key } = await createKey(sys.url, orgId, { scopes: ALL });
  const station = await createStation(sys.url, orgId);
  t.context.links.push(
    await connectLink(
      sys.linkAddress,
      station.token,
      names.map((n) => printer(n)),
    ),
  );
  const listed = await eventually(
    () =>
      call<{ printers: Array<{ id: string; name: string; station_online: boolean }> }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgId}/printers`,
        { token: key },
      ),
    (r) => names.every((n) => r.body.printers.some((p) => p.name === n && p.station_online)),
  );
  const printers = Object.fromEntries(listed.body.printers.map((p) => [p.name, p.id]));
  return { orgId, key, stationId: station.id, printers };
}

/** Calls `/v1/orgs/{org}{path}` with `key`. */
function api(t: { context: Ctx }, key: string, orgId: string) {
  return <T = PoolJson>(method: string, path: string, body?: unknown): Promise<Answer<T>> =>
    call<T>(t.context.sys.url, method, `/v1/orgs/${orgId}${path}`, {
      token: key,
      ...(body === undefined ? {} : { body }),
    });
}

/** Calls `/admin/v1{path}` with the operator token. */
function op<T = Record<string, unknown>>(
  t: { context: Ctx },
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer<T>> {
  return call<T>(t.context.sys.url, method, `/admin/v1${path}`, {
    token: OPERATOR_TOKEN,
    ...(body === undefined ? {} : { body }),
  });
}

test('a key with printers:write creates, lists, gets, changes and deletes a pool', async (t) => {
  const { orgId, key, printers } = await orgWithPrinters(t, ['left', 'right', 'spare']);
  const v1 = api(t, key, orgId);
  const { left, right, spare } = printers as Record<string, string>;

  const created = await v1<{ pool: PoolJson }>('POST', '/pools', {
    name: 'Labels',
    printer_ids: [right, left],
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  const pool = created.body.pool;
  t.like(pool, {
    name: 'Labels',
    printer_ids: [right, left],
    strategy: 'least_queued',
    failover_after: 30,
  });
  t.is(created.headers.get('location'), `/v1/orgs/${orgId}/pools/${pool.id}`);
  t.deepEqual((await v1<{ pool: PoolJson }>('GET', `/pools/${pool.id}`)).body.pool, pool);

  t.context.sys.clock.advance(1000);
  const second = await v1<{ pool: PoolJson }>('POST', '/pools', {
    name: 'Backup',
    printer_ids: [spare],
    strategy: 'ordered',
    failover_after: 0,
  });
  t.like(second.body.pool, { strategy: 'ordered', failover_after: 0 });
  const page = await v1<{ items: PoolJson[]; next_cursor: string }>('GET', '/pools?limit=1');
  t.deepEqual(
    page.body.items.map((p) => p.id),
    [pool.id],
    'oldest first',
  );
  const rest = await v1<{ items: PoolJson[]; next_cursor: string }>(
    'GET',
    `/pools?limit=1&cursor=${page.body.next_cursor}`,
  );
  t.deepEqual(
    rest.body.items.map((p) => p.id),
    [second.body.pool.id],
  );
  t.is(rest.body.next_cursor, '');

  t.context.sys.clock.advance(1000);
  const renamed = await v1<{ pool: PoolJson }>('PATCH', `/pools/${pool.id}`, { name: 'Shipping' });
  t.is(renamed.status, 200);
  t.like(renamed.body.pool, {
    name: 'Shipping',
    printer_ids: [right, left],
    strategy: 'least_queued',
  });
  t.true(renamed.body.pool.updated_at > pool.updated_at);
  const changed = await v1<{ pool: PoolJson }>('PATCH', `/pools/${pool.id}`, {
    printer_ids: [spare, left],
    strategy: 'ordered',
    failover_after: 120,
  });
  t.like(changed.body.pool, {
    name: 'Shipping',
    printer_ids: [spare, left],
    strategy: 'ordered',
    failover_after: 120,
  });
  t.deepEqual((await v1<{ pool: PoolJson }>('GET', `/pools/${pool.id}`)).body, changed.body);

  const deleted = await v1('DELETE', `/pools/${pool.id}`);
  t.is(deleted.status, 204);
  const gone = await v1<ErrorBody>('GET', `/pools/${pool.id}`);
  t.is(gone.status, 404);
  t.is(gone.body.error.code, 'not_found');
  t.is((await v1<ErrorBody>('DELETE', `/pools/${pool.id}`)).status, 404);
});

test('each bad pool answers 400 invalid naming its field', async (t) => {
  const { orgId, key, printers } = await orgWithPrinters(t, ['one', 'two']);
  const stranger = await orgWithPrinters(t, ['theirs']);
  const v1 = api(t, key, orgId);
  const one = printers.one as string;
  const good = { name: 'Good', printer_ids: [one] };
  const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['an empty name', { ...good, name: '' }, 'name', /1 to 200 characters/],
    ['a long name', { ...good, name: 'n'.repeat(201) }, 'name', /1 to 200 characters/],
    ['no name', { printer_ids: [one] }, 'name', /required/],
    ['no printers', { ...good, printer_ids: [] }, 'printer_ids', /1 to 100/],
    [
      '101 printers',
      { ...good, printer_ids: Array.from({ length: 101 }, () => one) },
      'printer_ids',
      /1 to 100/,
    ],
    ['a printer twice', { ...good, printer_ids: [one, one] }, 'printer_ids', /distinct/],
    [
      'an unknown printer',
      { ...good, printer_ids: [one, '00000000-0000-4000-8000-000000000000'] },
      'printer_ids',
      /00000000-0000-4000-8000-000000000000" is not a printer of this organization/,
    ],
    [
      'a printer of another organization',
      { ...good, printer_ids: [stranger.printers.theirs] },
      'printer_ids',
      /is not a printer of this organization/,
    ],
    ['an id that is none', { ...good, printer_ids: ['desk'] }, 'printer_ids', /"desk" is not/],
    ['a strategy', { ...good, strategy: 'random' }, 'strategy', /least_queued, ordered/],
    [
      'a negative failover',
      { ...good, failover_after: -1 },
      'failover_after',
      /integer from 0 to 86400/,
    ],
    [
      'a failover over a day',
      { ...good, failover_after: 86_401 },
      'failover_after',
      /integer from 0 to 86400/,
    ],
    ['a fractional failover', { ...good, failover_after: 1.5 }, 'failover_after', /integer/],
  ];
  for (const [what, body, param, message] of cases) {
    const res = await v1<ErrorBody>('POST', '/pools', body);
    t.is(res.status, 400, what);
    t.is(res.body.error.code, 'invalid', what);
    t.is(res.body.error.param, param, what);
    t.regex(res.body.error.message, message, what);
  }
  const unknownField = await v1<ErrorBody>('POST', '/pools', { ...good, colour: 'red' });
  t.is(unknownField.status, 400);
  t.is(unknownField.body.error.code, 'unknown_field');

  const pool = (await v1<{ pool: PoolJson }>('POST', '/pools', good)).body.pool;
  const nothing = await v1<ErrorBody>('PATCH', `/pools/${pool.id}`, {});
  t.is(nothing.status, 400);
  t.regex(nothing.body.error.message, /nothing to change/);
  const badMembers = await v1<ErrorBody>('PATCH', `/pools/${pool.id}`, {
    printer_ids: [stranger.printers.theirs],
  });
  t.is(badMembers.status, 400);
  t.is(badMembers.body.error.param, 'printer_ids');
  const badStrategy = await v1<ErrorBody>('PATCH', `/pools/${pool.id}`, { strategy: 'best' });
  t.is(badStrategy.body.error.param, 'strategy');
  t.deepEqual((await v1<{ pool: PoolJson }>('GET', `/pools/${pool.id}`)).body.pool, pool);
  for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id']) {
    t.is((await v1<ErrorBody>('GET', `/pools/${id}`)).status, 404, id);
    t.is((await v1<ErrorBody>('PATCH', `/pools/${id}`, { name: 'x' })).status, 404, id);
  }
});

test("another organization's pool answers 404, as an unknown one does", async (t) => {
  const mine = await orgWithPrinters(t, ['mine']);
  const theirs = await orgWithPrinters(t, ['theirs']);
  const pool = (
    await api(t, theirs.key, theirs.orgId)<{ pool: PoolJson }>('POST', '/pools', {
      name: 'Theirs',
      printer_ids: [theirs.printers.theirs],
    })
  ).body.pool;
  const v1 = api(t, mine.key, mine.orgId);
  for (const [method, body] of [
    ['GET', undefined],
    ['PATCH', { name: 'Taken' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await v1<ErrorBody>(method, `/pools/${pool.id}`, body);
    t.is(res.status, 404, method);
    t.is(res.body.error.code, 'not_found', method);
  }
  t.deepEqual((await v1<{ items: PoolJson[] }>('GET', '/pools')).body.items, []);
  // Their organization in the path, with my key: 404 before anything is read.
  const foreign = await api(t, mine.key, theirs.orgId)<ErrorBody>('GET', `/pools/${pool.id}`);
  t.is(foreign.status, 404);
  const still = await op<{ pool: PoolJson }>(t, 'GET', `/orgs/${theirs.orgId}/pools/${pool.id}`);
  t.is(still.body.pool.name, 'Theirs');
});

test('a key without printers:write reads pools, and each change answers 403 naming the scope', async (t) => {
  const { orgId, key, printers } = await orgWithPrinters(t, ['desk']);
  const pool = (
    await api(t, key, orgId)<{ pool: PoolJson }>('POST', '/pools', {
      name: 'Desk',
      printer_ids: [printers.desk],
    })
  ).body.pool;
  const { secret: reader } = await createKey(t.context.sys.url, orgId, {
    scopes: ['printers:read'],
  });
  const v1 = api(t, reader, orgId);
  t.is((await v1('GET', '/pools')).status, 200);
  t.is((await v1('GET', `/pools/${pool.id}`)).status, 200);
  for (const [method, path, body] of [
    ['POST', '/pools', { name: 'More', printer_ids: [printers.desk] }],
    ['PATCH', `/pools/${pool.id}`, { name: 'Renamed' }],
    ['DELETE', `/pools/${pool.id}`, undefined],
  ] as const) {
    const res = await v1<ErrorBody>(method, path, body);
    t.is(res.status, 403, method);
    t.is(res.body.error.code, 'forbidden');
    t.regex(res.body.error.message, /printers:write/);
  }
  const { secret: jobsOnly } = await createKey(t.context.sys.url, orgId, {
    scopes: ['jobs:write'],
  });
  const noRead = await api(t, jobsOnly, orgId)<ErrorBody>('GET', '/pools');
  t.is(noRead.status, 403);
  t.regex(noRead.body.error.message, /printers:read/);
});

test("a developer's session changes pools; a viewer's reads them and is told the role needed", async (t) => {
  const { sys } = t.context;
  const { orgId, printers } = await orgWithPrinters(t, ['desk']);
  const developer = await member(sys.url, orgId, 'developer');
  const made = await developer.call<{ pool: PoolJson }>('POST', `/v1/orgs/${orgId}/pools`, {
    body: { name: 'Console pool', printer_ids: [printers.desk] },
  });
  t.is(made.status, 201, JSON.stringify(made.body));
  const viewer = await member(sys.url, orgId, 'viewer');
  const seen = await viewer.call<{ items: PoolJson[] }>('GET', `/v1/orgs/${orgId}/pools`);
  t.deepEqual(
    seen.body.items.map((p) => p.id),
    [made.body.pool.id],
  );
  const refused = await viewer.call<ErrorBody>(
    'DELETE',
    `/v1/orgs/${orgId}/pools/${made.body.pool.id}`,
  );
  t.is(refused.status, 403);
  t.regex(refused.body.error.message, /developer role/);
});

test('a pool is not deleted while a job of it waits for a member; routed jobs keep their printer', async (t) => {
  const { orgId, key, printers } = await orgWithPrinters(t, ['front', 'back']);
  const v1 = api(t, key, orgId);
  const pool = (
    await v1<{ pool: PoolJson }>('POST', '/pools', {
      name: 'Counter',
      printer_ids: [printers.front, printers.back],
    })
  ).body.pool;
  const routed = await v1<{ job: JobJson }>('POST', '/jobs', {
    pool_id: pool.id,
    priority: 80,
    content: text,
  });
  t.is(routed.status, 201, JSON.stringify(routed.body));
  t.like(routed.body.job, { pool_id: pool.id, priority: 80 });
  t.true([printers.front, printers.back].includes(routed.body.job.printer_id as string));
  // A held pool job is routed when it is released: until then it waits for a member.
  const held = await v1<{ job: JobJson }>('POST', '/jobs', {
    pool_id: pool.id,
    hold: true,
    content: text,
  });
  t.like(held.body.job, { status: 'held', printer_id: null, pool_id: pool.id, priority: 50 });

  const refused = await v1<ErrorBody>('DELETE', `/pools/${pool.id}`);
  t.is(refused.status, 409);
  t.is(refused.body.error.code, 'conflict');
  t.regex(refused.body.error.message, /1 job of this pool waits for a member/);
  t.is((await v1('GET', `/pools/${pool.id}`)).status, 200, 'still there');

  await v1('POST', `/jobs/${held.body.job.id}/cancel`);
  t.is((await v1('DELETE', `/pools/${pool.id}`)).status, 204);
  const after = await v1<{ job: JobJson }>('GET', `/jobs/${routed.body.job.id}`);
  t.like(after.body.job, { printer_id: routed.body.job.printer_id, pool_id: pool.id });
  const later = await v1<ErrorBody>('POST', '/jobs', { pool_id: pool.id, content: text });
  t.is(later.status, 400);
  t.is(later.body.error.param, 'pool_id');
});

test('moving a job that does not exist answers 404', async (t) => {
  const { orgId, key, printers } = await orgWithPrinters(t, ['desk']);
  const v1 = api(t, key, orgId);
  for (const id of ['00000000-0000-4000-8000-000000000000', 'nothing']) {
    const res = await v1<ErrorBody>('POST', `/jobs/${id}/move`, { printer_id: printers.desk });
    t.is(res.status, 404, id);
    t.is(res.body.error.code, 'not_found');
  }
  const noBody = await v1<ErrorBody>('POST', '/jobs/00000000-0000-4000-8000-000000000000/move', {});
  t.is(noBody.status, 400);
  t.is(noBody.body.error.param, 'printer_id');
  const { secret: reader } = await createKey(t.context.sys.url, orgId, { scopes: ['jobs:read'] });
  const refused = await api(t, reader, orgId)<ErrorBody>(
    'POST',
    '/jobs/00000000-0000-4000-8000-000000000000/move',
    { printer_id: printers.desk },
  );
  t.is(refused.status, 403);
  t.regex(refused.body.error.message, /jobs:write/);
});

test('deleted printers leave their pools: one printer, and every printer of a deleted station', async (t) => {
  const { sys } = t.context;
  const { orgId, key, printers } = await orgWithPrinters(t, ['a1', 'a2']);
  const other = await createStation(sys.url, orgId, { name: 'Back room' });
  t.context.links.push(
    await connectLink(sys.linkAddress, other.token, [printer('b1'), printer('b2')]),
  );
  const v1 = api(t, key, orgId);
  const listed = await eventually(
    () => v1<{ printers: Array<{ id: string; name: string }> }>('GET', '/printers'),
    (r) => r.body.printers.length === 4,
  );
  const id = (name: string) => listed.body.printers.find((p) => p.name === name)?.id as string;
  const pool = (
    await v1<{ pool: PoolJson }>('POST', '/pools', {
      name: 'Everything',
      printer_ids: [id('b1'), printers.a1, id('b2'), printers.a2],
    })
  ).body.pool;
  const lone = (
    await v1<{ pool: PoolJson }>('POST', '/pools', { name: 'Lone', printer_ids: [printers.a2] })
  ).body.pool;

  sys.clock.advance(1000);
  t.is((await op(t, 'DELETE', `/orgs/${orgId}/printers/${printers.a2}`)).status, 204);
  const read = async (poolId: string) =>
    (await v1<{ pool: PoolJson }>('GET', `/pools/${poolId}`)).body.pool;
  const members = async (poolId: string) => (await read(poolId)).printer_ids;
  t.deepEqual(await members(pool.id), [id('b1'), printers.a1, id('b2')]);
  t.deepEqual(await members(lone.id), [], 'a pool whose last printer went is empty');
  // Their members changed, so they were updated then.
  t.true((await read(pool.id)).updated_at > pool.updated_at);
  t.true((await read(lone.id)).updated_at > lone.updated_at);

  t.is((await op(t, 'DELETE', `/orgs/${orgId}/stations/${other.id}`)).status, 204);
  t.deepEqual(await members(pool.id), [printers.a1]);
});

test('the operator manages pools under /admin/v1, and they go with their organization', async (t) => {
  const { orgId, printers } = await orgWithPrinters(t, ['desk', 'shelf']);
  const base = `/orgs/${orgId}/pools`;
  const created = await op<{ pool: PoolJson }>(t, 'POST', base, {
    name: 'Operator pool',
    printer_ids: [printers.desk],
    failover_after: 60,
  });
  t.is(created.status, 201);
  const pool = created.body.pool;
  t.like(pool, { printer_ids: [printers.desk], strategy: 'least_queued', failover_after: 60 });
  t.is(created.headers.get('location'), `/admin/v1/orgs/${orgId}/pools/${pool.id}`);
  t.deepEqual((await op(t, 'GET', base)).body, { items: [pool], next_cursor: '' });
  t.deepEqual((await op(t, 'GET', `${base}/${pool.id}`)).body, { pool });
  const changed = await op<{ pool: PoolJson }>(t, 'PATCH', `${base}/${pool.id}`, {
    printer_ids: [printers.shelf, printers.desk],
  });
  t.deepEqual(changed.body.pool.printer_ids, [printers.shelf, printers.desk]);
  const bad = await op<ErrorBody>(t, 'POST', base, { name: 'x', printer_ids: ['nope'] });
  t.is(bad.status, 400);
  t.is(bad.body.error.param, 'printer_ids');

  const unknownOrg = '00000000-0000-4000-8000-000000000000';
  t.is((await op(t, 'GET', `/orgs/${unknownOrg}/pools`)).status, 404);
  t.is(
    (await op(t, 'POST', `/orgs/${unknownOrg}/pools`, { name: 'x', printer_ids: [printers.desk] }))
      .status,
    404,
  );
  const elsewhere = await createOrg(t.context.sys.url, 'Elsewhere');
  t.is((await op(t, 'GET', `/orgs/${elsewhere}/pools/${pool.id}`)).status, 404);

  t.is((await op(t, 'DELETE', `/orgs/${orgId}`)).status, 204);
  t.is((await op(t, 'GET', `${base}/${pool.id}`)).status, 404);
});

test('spool admin pool creates, lists, gets, changes and deletes pools', async (t) => {
  const { sys } = t.context;
  const { orgId, printers } = await orgWithPrinters(t, ['p1', 'p2', 'p3']);
  const spool = async (...args: string[]) => {
    const res = await runSpool(['admin', 'pool', ...args], {
      SPOOL_URL: sys.url,
      SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN,
    });
    return { ...res, json: res.stdout.startsWith('{') ? JSON.parse(res.stdout) : undefined };
  };
  const [p1, p2, p3] = ['p1', 'p2', 'p3'].map((n) => printers[n] as string) as [
    string,
    string,
    string,
  ];
  const made = await spool(
    'create',
    '--org',
    orgId,
    '--name',
    'CLI pool',
    '--printer',
    p2,
    '--printer',
    p1,
    '--strategy',
    'ordered',
    '--failover-after',
    '0',
  );
  t.is(made.code, 0, made.stderr);
  const pool = made.json.pool as PoolJson;
  t.like(pool, { name: 'CLI pool', printer_ids: [p2, p1], strategy: 'ordered', failover_after: 0 });

  const listed = await spool('list', '--org', orgId, '--format', 'table');
  t.is(listed.code, 0, listed.stderr);
  t.regex(listed.stdout, /^ID\s+NAME\s+STRATEGY\s+FAILOVER AFTER\s+PRINTERS/);
  t.regex(listed.stdout, new RegExp(`${pool.id}\\s+CLI pool\\s+ordered\\s+0\\s+${p2},${p1}`));

  const updated = await spool(
    'update',
    '--org',
    orgId,
    '--id',
    pool.id,
    '--printers',
    `${p3},${p1}`,
  );
  t.is(updated.code, 0, updated.stderr);
  t.deepEqual(updated.json.pool.printer_ids, [p3, p1]);
  t.deepEqual((await spool('get', '--org', orgId, '--id', pool.id)).json, updated.json);

  const nothing = await spool('update', '--org', orgId, '--id', pool.id);
  t.is(nothing.code, 2);
  t.regex(nothing.stderr, /nothing to change/);
  const both = await spool(
    'create',
    '--org',
    orgId,
    '--name',
    'x',
    '--printer',
    p1,
    '--printers',
    p2,
  );
  t.is(both.code, 2);
  const none = await spool('create', '--org', orgId, '--name', 'x');
  t.is(none.code, 2);
  t.regex(none.stderr, /--printer ID/);
  const refused = await spool('create', '--org', orgId, '--name', 'x', '--printer', 'nope');
  t.is(refused.code, 1);
  t.is(JSON.parse(refused.stderr).error.param, 'printer_ids');

  const deleted = await spool('delete', '--org', orgId, '--id', pool.id);
  t.is(deleted.code, 0, deleted.stderr);
  t.deepEqual(deleted.json, { deleted: true, id: pool.id });
  t.is((await spool('get', '--org', orgId, '--id', pool.id)).code, 1);
});

test('spool jobs create --pool --priority, and spool jobs move', async (t) => {
  const { sys } = t.context;
  const { orgId, key, printers } = await orgWithPrinters(t, ['one', 'two']);
  const pool = (
    await api(t, key, orgId)<{ pool: PoolJson }>('POST', '/pools', {
      name: 'CLI jobs',
      printer_ids: [printers.one],
    })
  ).body.pool;
  const env = { SPOOL_API_KEY: key, SPOOL_URL: sys.url };
  const created = await runSpool(
    ['jobs', 'create', '--pool', pool.id, '--priority', '90', '--hold', '--text', 'hi'],
    env,
  );
  t.is(created.code, 0, created.stderr);
  const job = JSON.parse(created.stdout).job as JobJson;
  t.like(job, { pool_id: pool.id, priority: 90, status: 'held', printer_id: null });

  const moved = await runSpool(['jobs', 'move', job.id, '--printer', printers.two as string], env);
  t.is(moved.code, 0, moved.stderr);
  // Moved to a printer outside its pool, it leaves the pool.
  t.like(JSON.parse(moved.stdout).job, { id: job.id, printer_id: printers.two, pool_id: null });

  const neither = await runSpool(['jobs', 'create', '--text', 'hi'], env);
  t.is(neither.code, 2);
  t.regex(neither.stderr, /--printer ID or --pool ID/);
  const unknown = await runSpool(
    [
      'jobs',
      'move',
      '--id',
      '00000000-0000-4000-8000-000000000000',
      '--printer',
      printers.two as string,
    ],
    env,
  );
  t.is(unknown.code, 1);
  t.is(JSON.parse(unknown.stderr).error.code, 'not_found');
});

test('the client creates, pages through, changes and deletes pools, and creates and moves pool jobs', async (t) => {
  const { sys } = t.context;
  const { orgId, key, printers } = await orgWithPrinters(t, ['c1', 'c2']);
  const spool = new Spool({ apiKey: key, baseUrl: sys.url, org: orgId });
  const c1 = printers.c1 as string;
  const c2 = printers.c2 as string;
  const pool = await spool.pools.create({ name: 'Client pool', printer_ids: [c1] });
  t.like(pool, { name: 'Client pool', printer_ids: [c1], strategy: 'least_queued' });
  sys.clock.advance(1000);
  const other = await spool.pools.create({ name: 'Other', printer_ids: [c2], strategy: 'ordered' });
  const all = [];
  for await (const p of spool.pools.iterate({ limit: 1 })) all.push(p.id);
  t.deepEqual(all, [pool.id, other.id]);
  t.deepEqual(await spool.pools.get(pool.id), pool);
  const changed = await spool.pools.update(pool.id, { printer_ids: [c2, c1], failover_after: 5 });
  t.like(changed, { printer_ids: [c2, c1], failover_after: 5 });

  const job = await spool.jobs.create({
    pool_id: pool.id,
    hold: true,
    priority: 7,
    content: {
      type: 'text',
      data: 'client',
    },
  });
  t.like(job, { pool_id: pool.id, printer_id: null, priority: 7, status: 'held' });
  await t.throwsAsync(spool.pools.delete(pool.id), { instanceOf: ConflictError });
  const moved = await spool.jobs.move(job.id, { printer_id: c1 });
  t.like(moved, { id: job.id, printer_id: c1, pool_id: pool.id });
  await spool.pools.delete(pool.id);
  await t.throwsAsync(spool.pools.get(pool.id), { instanceOf: NotFoundError });
});
