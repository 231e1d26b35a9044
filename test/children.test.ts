/**
 * A platform's child organizations (DESIGN §5): a parent's key creates, lists, reads and deletes
 * its children and acts on their routes with the scopes it has; a child's key never reaches its
 * parent or its siblings, and no key reaches an organization that is neither its own nor its
 * child's: each answers 404 as an unknown organization does, on every route of `/v1`.
 */
import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import pg from 'pg';
import { ConflictError, NotFoundError, Spool } from '../client/index.js';
import { V1_ROUTES } from '../gateway/routes/v1.js';
import { SCOPES } from '../lib/credentials.js';
import { member } from './helpers/console.js';
import { connectLink, printer } from './helpers/link-client.js';
import { startReceiver } from './helpers/receiver.js';
import { runSpool } from './helpers/spool.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

const test = anyTest as TestFn<{ sys: TestSystem }>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface ChildOrg {
  id: string;
  name: string;
  parent_id: string;
  reference: string;
  created_at: string;
}

/** A top-level organization with a key holding every scope. */
async function platform(sys: TestSystem, name: string): Promise<{ id: string; key: string }> {
  const id = await createOrg(sys.url, name);
  const { secret } = await createKey(sys.url, id, { scopes: [...SCOPES] });
  return { id, key: secret };
}

async function createChild(
  sys: TestSystem,
  parent: { id: string; key: string },
  body: Record<string, unknown>,
): Promise<ChildOrg> {
  // Children list oldest first: each one a little after the one before.
  sys.clock.advance(1_000);
  const res = await call<{ org: ChildOrg }>(sys.url, 'POST', `/v1/orgs/${parent.id}/children`, {
    token: parent.key,
    body,
  });
  if (res.status !== 201) throw new Error(`create child answered ${res.status}`);
  return res.body.org;
}

const NO_SUCH_ORG = { code: 'not_found', message: 'no such organization' };

test('a parent creates children, lists them (by reference too), reads one and deletes one', async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform A');
  sys.clock.advance(1_000);
  const res = await call<{ org: ChildOrg }>(sys.url, 'POST', `/v1/orgs/${parent.id}/children`, {
    token: parent.key,
    body: { name: '  Corner Bakery ', reference: 'cust_1' },
  });
  t.is(res.status, 201, JSON.stringify(res.body));
  const bakery = res.body.org;
  t.like(bakery, { name: 'Corner Bakery', parent_id: parent.id, reference: 'cust_1' });
  t.deepEqual(Object.keys(bakery).sort(), ['created_at', 'id', 'name', 'parent_id', 'reference']);
  t.is(res.headers.get('location'), `/v1/orgs/${parent.id}/children/${bakery.id}`);
  const florist = await createChild(sys, parent, { name: 'Florist' });
  t.is(florist.reference, '');
  const grocer = await createChild(sys, parent, { name: 'Grocer', reference: 'cust_2' });

  const list = (query = '') =>
    call<{ items: ChildOrg[]; next_cursor: string }>(
      sys.url,
      'GET',
      `/v1/orgs/${parent.id}/children${query}`,
      { token: parent.key },
    );
  const all = await list();
  t.is(all.status, 200);
  t.deepEqual(
    all.body.items.map((o) => o.id),
    [bakery.id, florist.id, grocer.id],
  );
  t.is(all.body.next_cursor, '');
  t.deepEqual(
    (await list('?reference=cust_2')).body.items.map((o) => o.name),
    ['Grocer'],
  );
  t.deepEqual((await list('?reference=nobody')).body.items, []);
  const first = await list('?limit=2');
  t.is(first.body.items.length, 2);
  const rest = await list(`?limit=2&cursor=${first.body.next_cursor}`);
  t.deepEqual(
    rest.body.items.map((o) => o.id),
    [grocer.id],
  );
  t.is((await list('?colour=red')).status, 400);

  const one = await call<{ org: ChildOrg }>(
    sys.url,
    'GET',
    `/v1/orgs/${parent.id}/children/${florist.id}`,
    { token: parent.key },
  );
  t.is(one.status, 200);
  t.deepEqual(one.body.org, florist);

  // The operator sees who is whose child.
  const admin = await call<{ org: Record<string, unknown> }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${bakery.id}`,
    { token: OPERATOR_TOKEN },
  );
  t.like(admin.body.org, { parent_id: parent.id, reference: 'cust_1' });
  const top = await call<{ org: Record<string, unknown> }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${parent.id}`,
    { token: OPERATOR_TOKEN },
  );
  t.like(top.body.org, { parent_id: null, reference: '' });
  const listed = await call<{ items: Array<{ id: string; parent_id: string | null }> }>(
    sys.url,
    'GET',
    '/admin/v1/orgs?q=Grocer',
    { token: OPERATOR_TOKEN },
  );
  t.is(listed.body.items.length, 1);
  t.like(listed.body.items[0], { id: grocer.id, parent_id: parent.id });

  const gone = await call(sys.url, 'DELETE', `/v1/orgs/${parent.id}/children/${florist.id}`, {
    token: parent.key,
  });
  t.is(gone.status, 204);
  t.is(
    (
      await call(sys.url, 'GET', `/v1/orgs/${parent.id}/children/${florist.id}`, {
        token: parent.key,
      })
    ).status,
    404,
  );
  t.deepEqual(
    (await list()).body.items.map((o) => o.id),
    [bakery.id, grocer.id],
  );
});

test('a child is named and referenced within bounds, by a key with the orgs scopes', async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform B');
  const post = (body: unknown, token = parent.key) =>
    call<{ error: { code: string; param?: string } }>(
      sys.url,
      'POST',
      `/v1/orgs/${parent.id}/children`,
      { token, body },
    );
  for (const [body, param] of [
    [{}, 'name'],
    [{ name: '' }, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'x'.repeat(201) }, 'name'],
    [{ name: 'Ok', reference: 'r'.repeat(201) }, 'reference'],
    [{ name: 'Ok', reference: 7 }, 'reference'],
  ] as const) {
    const res = await post(body);
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error.param, param, JSON.stringify(body));
  }
  const unknown = await post({ name: 'Ok', parent_id: parent.id });
  t.is(unknown.status, 400);
  t.like(unknown.body.error, { code: 'unknown_field', param: 'parent_id' });
  t.is(
    (
      await call(sys.url, 'GET', `/v1/orgs/${parent.id}/children?reference=${'r'.repeat(201)}`, {
        token: parent.key,
      })
    ).status,
    400,
  );
  t.is((await post({ name: 'x'.repeat(200), reference: 'r'.repeat(200) })).status, 201);

  const reader = (await createKey(sys.url, parent.id, { scopes: ['orgs:read'] })).secret;
  const writer = (await createKey(sys.url, parent.id, { scopes: ['orgs:write'] })).secret;
  const refused = await post({ name: 'No' }, reader);
  t.is(refused.status, 403);
  t.regex(JSON.stringify(refused.body), /orgs:write/);
  t.is((await post({ name: 'Yes' }, writer)).status, 201);
  const listed = await call(sys.url, 'GET', `/v1/orgs/${parent.id}/children`, { token: writer });
  t.is(listed.status, 403);
  t.regex(JSON.stringify(listed.body), /orgs:read/);
  t.is(
    (await call(sys.url, 'GET', `/v1/orgs/${parent.id}/children`, { token: reader })).status,
    200,
  );
});

test('one level only: a child cannot have children, whoever asks', async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform C');
  const child = await createChild(sys, parent, { name: 'Child' });
  const { secret: childKey } = await createKey(sys.url, child.id, { scopes: [...SCOPES] });
  for (const token of [parent.key, childKey]) {
    const res = await call<{ error: { code: string; message: string } }>(
      sys.url,
      'POST',
      `/v1/orgs/${child.id}/children`,
      { token, body: { name: 'Grandchild' } },
    );
    t.is(res.status, 409);
    t.is(res.body.error.code, 'conflict');
    t.regex(res.body.error.message, /one level only/);
  }
  // Its list of children is empty, and the parent is none of them.
  const list = await call<{ items: unknown[] }>(sys.url, 'GET', `/v1/orgs/${child.id}/children`, {
    token: childKey,
  });
  t.deepEqual(list.body.items, []);
  const parentAsChild = await call(sys.url, 'GET', `/v1/orgs/${child.id}/children/${parent.id}`, {
    token: childKey,
  });
  t.is(parentAsChild.status, 404);
});

test("a parent's key acts on a child's printers, jobs and webhooks, which stay the child's", async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform D');
  const child = await createChild(sys, parent, { name: 'Print Shop', reference: 'cust_9' });
  const { secret: childKey } = await createKey(sys.url, child.id, { scopes: [...SCOPES] });
  const station = await createStation(sys.url, child.id, { name: 'Counter' });
  const link = await connectLink(sys.linkAddress, station.token, [printer('counter')]);
  t.teardown(() => link.close());
  const asParent = <T>(method: string, path: string, body?: unknown, headers = {}) =>
    call<T>(sys.url, method, `/v1/orgs/${child.id}${path}`, { token: parent.key, body, headers });

  const printers = await eventually(
    () => asParent<{ printers: Array<{ id: string; station_id: string }> }>('GET', '/printers'),
    (res) => res.status === 200 && res.body.printers.length === 1,
  );
  const printerId = printers.body.printers[0]?.id as string;
  t.is(printers.body.printers[0]?.station_id, station.id);
  // The parent's own organization has no printer of its child's.
  const own = await call<{ printers: unknown[] }>(
    sys.url,
    'GET',
    `/v1/orgs/${parent.id}/printers`,
    { token: parent.key },
  );
  t.deepEqual(own.body.printers, []);

  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const hook = await asParent<{ endpoint: { id: string } }>('POST', '/webhooks', {
    url: receiver.url,
    events: ['job.created'],
  });
  t.is(hook.status, 201, JSON.stringify(hook.body));
  const hooks = await call<{ items: Array<{ id: string }> }>(
    sys.url,
    'GET',
    `/v1/orgs/${child.id}/webhooks`,
    { token: childKey },
  );
  t.deepEqual(
    hooks.body.items.map((e) => e.id),
    [hook.body.endpoint.id],
  );

  const job = await asParent<{ job: { id: string; org_id: string } }>(
    'POST',
    '/jobs',
    { printer_id: printerId, content: { type: 'text', data: 'hello' } },
    { 'idempotency-key': 'first-job' },
  );
  t.is(job.status, 201, JSON.stringify(job.body));
  t.is(job.body.job.org_id, child.id);
  t.is(job.headers.get('location'), `/v1/orgs/${child.id}/jobs/${job.body.job.id}`);
  // The same Idempotency-Key answers the same job: it is kept in the child's name.
  const again = await asParent<{ job: { id: string } }>(
    'POST',
    '/jobs',
    { printer_id: printerId, content: { type: 'text', data: 'hello' } },
    { 'idempotency-key': 'first-job' },
  );
  t.is(again.status, 201);
  t.is(again.body.job.id, job.body.job.id);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  await link.until(() => link.jobs.some((j) => j.offer.jobId === job.body.job.id));

  const seen = await call<{ job: { id: string; events: Array<{ actor: string }> } }>(
    sys.url,
    'GET',
    `/v1/orgs/${child.id}/jobs/${job.body.job.id}`,
    { token: childKey },
  );
  t.is(seen.status, 200, 'the child sees the job its parent sent');
  const ownJobs = await call<{ items: unknown[] }>(sys.url, 'GET', `/v1/orgs/${parent.id}/jobs`, {
    token: parent.key,
  });
  t.deepEqual(ownJobs.body.items, [], "the parent's own organization has none of it");
  const delivered = await receiver.until((r) => r.length >= 1);
  const event = JSON.parse(delivered[0]?.body.toString() ?? '{}') as { org_id: string };
  t.is(event.org_id, child.id);
  const cancelled = await asParent<{ job: { status: string } }>(
    'POST',
    `/jobs/${job.body.job.id}/cancel`,
    {},
  );
  t.is(cancelled.status, 200);

  // A key without the scope is refused as on its own organization.
  const { secret: readOnly } = await createKey(sys.url, parent.id, { scopes: ['jobs:read'] });
  const noScope = await call(sys.url, 'GET', `/v1/orgs/${child.id}/printers`, { token: readOnly });
  t.is(noScope.status, 403);
  t.is((await call(sys.url, 'GET', `/v1/orgs/${child.id}/jobs`, { token: readOnly })).status, 200);
});

/** The route's path with its organization and random ids. */
function pathOf(path: string, orgId: string): string {
  return path.replace(':org', orgId).replace(/:[a-z_]+/g, () => randomUUID());
}

/** A body each POST and PATCH would take, so that nothing but the organization is wrong. */
function bodyOf(
  method: string,
  path: string,
): { body?: unknown; headers?: Record<string, string> } {
  const id = randomUUID();
  const bodies: Record<string, unknown> = {
    'POST /v1/orgs/:org/jobs': { printer_id: id, content: { type: 'text', data: 'hi' } },
    'POST /v1/orgs/:org/jobs/:id/move': { printer_id: id },
    'POST /v1/orgs/:org/pools': { name: 'Pool', printer_ids: [id] },
    'PATCH /v1/orgs/:org/pools/:id': { name: 'Pool' },
    'POST /v1/orgs/:org/webhooks': { url: 'https://example.com/hook', events: ['job.printed'] },
    'PATCH /v1/orgs/:org/webhooks/:id': { enabled: true },
    'POST /v1/orgs/:org/webhooks/:id/resend-failed': { since: new Date().toISOString() },
    'POST /v1/orgs/:org/children': { name: 'Child' },
    'POST /v1/orgs/:org/enrollments': { station_name: 'Desk' },
  };
  const key = `${method} ${path}`;
  if (key === 'POST /v1/orgs/:org/uploads') {
    return { body: 'text to print', headers: { 'content-type': 'text/plain' } };
  }
  if (method !== 'POST' && method !== 'PATCH') return {};
  return { body: bodies[key] ?? {} };
}

test('isolation: a child never reaches its parent or a sibling, a parent never an unrelated organization, on any route', async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform E');
  const child = await createChild(sys, parent, { name: 'Child' });
  const sibling = await createChild(sys, parent, { name: 'Sibling' });
  const unrelated = await platform(sys, 'Unrelated');
  const unrelatedChild = await createChild(sys, unrelated, { name: "Another's child" });
  const { secret: childKey } = await createKey(sys.url, child.id, { scopes: [...SCOPES] });
  const refusals: Array<[string, string, string]> = [
    [childKey, parent.id, "the child's key on its parent"],
    [childKey, sibling.id, "the child's key on its sibling"],
    [childKey, unrelated.id, "the child's key on an unrelated organization"],
    [parent.key, unrelated.id, "the parent's key on an unrelated organization"],
    [parent.key, unrelatedChild.id, "the parent's key on another's child"],
    [parent.key, child.id.toUpperCase(), "the parent's key on its child's id in capitals"],
  ];
  const routes = V1_ROUTES.filter((r) => r.path.includes(':org'));
  t.true(routes.length > 30, 'every route of an organization is tried');
  for (const route of routes) {
    for (const [token, orgId, who] of refusals) {
      const { body, headers } = bodyOf(route.method, route.path);
      const res = await call<{ error: { code: string; message: string } }>(
        sys.url,
        route.method,
        pathOf(route.path, orgId),
        { token, ...(body === undefined ? {} : { body }), ...(headers ? { headers } : {}) },
      );
      t.is(res.status, 404, `${route.method} ${route.path}: ${who}`);
      t.like(res.body.error, NO_SUCH_ORG, `${route.method} ${route.path}: ${who}`);
    }
  }
  // Its own organization, and its parent's key on it, are let through.
  for (const token of [childKey, parent.key]) {
    const res = await call(sys.url, 'GET', `/v1/orgs/${child.id}/jobs`, { token });
    t.is(res.status, 200);
  }
});

test("a parent's member signed in to the console reaches only the parent", async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform F');
  const child = await createChild(sys, parent, { name: 'Child' });
  const person = await member(sys.url, parent.id, 'owner');
  t.is((await person.call('GET', `/v1/orgs/${parent.id}/jobs`)).status, 200);
  const res = await person.call<{ error: { code: string } }>('GET', `/v1/orgs/${child.id}/jobs`);
  t.is(res.status, 404);
});

/** Every table that holds an organization's rows, and its organization column. */
const ORG_TABLES: Array<[string, string]> = [
  ['orgs', 'id'],
  ['api_keys', 'org_id'],
  ['locations', 'org_id'],
  ['stations', 'org_id'],
  ['printers', 'org_id'],
  ['jobs', 'org_id'],
  ['job_events', 'org_id'],
  ['idempotency_keys', 'org_id'],
  ['webhook_endpoints', 'org_id'],
  ['webhook_deliveries', 'org_id'],
];

async function rowsOf(sys: TestSystem, orgId: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: sys.db.url });
  await client.connect();
  try {
    const counts: Record<string, number> = {};
    for (const [table, column] of ORG_TABLES) {
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${table} WHERE ${column} = $1`,
        [orgId],
      );
      counts[table] = Number(rows[0]?.n ?? 0);
    }
    return counts;
  } finally {
    await client.end();
  }
}

/** A child with a key, a location, a linked station with its printer, a job and a webhook delivery. */
async function populatedChild(sys: TestSystem, parent: { id: string; key: string }, name: string) {
  const child = await createChild(sys, parent, { name });
  const { secret: key } = await createKey(sys.url, child.id, { scopes: [...SCOPES] });
  const location = await call<{ location: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${child.id}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'Hall' } },
  );
  const station = await createStation(sys.url, child.id, {
    name: 'Desk',
    location_id: location.body.location.id,
  });
  const link = await connectLink(sys.linkAddress, station.token, [printer('desk')]);
  const asParent = <T>(method: string, path: string, body?: unknown, headers = {}) =>
    call<T>(sys.url, method, `/v1/orgs/${child.id}${path}`, { token: parent.key, body, headers });
  const printers = await eventually(
    () => asParent<{ printers: Array<{ id: string }> }>('GET', '/printers'),
    (res) => res.body.printers.length === 1,
  );
  const receiver = await startReceiver();
  await asParent('POST', '/webhooks', { url: receiver.url, events: ['job.created'] });
  const job = await asParent<{ job: { id: string } }>(
    'POST',
    '/jobs',
    { printer_id: printers.body.printers[0]?.id, content: { type: 'text', data: 'hi' } },
    { 'idempotency-key': `job-of-${name}` },
  );
  if (job.status !== 201) throw new Error(`job answered ${job.status}`);
  await receiver.until((r) => r.length >= 1);
  await receiver.close();
  return { child, key, link, jobId: job.body.job.id };
}

test.serial(
  "deleting a child leaves nothing of it, and its parent's key no longer reaches it",
  async (t) => {
    const { sys } = t.context;
    const parent = await platform(sys, 'Platform G');
    const doomed = await populatedChild(sys, parent, 'Doomed');
    const kept = await populatedChild(sys, parent, 'Kept');
    t.teardown(() => kept.link.close());
    for (const [table, n] of Object.entries(await rowsOf(sys, doomed.child.id))) {
      t.true(n > 0, `${table} has rows to delete`);
    }
    const keptBefore = await rowsOf(sys, kept.child.id);

    // Another parent's key, and the child's own, cannot delete it.
    const other = await platform(sys, 'Platform H');
    for (const [token, orgId] of [
      [other.key, other.id],
      [doomed.key, doomed.child.id],
      [kept.key, kept.child.id],
    ] as const) {
      const res = await call(sys.url, 'DELETE', `/v1/orgs/${orgId}/children/${doomed.child.id}`, {
        token,
      });
      t.is(res.status, 404);
    }

    const res = await call(sys.url, 'DELETE', `/v1/orgs/${parent.id}/children/${doomed.child.id}`, {
      token: parent.key,
    });
    t.is(res.status, 204, JSON.stringify(res.body));
    t.deepEqual(
      await rowsOf(sys, doomed.child.id),
      Object.fromEntries(ORG_TABLES.map(([table]) => [table, 0])),
    );
    await doomed.link.ended;
    const admin = await call(sys.url, 'GET', `/admin/v1/orgs/${doomed.child.id}`, {
      token: OPERATOR_TOKEN,
    });
    t.is(admin.status, 404);
    const byOwnKey = await call(sys.url, 'GET', `/v1/orgs/${doomed.child.id}/jobs`, {
      token: doomed.key,
    });
    t.is(byOwnKey.status, 401, "the child's keys are refused at once");
    const byParent = await call<{ error: unknown }>(
      sys.url,
      'GET',
      `/v1/orgs/${doomed.child.id}/jobs`,
      { token: parent.key },
    );
    t.is(byParent.status, 404, "the parent's key no longer reaches it");
    t.like(byParent.body.error, NO_SUCH_ORG);
    const again = await call(
      sys.url,
      'DELETE',
      `/v1/orgs/${parent.id}/children/${doomed.child.id}`,
      { token: parent.key },
    );
    t.is(again.status, 404);

    // Its sibling has every row it had, and works.
    t.deepEqual(await rowsOf(sys, kept.child.id), keptBefore);
    const keptJob = await call(sys.url, 'GET', `/v1/orgs/${kept.child.id}/jobs/${kept.jobId}`, {
      token: kept.key,
    });
    t.is(keptJob.status, 200);
  },
);

test.serial(
  'an organization with children is not deleted before them; without them it is',
  async (t) => {
    const { sys } = t.context;
    const parent = await platform(sys, 'Platform I');
    const first = await createChild(sys, parent, { name: 'First' });
    const second = await createChild(sys, parent, { name: 'Second' });
    const refused = await call<{ error: { code: string; message: string } }>(
      sys.url,
      'DELETE',
      `/admin/v1/orgs/${parent.id}`,
      { token: OPERATOR_TOKEN },
    );
    t.is(refused.status, 409);
    t.is(refused.body.error.code, 'conflict');
    t.regex(
      refused.body.error.message,
      new RegExp(`2 child organizations \\(${first.id}, ${second.id}\\)`),
    );
    // Nothing was touched: the parent's key still works, and so does a child of it.
    const still = await call(sys.url, 'GET', `/v1/orgs/${parent.id}/children`, {
      token: parent.key,
    });
    t.is(still.status, 200);
    t.is(
      (
        await call(sys.url, 'POST', `/v1/orgs/${parent.id}/children`, {
          token: parent.key,
          body: { name: 'Third' },
        })
      ).status,
      201,
    );

    // The operator deletes the children (as the parent may), then the parent.
    const third = (
      await call<{ items: ChildOrg[] }>(sys.url, 'GET', `/v1/orgs/${parent.id}/children`, {
        token: parent.key,
      })
    ).body.items.map((o) => o.id);
    for (const id of third) {
      const gone = await call(sys.url, 'DELETE', `/admin/v1/orgs/${id}`, { token: OPERATOR_TOKEN });
      t.is(gone.status, 204);
    }
    const deleted = await call(sys.url, 'DELETE', `/admin/v1/orgs/${parent.id}`, {
      token: OPERATOR_TOKEN,
    });
    t.is(deleted.status, 204);
  },
);

test('the client creates, lists, reads and deletes children, and acts on one with the same key', async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform J');
  const spool = new Spool({ apiKey: parent.key, baseUrl: sys.url });
  const child = await spool.children.create({ name: 'Client child', reference: 'c-1' });
  t.like(child, { name: 'Client child', parent_id: parent.id, reference: 'c-1' });
  t.deepEqual(await spool.children.get(child.id), child);
  sys.clock.advance(1_000);
  await spool.children.create({ name: 'Second', reference: 'c-2' });
  t.deepEqual(
    (await spool.children.list({ reference: 'c-1' })).items.map((o) => o.id),
    [child.id],
  );
  const all: string[] = [];
  for await (const org of spool.children.iterate({ limit: 1 })) all.push(org.name);
  t.deepEqual(all, ['Client child', 'Second']);

  const asChild = new Spool({ apiKey: parent.key, baseUrl: sys.url, org: child.id });
  t.deepEqual((await asChild.printers.list()).printers, []);
  await t.throwsAsync(asChild.children.create({ name: 'Grandchild' }), {
    instanceOf: ConflictError,
  });

  await spool.children.delete(child.id);
  await t.throwsAsync(spool.children.get(child.id), { instanceOf: NotFoundError });
  await t.throwsAsync(asChild.printers.list(), { instanceOf: NotFoundError });
});

test('spool orgs children creates, lists, reads and deletes children; SPOOL_ORG acts on one', async (t) => {
  const { sys } = t.context;
  const parent = await platform(sys, 'Platform K');
  const env = { SPOOL_API_KEY: parent.key, SPOOL_URL: sys.url };
  const created = await runSpool(
    ['orgs', 'children', 'create', '--name', 'CLI child', '--reference', 'cli-1'],
    env,
  );
  t.is(created.code, 0, created.stderr);
  const { org } = JSON.parse(created.stdout) as { org: ChildOrg };
  t.like(org, { name: 'CLI child', parent_id: parent.id, reference: 'cli-1' });

  const listed = await runSpool(['orgs', 'children', 'list', '--reference', 'cli-1'], env);
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual(JSON.parse(listed.stdout), { items: [org], next_cursor: '' });
  const table = await runSpool(['orgs', 'children', 'list', '--format', 'table'], env);
  t.regex(table.stdout, /CLI child/);
  const got = await runSpool(['orgs', 'children', 'get', org.id], env);
  t.deepEqual(JSON.parse(got.stdout), { org });

  const printers = await runSpool(['printers', 'list'], { ...env, SPOOL_ORG: org.id });
  t.is(printers.code, 0, printers.stderr);
  t.deepEqual(JSON.parse(printers.stdout), { printers: [], next_cursor: '' });
  const grandchild = await runSpool(['orgs', 'children', 'create', '--name', 'No'], {
    ...env,
    SPOOL_ORG: org.id,
  });
  t.is(grandchild.code, 1);
  t.is((JSON.parse(grandchild.stderr) as { error: { code: string } }).error.code, 'conflict');

  const unsure = await runSpool(['orgs', 'children', 'delete', org.id], env);
  t.is(unsure.code, 2);
  t.regex(unsure.stderr, /--yes/);
  const deleted = await runSpool(['orgs', 'children', 'delete', org.id, '--yes'], env);
  t.is(deleted.code, 0, deleted.stderr);
  t.deepEqual(JSON.parse(deleted.stdout), { deleted: true, id: org.id });
  const missing = await runSpool(['orgs', 'children', 'get', org.id], env);
  t.is(missing.code, 1);
  t.is((JSON.parse(missing.stderr) as { error: { code: string } }).error.code, 'not_found');
});
