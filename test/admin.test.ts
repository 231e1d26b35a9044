import { createHash } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import pg from 'pg';
import { rfc3339 } from '../lib/time.js';
import {
  call,
  createKey,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

const test = anyTest as TestFn<{ sys: TestSystem; orgId: string }>;

const BODY_LIMIT = 16 * 1024;

test.before(async (t) => {
  const sys = await startTestSystem({ bodyLimit: BODY_LIMIT });
  t.context = { sys, orgId: await createOrg(sys.url) };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface ErrorBody {
  error: { code: string; message: string; param?: string; request_id: string };
}

const keysPath = (org: string) => `/admin/v1/orgs/${org}/keys`;

test('the admin API answers 401 without the operator token or with a wrong one', async (t) => {
  const { sys } = t.context;
  for (const token of [undefined, 'wrong-token', `${OPERATOR_TOKEN}x`]) {
    const res = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
      ...(token === undefined ? {} : { token }),
      body: { name: 'x' },
    });
    t.is(res.status, 401);
    t.is(res.body.error.code, 'unauthorized');
  }
});

test('creating an organization answers 201 with its id and name', async (t) => {
  const { sys } = t.context;
  const res = await call<{ org: { id: string; name: string; created_at: string } }>(
    sys.url,
    'POST',
    '/admin/v1/orgs',
    { token: OPERATOR_TOKEN, body: { name: 'Northwind' } },
  );
  t.is(res.status, 201);
  t.is(res.body.org.name, 'Northwind');
  t.regex(res.body.org.id, /^[0-9a-f-]{36}$/);
  t.regex(res.body.org.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const got = await call(sys.url, 'GET', `/admin/v1/orgs/${res.body.org.id}`, {
    token: OPERATOR_TOKEN,
  });
  t.deepEqual(got.body, res.body);
});

test('malformed JSON answers 400 malformed_json', async (t) => {
  const { sys } = t.context;
  const res = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: '{"name": "x",',
  });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'malformed_json');
});

test('a body that is not JSON answers 415 unsupported_media_type', async (t) => {
  const { sys } = t.context;
  const res = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: 'name=x',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.is(res.status, 415);
  t.is(res.body.error.code, 'unsupported_media_type');
});

test('an unknown field answers 400 unknown_field naming it', async (t) => {
  const { sys, orgId } = t.context;
  const top = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: { name: 'x', colour: 'red' },
  });
  t.is(top.status, 400);
  t.is(top.body.error.code, 'unknown_field');
  t.is(top.body.error.param, 'colour');
  const key = await call<ErrorBody>(sys.url, 'POST', keysPath(orgId), {
    token: OPERATOR_TOKEN,
    body: { mode: 'live', scopes: [], scope: 'jobs:read' },
  });
  t.is(key.body.error.code, 'unknown_field');
  t.is(key.body.error.param, 'scope');
});

test('bad values answer 400 invalid with the field as param', async (t) => {
  const { sys, orgId } = t.context;
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ mode: 'gold', scopes: [] }, 'mode'],
    [{ scopes: [] }, 'mode'],
    [{ mode: 'live', scopes: ['jobs:delete'] }, 'scopes.0'],
    [{ mode: 'live', scopes: [], expires_at: 'tomorrow' }, 'expires_at'],
    [{ mode: 'live', scopes: [], expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
    [{ mode: 'live', scopes: [], allowed_ips: ['300.1.1.1/8'] }, 'allowed_ips'],
  ];
  for (const [body, param] of cases) {
    const res = await call<ErrorBody>(sys.url, 'POST', keysPath(orgId), {
      token: OPERATOR_TOKEN,
      body,
    });
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error.code, 'invalid', JSON.stringify(body));
    t.is(res.body.error.param, param, JSON.stringify(body));
  }
  const blank = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: { name: '' },
  });
  t.is(blank.body.error.param, 'name');
  const array = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: [],
  });
  t.is(array.status, 400);
  t.is(array.body.error.code, 'invalid');
});

test('a body over the size limit answers 413 payload_too_large', async (t) => {
  const { sys } = t.context;
  const res = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: { name: 'x'.repeat(BODY_LIMIT * 2) },
  });
  t.is(res.status, 413);
  t.is(res.body.error.code, 'payload_too_large');
});

test('keys of an unknown organization answer 404', async (t) => {
  const { sys } = t.context;
  const res = await call<ErrorBody>(
    sys.url,
    'POST',
    keysPath('0b5ad4a2-5a38-4b8c-9a8e-3f1d6f5b2c11'),
    {
      token: OPERATOR_TOKEN,
      body: { mode: 'live', scopes: [] },
    },
  );
  t.is(res.status, 404);
  t.is(res.body.error.code, 'not_found');
});

test('lists of an organization that does not exist answer 404, not an empty page', async (t) => {
  const { sys } = t.context;
  const unknown = '0b5ad4a2-5a38-4b8c-9a8e-3f1d6f5b2c11';
  for (const [method, path, body] of [
    ['GET', keysPath(unknown), undefined],
    ['GET', `/admin/v1/orgs/${unknown}/webhooks`, undefined],
    [
      'POST',
      `/admin/v1/orgs/${unknown}/webhooks`,
      { url: 'https://example.com/hooks', events: ['job.printed'] },
    ],
  ] as const) {
    const res = await call<ErrorBody>(sys.url, method, path, {
      token: OPERATOR_TOKEN,
      ...(body ? { body } : {}),
    });
    t.is(res.status, 404, `${method} ${path}`);
    t.like(res.body.error, { code: 'not_found', message: 'no such organization' });
  }
});

test.serial(
  'a key says when it was last used, once its gateway has written its uses',
  async (t) => {
    const { sys } = t.context;
    const org = await createOrg(sys.url);
    const { key, secret } = await createKey(sys.url, org, { scopes: ['jobs:read'] });
    const lastUsed = async () => {
      const res = await call<{ items: Array<{ id: string; last_used_at: string | null }> }>(
        sys.url,
        'GET',
        keysPath(org),
        { token: OPERATOR_TOKEN },
      );
      return res.body.items.find((k) => k.id === key.id)?.last_used_at;
    };
    const uses = sys.gateway.gateway.cache.uses;
    if (!uses) throw new Error('the gateway notes no key uses');
    await uses.flush();
    t.is(await lastUsed(), null, 'never used');

    t.is((await call(sys.url, 'GET', `/v1/orgs/${org}/jobs`, { token: secret })).status, 200);
    const first = rfc3339(sys.clock.now());
    await uses.flush();
    t.is(await lastUsed(), first);

    // A later use moves it on.
    sys.clock.advance(90_000);
    t.is((await call(sys.url, 'GET', '/v1/key', { token: secret })).status, 200);
    await uses.flush();
    t.is(await lastUsed(), rfc3339(sys.clock.now()));
  },
);

test('a key is stored only as the SHA-256 of the whole key', async (t) => {
  const { sys, orgId } = t.context;
  const { key, secret } = await createKey(sys.url, orgId, { scopes: ['jobs:read'] });
  const client = new pg.Client({ connectionString: sys.db.url });
  await client.connect();
  t.teardown(() => client.end());
  const { rows } = await client.query('SELECT * FROM api_keys WHERE id = $1', [key.id]);
  const row = rows[0] as Record<string, unknown>;
  t.deepEqual(row.key_hash, createHash('sha256').update(secret).digest());
  const stored = JSON.stringify(row);
  t.false(stored.includes(secret.slice(9)), 'the secret appears in the row');
  t.is(row.hint, `svc_live_…${secret.slice(-4)}`);
});

test('listing keys pages with limit and cursor, and revocation shows in the list', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Paging Ltd');
  const created: string[] = [];
  for (let i = 0; i < 5; i++)
    created.push((await createKey(sys.url, org, { name: `k${i}` })).key.id);
  const seen: string[] = [];
  let cursor = '';
  let pages = 0;
  do {
    const qs = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : '?limit=2';
    const res = await call<{ items: Array<{ id: string }>; next_cursor: string }>(
      sys.url,
      'GET',
      `${keysPath(org)}${qs}`,
      { token: OPERATOR_TOKEN },
    );
    t.is(res.status, 200);
    t.true(res.body.items.length <= 2);
    seen.push(...res.body.items.map((k) => k.id));
    cursor = res.body.next_cursor;
    pages++;
  } while (cursor !== '' && pages < 10);
  t.is(pages, 3);
  t.deepEqual([...seen].sort(), [...created].sort());

  await call(sys.url, 'DELETE', `${keysPath(org)}/${created[0]}`, { token: OPERATOR_TOKEN });
  const list = await call<{ items: Array<{ id: string; revoked_at: string | null }> }>(
    sys.url,
    'GET',
    keysPath(org),
    { token: OPERATOR_TOKEN },
  );
  const revoked = list.body.items.find((k) => k.id === created[0]);
  t.truthy(revoked?.revoked_at);
  for (const bad of ['?limit=0', '?limit=201', '?limit=x', '?cursor=garbage']) {
    const res = await call<ErrorBody>(sys.url, 'GET', `${keysPath(org)}${bad}`, {
      token: OPERATOR_TOKEN,
    });
    t.is(res.status, 400, bad);
  }
});

test('revoking a key of another organization answers 404 and leaves it working', async (t) => {
  const { sys, orgId } = t.context;
  const other = await createOrg(sys.url, 'Elsewhere');
  const { key, secret } = await createKey(sys.url, orgId);
  const res = await call(sys.url, 'DELETE', `${keysPath(other)}/${key.id}`, {
    token: OPERATOR_TOKEN,
  });
  t.is(res.status, 404);
  t.is((await call(sys.url, 'GET', '/v1/key', { token: secret })).status, 200);
});
