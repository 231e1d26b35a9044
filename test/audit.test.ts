import anyTest, { type TestFn } from 'ava';
import pg from 'pg';
import { createLogger } from '../lib/logger.js';
import { Browser, invite, member, PASSWORD, tokenOf } from './helpers/console.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

/** Every line the whole system logged, as written. */
const lines: string[] = [];

const test = anyTest as TestFn<{ sys: TestSystem }>;

test.before(async (t) => {
  const logger = createLogger(
    { level: 'info', name: 'spool' },
    { write: (line: string) => void lines.push(line) },
  );
  t.context = { sys: await startTestSystem({ logger }) };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface Entry {
  id: string;
  at: string;
  actor: string | null;
  session_id: string | null;
  org_id: string | null;
  method: string;
  route: string | null;
  target: Record<string, string>;
  status: number | null;
  ip: string;
  user_agent: string;
  request_id: string;
}

async function audit(
  sys: TestSystem,
  query = '',
): Promise<{ items: Entry[]; next_cursor: string }> {
  const res = await call<{ items: Entry[]; next_cursor: string }>(
    sys.url,
    'GET',
    `/admin/v1/audit${query}`,
    { token: OPERATOR_TOKEN },
  );
  if (res.status !== 200) throw new Error(`audit answered ${res.status}`);
  return res.body;
}

const UA = { 'user-agent': 'audit-test/1.0' };

test.serial(
  'when the audit log cannot be written, the action is refused with 503 and does not happen',
  async (t) => {
    const { sys } = t.context;
    const pool = new pg.Pool({ connectionString: sys.db.url, max: 1 });
    t.teardown(() => pool.end());
    await pool.query('ALTER TABLE audit_log RENAME TO audit_log_away');
    let res: Awaited<ReturnType<typeof call<{ error: { code: string } }>>>;
    try {
      res = await call<{ error: { code: string } }>(sys.url, 'POST', '/admin/v1/orgs', {
        token: OPERATOR_TOKEN,
        body: { name: 'Unaudited Org' },
      });
    } finally {
      await pool.query('ALTER TABLE audit_log_away RENAME TO audit_log');
    }
    t.is(res.status, 503);
    t.is(res.body.error.code, 'unavailable');
    const orgs = await call<{ items: unknown[] }>(sys.url, 'GET', '/admin/v1/orgs?q=Unaudited', {
      token: OPERATOR_TOKEN,
    });
    t.deepEqual(orgs.body.items, [], 'the organization was not created');
    t.true(lines.some((l) => l.includes('could not write the audit log')));
  },
);

test('operator actions are in the audit log: who, what, which target, from where, the outcome', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Audited Org');
  sys.clock.advance(1000);
  const station = await createStation(sys.url, org, { name: 'Desk' });
  sys.clock.advance(1000);
  const rename = await call(sys.url, 'PATCH', `/admin/v1/orgs/${org}/stations/${station.id}`, {
    token: OPERATOR_TOKEN,
    body: { name: 'Front desk' },
    headers: UA,
  });
  t.is(rename.status, 200);
  sys.clock.advance(1000);
  const missing = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
  const gone = await call(sys.url, 'DELETE', `/admin/v1/orgs/${org}/templates/${missing}`, {
    token: OPERATOR_TOKEN,
    headers: UA,
  });
  t.is(gone.status, 404);
  // Reads are not actions; requests without the operator token change nothing and are not here.
  await call(sys.url, 'GET', `/admin/v1/orgs/${org}/stations`, { token: OPERATOR_TOKEN });
  const refused = await call(sys.url, 'DELETE', `/admin/v1/orgs/${org}/stations/${station.id}`, {
    token: 'not-the-token',
  });
  t.is(refused.status, 401);

  const { items } = await audit(sys, `?org=${org}`);
  t.deepEqual(
    items.map((e) => `${e.method} ${e.route} ${e.status}`),
    [
      'DELETE /admin/v1/orgs/:org/templates/:id 404',
      'PATCH /admin/v1/orgs/:org/stations/:id 200',
      'POST /admin/v1/orgs/:org/stations 201',
      'POST /admin/v1/orgs 201',
    ],
    'newest first, only the actions on this organization, its creation included',
  );
  const [deleted, patched, created] = items as [Entry, Entry, Entry];
  t.like(patched, {
    actor: 'operator',
    session_id: null,
    org_id: org,
    target: { id: station.id },
    user_agent: 'audit-test/1.0',
    request_id: rename.headers.get('request-id') ?? 'missing',
  });
  t.regex(patched.ip, /127\.0\.0\.1$/);
  t.regex(patched.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.deepEqual(deleted.target, { id: missing });
  t.deepEqual(patched.target, { id: station.id, fields: 'name' }, 'a change names what it set');
  t.deepEqual(created.target, { created: `/admin/v1/orgs/${org}/stations/${station.id}` });

  // The organization's creation has no organization in its path: it is the one it created.
  const orgs = await audit(sys, '?actor=operator&limit=200');
  const made = orgs.items.find((e) => e.target.created === `/admin/v1/orgs/${org}`);
  t.like(made, { method: 'POST', route: '/admin/v1/orgs', status: 201, org_id: org });
});

test('the audit log pages newest first, and filters by actor', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Paged Org');
  for (const name of ['a', 'b', 'c']) {
    sys.clock.advance(1000);
    await call(sys.url, 'POST', `/admin/v1/orgs/${org}/locations`, {
      token: OPERATOR_TOKEN,
      body: { name },
    });
  }
  const first = await audit(sys, `?org=${org}&limit=2`);
  t.is(first.items.length, 2);
  t.not(first.next_cursor, '');
  const second = await audit(sys, `?org=${org}&limit=2&cursor=${first.next_cursor}`);
  t.is(second.items.length, 2, 'the three locations and the organization’s creation');
  t.is(second.next_cursor, '');
  const ats = [...first.items, ...second.items].map((e) => e.at);
  t.deepEqual(ats, [...ats].sort().reverse());
  t.is((await audit(sys, `?org=${org.toUpperCase()}&actor=operator`)).items.length, 4);

  // A mistyped filter is refused, naming it, rather than finding nothing.
  for (const [query, param] of [
    ['limit=0', 'limit'],
    ['org=acme', 'org'],
    ['actor=person:nobody', 'actor'],
    // Well-formed ids that name nothing are refused too: an empty page would read as "nothing".
    ['org=00000000-0000-4000-8000-000000000000', 'org'],
    ['actor=person:00000000-0000-4000-8000-000000000000', 'actor'],
    ['actor=operators', 'actor'],
  ]) {
    const bad = await call<{ error: { code: string; param: string } }>(
      sys.url,
      'GET',
      `/admin/v1/audit?${query}`,
      { token: OPERATOR_TOKEN },
    );
    t.is(bad.status, 400, query);
    t.like(bad.body.error, { code: 'invalid', param }, query);
  }
});

test('disabling and enabling an endpoint read apart: a true or false field is named with its value', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Toggled Org');
  const made = await call<{ endpoint: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${org}/webhooks`,
    { token: OPERATOR_TOKEN, body: { url: 'http://127.0.0.1:9/hooks', events: ['job.printed'] } },
  );
  t.is(made.status, 201);
  const path = `/admin/v1/orgs/${org}/webhooks/${made.body.endpoint.id}`;
  for (const enabled of [false, true]) {
    const res = await call(sys.url, 'PATCH', path, { token: OPERATOR_TOKEN, body: { enabled } });
    t.is(res.status, 200);
  }
  const renamed = await call(sys.url, 'PATCH', path, {
    token: OPERATOR_TOKEN,
    body: { description: 'the shop' },
  });
  t.is(renamed.status, 200);
  // A refused change names what it tried to set too, of the fields there are.
  const refused = await call(sys.url, 'PATCH', path, {
    token: OPERATOR_TOKEN,
    body: { url: 'not a url', colour: 'blue' },
  });
  t.is(refused.status, 400);
  const patches = (await audit(sys, `?org=${org}`)).items
    .filter((e) => e.method === 'PATCH')
    .map((e) => `${e.target.fields} ${e.status}`)
    .sort();
  // One instant of the test clock: compared as a set.
  t.deepEqual(
    patches,
    ['description 200', 'enabled=false 200', 'enabled=true 200', 'url 400'],
    'never a text value',
  );
});

test.serial('the audit log keeps to a time window: since, until, or both', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Windowed Org');
  const at = (minutes: number) => new Date(sys.clock.now().getTime() + minutes * 60_000);
  const before = at(5);
  sys.clock.advance(10 * 60_000);
  const made = await call(sys.url, 'POST', `/admin/v1/orgs/${org}/locations`, {
    token: OPERATOR_TOKEN,
    body: { name: 'Later' },
  });
  t.is(made.status, 201);
  const routes = async (query: string) =>
    (await audit(sys, `?org=${org}&${query}`)).items.map((e) => e.route);
  t.deepEqual(await routes(`since=${before.toISOString()}`), ['/admin/v1/orgs/:org/locations']);
  t.deepEqual(await routes(`until=${before.toISOString()}`), ['/admin/v1/orgs']);
  t.deepEqual(await routes(`since=${at(-60).toISOString()}&until=${at(60).toISOString()}`), [
    '/admin/v1/orgs/:org/locations',
    '/admin/v1/orgs',
  ]);
  for (const [query, message] of [
    ['since=yesterday', 'since must be an RFC 3339 time'],
    [`since=${at(1).toISOString()}&until=${at(0).toISOString()}`, 'since must be before until'],
  ] as const) {
    const bad = await call<{ error: { code: string; param: string; message: string } }>(
      sys.url,
      'GET',
      `/admin/v1/audit?${query}`,
      { token: OPERATOR_TOKEN },
    );
    t.is(bad.status, 400);
    t.like(bad.body.error, { code: 'invalid', param: 'since', message });
  }
});

test('console actions are in the audit log as the person and session that made them, with no secret', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Console Org');
  const { url } = await invite(sys.url, org, 'ada@example.com', 'admin');
  const admin = new Browser(sys.url);
  t.is((await admin.accept(url, PASSWORD)).status, 200);
  const key = await admin.call<{ key: { id: string }; secret: string }>(
    'POST',
    `/console/v1/orgs/${org}/keys`,
    { body: { name: 'Console key', mode: 'test', scopes: ['jobs:read'] } },
  );
  t.is(key.status, 201);
  // A console invitation has no address of its own to answer with: its entry names its id.
  const invitation = await admin.call<{ invitation: { id: string } }>(
    'POST',
    `/console/v1/orgs/${org}/invitations`,
    { body: { email: 'grace@example.com', role: 'viewer' } },
  );
  t.is(invitation.status, 201);
  // A signed-in session's action outside /console/v1 is recorded too.
  const missingJob = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
  const cancel = await admin.call('POST', `/v1/orgs/${org}/jobs/${missingJob}/cancel`);
  t.is(cancel.status, 404);

  const { items } = await audit(sys, `?org=${org}`);
  const byRoute = (route: string) => items.find((e) => e.route === route);
  const keyEntry = byRoute('/console/v1/orgs/:org/keys');
  t.like(keyEntry, { method: 'POST', status: 201, actor: `person:${admin.personId}` });
  t.truthy(keyEntry?.session_id);
  t.like(byRoute('/console/v1/orgs/:org/invitations'), {
    method: 'POST',
    status: 201,
    target: { created: invitation.body.invitation.id },
  });
  t.like(byRoute('/v1/orgs/:org/jobs/:id/cancel'), {
    status: 404,
    actor: `person:${admin.personId}`,
    target: { id: missingJob },
  });

  // An API key's request is the key's, even from a browser that holds a session cookie.
  const { secret } = await createKey(sys.url, org, { scopes: ['jobs:write'] });
  const byKey = await call(sys.url, 'POST', `/v1/orgs/${org}/jobs/${missingJob}/cancel`, {
    token: secret,
    headers: { cookie: `spool_session=${admin.cookie}` },
  });
  t.is(byKey.status, 404);

  // Requests that are not authenticated change nothing and leave no entry: a failed sign-in, an
  // ended or forged session, a write without the CSRF token, a console path that does not exist.
  const stranger = new Browser(sys.url);
  const failedSignIn = await stranger.signIn('ada@example.com', 'wrong password!');
  t.is(failedSignIn.status, 401);
  stranger.cookie = 'svc_sess_forged';
  const forged = await stranger.call('POST', `/console/v1/orgs/${org}/keys`, { body: {} });
  t.is(forged.status, 401);
  const noCsrf = await admin.call('POST', `/console/v1/orgs/${org}/keys`, {
    body: { name: 'x', mode: 'test', scopes: [] },
    csrf: false,
  });
  t.is(noCsrf.status, 403);
  const nowhere = await call(sys.url, 'POST', '/console/v1/nothing-here');
  t.is(nowhere.status, 404);
  const recorded = new Set((await audit(sys, '?limit=200')).items.map((e) => e.request_id));
  for (const res of [failedSignIn, forged, noCsrf, nowhere, byKey])
    t.false(recorded.has(res.headers.get('request-id') ?? ''), `${res.status} left no entry`);
  // A sign-in that succeeds names the person it signed in.
  const again = new Browser(sys.url);
  const signIn = await again.signIn('ada@example.com', PASSWORD);
  t.is(signIn.status, 200);
  const latest = (await audit(sys, '?limit=200')).items.find(
    (e) => e.request_id === signIn.headers.get('request-id'),
  );
  t.like(latest, {
    route: '/console/v1/sign-in',
    status: 200,
    actor: `person:${admin.personId}`,
    org_id: null,
  });

  // The invitation's acceptance (its token is in the path) names the person and not the token.
  const accepted = (await audit(sys, '?limit=200')).items.filter(
    (e) => e.route === '/console/v1/invitations/:token/accept',
  );
  t.true(accepted.length >= 1);
  t.true(accepted.every((e) => e.status === 200 && e.actor?.startsWith('person:')));
  const everything = JSON.stringify((await audit(sys, '?limit=200')).items);
  for (const secret of [
    key.body.secret,
    tokenOf(url),
    PASSWORD,
    admin.cookie,
    again.cookie,
    OPERATOR_TOKEN,
  ])
    t.false(everything.includes(secret), 'no secret in the audit log');
});

test('each request writes one access log line with route, status, duration and caller, and no secret', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Logged Org');
  const { key, secret } = await createKey(sys.url, org, { scopes: ['jobs:read'] });
  const jobs = await call(sys.url, 'GET', `/v1/orgs/${org}/jobs?limit=1`, { token: secret });
  t.is(jobs.status, 200);
  const wrong = await call(sys.url, 'GET', `/v1/orgs/${org}/jobs`, { token: `${secret}x` });
  t.is(wrong.status, 401);
  const signedIn = await member(sys.url, org, 'viewer');
  await signedIn.call('GET', `/console/v1/orgs/${org}/keys`);
  const badOperator = await call(sys.url, 'GET', `/admin/v1/orgs/${org}/keys`, { token: 'nope' });
  t.is(badOperator.status, 401);
  const nowhere = await call(sys.url, 'GET', '/admin/v1/nothing', { token: 'nope' });
  t.is(nowhere.status, 404);

  const access = lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.access === true);
  const lineOf = (res: { headers: Headers }) =>
    access.filter((l) => l.request_id === res.headers.get('request-id'));
  const [line, ...more] = lineOf(jobs);
  t.is(more.length, 0, 'one line per request');
  t.like(line, {
    level: 'info',
    msg: 'request',
    method: 'GET',
    route: '/v1/orgs/:org/jobs',
    status: 200,
    key_id: key.id,
    org_id: org,
    ip: '127.0.0.1',
  });
  t.is(typeof line?.duration_ms, 'number');
  // A refused request still says which organization it was about.
  t.like(lineOf(wrong)[0], { route: '/v1/orgs/:org/jobs', status: 401, org_id: org });
  t.true(
    access.some(
      (l) => l.route === '/console/v1/orgs/:org/keys' && l.session_id && l.org_id === org,
    ),
  );
  t.true(access.some((l) => l.route === '/admin/v1/orgs' && l.operator === true));
  // A refused operator token is logged under the route it was for, without `operator`.
  t.like(lineOf(badOperator)[0], { route: '/admin/v1/orgs/:org/keys', status: 401, org_id: org });
  t.false('operator' in (lineOf(badOperator)[0] ?? {}));
  t.like(lineOf(nowhere)[0], { route: null, status: 404 });
  t.false(
    access.some((l) => l.route === '/healthz'),
    'probes are left out',
  );

  const all = lines.join('\n');
  for (const s of [secret, OPERATOR_TOKEN, signedIn.cookie, signedIn.csrf])
    t.false(all.includes(s), 'no credential in any log line');
  t.false(/authorization|cookie/i.test(all), 'no Authorization or Cookie header in any log line');
});
