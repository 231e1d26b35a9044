/**
 * Webhook endpoints as operators and receivers meet them: the admin API and `spool admin webhook`,
 * secrets (shown once, encrypted at rest), the SSRF guard, and the receivers' verification helper
 * checked against an independent signer.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import Stripe from 'stripe';
import { isWebhookVerificationError, verifyWebhook } from '../client/index.js';
import { checkPublicUrl, isPublicAddress } from '../lib/ssrf.js';
import { createSecretBox, createSecretCache, parseSecretKey } from '../services/webhooks/crypto.js';
import { RETRY_WAITS_MS } from '../services/webhooks/defaults.js';
import { createSender } from '../services/webhooks/delivery.js';
import { retryAfterMs, retryDelayMs } from '../services/webhooks/policy.js';
import { downUrl, startReceiver } from './helpers/receiver.js';
import { runSpool } from './helpers/spool.js';
import {
  call,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import { webhookAdmin } from './helpers/webhooks.js';

interface Ctx {
  sys: TestSystem;
  key: Buffer;
}

const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const key = randomBytes(32);
  t.context = { key, sys: await startTestSystem({ webhooks: { secretKey: key } }) };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

async function org(t: { context: Ctx }) {
  const orgId = await createOrg(t.context.sys.url);
  return { orgId, hooks: webhookAdmin(t.context.sys.url, OPERATOR_TOKEN, orgId) };
}

test('an endpoint is created with a whsec_ secret shown once, then listed, fetched, changed and deleted', async (t) => {
  const { orgId, hooks } = await org(t);
  const created = await hooks.create('https://hooks.example.com/spool', [
    'job.printed',
    'job.failed',
    'job.printed',
  ]);
  t.regex(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.is(Buffer.from(created.secret.slice(6), 'base64').length, 32);
  const id = created.endpoint.id;
  t.like(created.endpoint, {
    org_id: orgId,
    url: 'https://hooks.example.com/spool',
    events: ['job.printed', 'job.failed'],
    enabled: true,
    disabled_reason: null,
    previous_secret_expires_at: null,
  });
  const fetched = await hooks.get(id);
  t.deepEqual(fetched, created.endpoint);
  t.false(JSON.stringify(fetched).includes('whsec_'), 'the secret is not shown again');

  const list = await hooks.raw<{ items: Array<{ id: string }>; next_cursor: string }>('GET', '');
  t.deepEqual(
    list.body.items.map((e) => e.id),
    [id],
  );
  t.is(list.body.next_cursor, '');

  const disabled = await hooks.update(id, { enabled: false, events: ['*'], description: 'ERP' });
  t.like(disabled, {
    enabled: false,
    disabled_reason: 'operator',
    events: ['*'],
    description: 'ERP',
  });
  t.truthy(disabled.disabled_at);
  t.is((await hooks.raw('POST', `/${id}/test`)).status, 409, 'a disabled endpoint is not pinged');
  t.like(await hooks.update(id, { enabled: true }), { enabled: true, disabled_at: null });

  await hooks.remove(id);
  t.is((await hooks.raw('GET', `/${id}`)).status, 404);
  t.is((await hooks.raw('DELETE', `/${id}`)).status, 404);
});

test('the 21st endpoint of an organization answers 409 naming the limit', async (t) => {
  const { hooks } = await org(t);
  // Twenty at once: they take turns for the organization's count rather than fail each other.
  const created = await Promise.all(
    Array.from(
      { length: 20 },
      async (_, i) =>
        (await hooks.raw('POST', '', { url: `https://hooks.example.com/${i}`, events: ['*'] }))
          .status,
    ),
  );
  t.deepEqual(created, Array(20).fill(201));
  const over = await hooks.raw<{ error: { code: string; message: string } }>('POST', '', {
    url: 'https://hooks.example.com/21',
    events: ['*'],
  });
  t.is(over.status, 409);
  t.is(over.body.error.code, 'conflict');
  t.regex(over.body.error.message, /at most 20 webhook endpoints/);
  // Another organization has its own twenty.
  const other = await org(t);
  await other.hooks.create('https://hooks.example.com/other');
  t.pass();
});

test('bad requests answer 400 naming the field, and unknown ids 404', async (t) => {
  const { hooks } = await org(t);
  type Err = { error: { code: string; param?: string; message: string } };
  const cases: Array<[unknown, string, string]> = [
    [{ url: 'not a url', events: ['*'] }, 'invalid', 'url'],
    [{ url: 'ftp://example.com/', events: ['*'] }, 'invalid', 'url'],
    [{ url: 'https://user:pw@example.com/', events: ['*'] }, 'invalid', 'url'],
    [{ url: 'https://example.com/', events: [] }, 'invalid', 'events'],
    [{ url: 'https://example.com/', events: ['job.exploded'] }, 'invalid', 'events.0'],
    [{ url: 'https://example.com/', events: ['*'], secret: 'mine' }, 'unknown_field', 'secret'],
    [{ events: ['*'] }, 'invalid', 'url'],
  ];
  for (const [body, code, param] of cases) {
    const res = await hooks.raw<Err>('POST', '', body);
    t.is(res.status, 400, JSON.stringify(body));
    t.like(res.body.error, { code, param });
  }
  // This system takes http:// targets too (as spool dev does), and says so.
  const ftp = await hooks.raw<Err>('POST', '', { url: 'ftp://example.com/', events: ['*'] });
  t.is(ftp.body.error.message, 'url must use https or http');
  const { endpoint } = await hooks.create('https://example.com/');
  const rotate = await hooks.raw<Err>('POST', `/${endpoint.id}/rotate`, { grace_seconds: -1 });
  t.like(rotate.body.error, { code: 'invalid', param: 'grace_seconds' });
  const since = await hooks.raw<Err>('POST', `/${endpoint.id}/resend-failed`, { since: 'today' });
  t.like(since.body.error, { code: 'invalid', param: 'since' });
  const state = await hooks.raw<Err>('GET', `/${endpoint.id}/deliveries?state=lost`);
  t.like(state.body.error, { code: 'invalid', param: 'state' });
  // A change of nothing is not answered, and audited, as a change.
  const nothing = await hooks.raw<Err>('PATCH', `/${endpoint.id}`, {});
  t.is(nothing.status, 400);
  t.is(
    nothing.body.error.message,
    'nothing to change: give at least one of url, events, enabled, description',
  );

  t.is((await hooks.raw('GET', `/${randomUUID()}`)).status, 404);
  t.is((await hooks.raw('GET', '/not-an-id')).status, 404);
  t.is((await hooks.raw('GET', `/${randomUUID()}/deliveries`)).status, 404);
  const unknownOrg = webhookAdmin(t.context.sys.url, OPERATOR_TOKEN, randomUUID());
  t.is(
    (await unknownOrg.raw('POST', '', { url: 'https://example.com/', events: ['*'] })).status,
    404,
  );
  const stranger = await org(t);
  t.is((await stranger.hooks.raw('GET', `/${endpoint.id}`)).status, 404);
  const noToken = await fetch(`${t.context.sys.url}/admin/v1/orgs/${endpoint.org_id}/webhooks`);
  t.is(noToken.status, 401);
});

/** The event types of spec §6's table, in its order. */
const SPEC_EVENT_TYPES = [
  'job.created',
  'job.printed',
  'job.failed',
  'job.cancelled',
  'job.retried',
  'station.online',
  'station.offline',
  'printer.status',
  'ping',
];

/** The types an endpoint may choose: spec §6's, with Spool's `job.rerouted` (pools) among them. */
const VALID_EVENT_TYPES = SPEC_EVENT_TYPES.flatMap((type) =>
  type === 'job.retried' ? [type, 'job.rerouted'] : [type],
);

test('an endpoint may choose every event type of spec §6, ping included, and Send test pings it whatever it chose', async (t) => {
  const { hooks } = await org(t);
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const every = await hooks.create(receiver.url, SPEC_EVENT_TYPES);
  t.deepEqual(every.endpoint.events, SPEC_EVENT_TYPES);
  const onlyPing = await hooks.create(receiver.url, ['ping']);
  t.deepEqual(onlyPing.endpoint.events, ['ping']);
  const jobs = await hooks.create(receiver.url, ['job.printed']);
  t.deepEqual((await hooks.update(jobs.endpoint.id, { events: ['job.printed', 'ping'] })).events, [
    'job.printed',
    'ping',
  ]);
  const other = await hooks.create(receiver.url, ['job.failed']);

  const pings = await Promise.all(
    [every, onlyPing, jobs, other].map(({ endpoint }) => hooks.ping(endpoint.id)),
  );
  await receiver.until((r) => pings.every((p) => r.some((q) => q.delivery === p.id)));
  t.deepEqual(
    receiver.requests.map((q) => JSON.parse(q.body.toString('utf8')).type),
    ['ping', 'ping', 'ping', 'ping'],
  );
});

test('an unknown event type answers 400 naming every valid one', async (t) => {
  const { hooks } = await org(t);
  type Err = { error: { code: string; param?: string; message: string } };
  const valid = `${VALID_EVENT_TYPES.join(', ')}, or * for all`;
  const created = await hooks.raw<Err>('POST', '', {
    url: 'https://example.com/',
    events: ['job.created', 'job.exploded'],
  });
  t.is(created.status, 400);
  t.like(created.body.error, {
    code: 'invalid',
    param: 'events.1',
    message: `events.1 must be an event type, not "job.exploded": types are ${valid}`,
  });
  const { endpoint } = await hooks.create('https://example.com/');
  const changed = await hooks.raw<Err>('PATCH', `/${endpoint.id}`, { events: ['pong'] });
  t.is(changed.status, 400);
  t.like(changed.body.error, {
    param: 'events.0',
    message: `events.0 must be an event type, not "pong": types are ${valid}`,
  });
  // A list that is not one is refused before the types are read, and the answer names them too.
  const notList = await hooks.raw<Err>('POST', '', {
    url: 'https://example.com/',
    events: 'job.created',
  });
  t.is(notList.status, 400);
  t.like(notList.body.error, { code: 'invalid', param: 'events' });
  t.true(notList.body.error.message.includes(`${VALID_EVENT_TYPES.join(', ')}, *`));
});

test('secrets are stored only encrypted, bound to their endpoint, under the configured key', async (t) => {
  const { hooks } = await org(t);
  const a = await hooks.create('https://a.example.com/');
  const b = await hooks.create('https://b.example.com/');
  const { rows } = await t.context.sys.system.pool.query<{ id: string; secret: Buffer }>(
    'SELECT id, secret FROM webhook_endpoints WHERE id = ANY($1)',
    [[a.endpoint.id, b.endpoint.id]],
  );
  const sealed = new Map(rows.map((r) => [r.id, r.secret]));
  const stored = sealed.get(a.endpoint.id) as Buffer;
  t.false(stored.includes(Buffer.from(a.secret)));
  t.false(stored.includes(Buffer.from(a.secret.slice(6), 'base64')));
  const box = createSecretBox(t.context.key);
  t.is(box.open(stored, a.endpoint.id), a.secret);
  t.throws(
    () => box.open(stored, b.endpoint.id),
    undefined,
    'moved to another row it does not open',
  );
  t.throws(() => createSecretBox(randomBytes(32)).open(stored, a.endpoint.id));
  t.throws(() => parseSecretKey('c2hvcnQ='), { message: /32 random bytes/ });
});

test('kept opened secrets follow a rotation at once and stay bound to their endpoint', (t) => {
  const box = createSecretBox(t.context.key);
  const cache = createSecretCache(box, 2);
  const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
  const first = box.seal('whsec_first', a);
  t.is(cache.open(first, a), 'whsec_first');
  t.is(cache.open(first, a), 'whsec_first');
  t.throws(() => cache.open(first, b), undefined, 'moved to another row it does not open');
  // A rotation writes a new ciphertext: the next claim signs with the new secret, and the old one
  // still opens during the grace period.
  const second = box.seal('whsec_second', a);
  t.is(cache.open(second, a), 'whsec_second');
  t.is(cache.open(first, a), 'whsec_first');
  // Past its bound the least recently used endpoint is dropped, and opened again when asked.
  cache.open(box.seal('whsec_b', b), b);
  cache.open(box.seal('whsec_c', c), c);
  t.is(cache.open(second, a), 'whsec_second');
  t.throws(() => cache.open(Buffer.from('not sealed'), a));
});

test('the SSRF guard refuses non-public addresses when saving and when connecting, unless insecure targets are allowed', async (t) => {
  for (const url of [
    'http://hooks.example.com/',
    'https://127.0.0.1/',
    'https://localhost:8443/',
    'https://api.localhost/',
    'https://localhost./x',
    'https://10.0.0.8/',
    'https://172.16.3.4/',
    'https://192.168.1.10/',
    'https://169.254.169.254/latest/meta-data',
    'https://100.64.0.1/',
    'https://[::1]/',
    'https://[fd00::1]/',
    'https://[fe80::1]/',
    'https://[::ffff:10.0.0.1]/',
    'https://0.0.0.0/',
    'https://224.0.0.1/',
  ]) {
    t.throws(() => checkPublicUrl(url, false), { message: /https|public address/ }, url);
  }
  t.is(checkPublicUrl('https://hooks.example.com/x', false), 'https://hooks.example.com/x');
  t.is(checkPublicUrl('https://8.8.8.8/', false), 'https://8.8.8.8/');
  t.is(checkPublicUrl('http://127.0.0.1:9000/h', true), 'http://127.0.0.1:9000/h');
  t.true(isPublicAddress('2606:4700::1111'));
  t.false(isPublicAddress('64:ff9b::a00:1'), 'NAT64 can embed a private IPv4 address');

  // At connect time: a name that resolves to loopback, and a literal loopback address.
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const port = new URL(receiver.url).port;
  const guarded = createSender({ timeoutMs: 2_000, allowInsecure: false, connectionsPerOrigin: 1 });
  t.teardown(() => guarded.close());
  const attempt = (url: string) =>
    guarded.send({
      url,
      deliveryId: randomUUID(),
      attempt: 1,
      body: Buffer.from('{}'),
      secrets: ['whsec_c2VjcmV0'],
      at: new Date(),
    });
  const byName = await attempt(`https://localhost:${port}/hooks`);
  t.false(byName.succeeded);
  t.regex(byName.error, /localhost resolves to (127\.0\.0\.1|::1), which is not a public address/);
  const byAddress = await attempt(`https://127.0.0.1:${port}/hooks`);
  t.regex(byAddress.error, /127\.0\.0\.1 is not a public address/);
  const plain = await attempt(`http://127.0.0.1:${port}/hooks`);
  t.regex(plain.error, /only https/);
  t.is(receiver.requests.length, 0, 'nothing reached the receiver');

  const open = createSender({ timeoutMs: 2_000, allowInsecure: true, connectionsPerOrigin: 1 });
  t.teardown(() => open.close());
  const allowed = await open.send({
    url: receiver.url,
    deliveryId: randomUUID(),
    attempt: 1,
    body: Buffer.from('{}'),
    secrets: ['whsec_c2VjcmV0'],
    at: new Date(),
  });
  t.true(allowed.succeeded);
});

test('verifyWebhook follows spec §6 and accepts what an independent signer (stripe) makes', (t) => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const body = JSON.stringify({ type: 'job.printed', created_at: 'x', org_id: 'y', data: {} });
  const now = 1_800_000_000;
  const header = Stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret,
    timestamp: now,
  });
  const at = (s: number) => ({ now: () => s * 1000 });
  t.is(verifyWebhook(body, header, secret, at(now)).type, 'job.printed');
  t.is(verifyWebhook(Buffer.from(body), header, secret, at(now + 299)).type, 'job.printed');
  t.is(verifyWebhook(body, header, ['whsec_old', secret], at(now)).type, 'job.printed');
  const other = Stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret: 'whsec_other',
    timestamp: now,
  });
  const both = `${header},${other.split(',')[1]}`;
  t.is(verifyWebhook(body, both, 'whsec_other', at(now)).type, 'job.printed', 'any v1 may match');

  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return isWebhookVerificationError(err) ? err.code : 'other';
    }
    return 'none';
  };
  t.is(
    code(() => verifyWebhook(body, header, secret, at(now + 301))),
    'timestamp_out_of_tolerance',
  );
  t.is(
    code(() => verifyWebhook(body, header, secret, at(now - 301))),
    'timestamp_out_of_tolerance',
  );
  t.is(
    code(() =>
      verifyWebhook(body, header, secret, { now: () => (now + 30) * 1000, tolerance: 10 }),
    ),
    'timestamp_out_of_tolerance',
  );
  t.is(
    code(() => verifyWebhook(`${body}\n`, header, secret, at(now))),
    'signature_mismatch',
  );
  t.is(
    code(() => verifyWebhook(body, header, 'whsec_wrong', at(now))),
    'signature_mismatch',
  );
  t.is(
    code(() => verifyWebhook(body, header.replace(/^t=\d+/, 't=1.5'), secret, at(now))),
    'malformed_header',
  );
  t.is(
    code(() => verifyWebhook(body, header.replace(/^t=\d+,/, ''), secret, at(now))),
    'malformed_header',
  );
  t.is(
    code(() => verifyWebhook(body, `t=${now}`, secret, at(now))),
    'malformed_header',
  );
  t.is(
    code(() => verifyWebhook(body, '', secret, at(now))),
    'malformed_header',
  );
  t.is(
    code(() => verifyWebhook(JSON.parse(body) as unknown as string, header, secret, at(now))),
    'not_raw_body',
  );
  const list = '[1,2]';
  const listHeader = Stripe.webhooks.generateTestHeaderString({
    payload: list,
    secret,
    timestamp: now,
  });
  t.is(
    code(() => verifyWebhook(list, listHeader, secret, at(now))),
    'malformed_body',
  );
});

test('spool admin webhook commands print what the admin API answers', async (t) => {
  const { orgId } = await org(t);
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const env = { SPOOL_URL: t.context.sys.url, SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN };
  const spool = async (...args: string[]) => {
    const res = await runSpool(['admin', 'webhook', ...args, '--org', orgId], env);
    t.is(res.code, 0, res.stderr);
    return res.stdout ? JSON.parse(res.stdout) : undefined;
  };
  const created = await spool('create', '--url', receiver.url, '--event', 'job.printed');
  t.regex(created.secret, /^whsec_/);
  const id = created.endpoint.id as string;
  const ping = await spool('test', '--id', id);
  await receiver.until((q) => q.length === 1);
  t.is(receiver.requests[0]?.delivery, ping.delivery.id);
  const rotated = await spool('rotate', '--id', id, '--grace', '0');
  t.regex(rotated.secret, /^whsec_/);
  t.is(rotated.endpoint.previous_secret_expires_at, null);
  const log = await spool('deliveries', '--id', id);
  t.is(log.items[0].id, ping.delivery.id);
  const disabled = await spool('disable', '--id', id);
  t.is(disabled.endpoint.enabled, false);
});

test('spool serve webhooks names a missing or bad secret key and retry schedule', async (t) => {
  const res = await runSpool(['serve', 'webhooks'], {
    DATABASE_URL: 'postgres://127.0.0.1:1/x',
    NATS_URL: 'nats://127.0.0.1:1',
    WEBHOOK_RETRY_WAITS: '30s,soon',
  });
  t.is(res.code, 1);
  t.regex(res.stderr, /WEBHOOK_SECRET_KEY is required/);
  t.regex(res.stderr, /WEBHOOK_RETRY_WAITS must be a comma list of durations/);
});

test('the retry schedule: waits with jitter, never shorter than Retry-After, none after the 8th attempt', (t) => {
  const now = new Date('2026-01-01T00:00:00Z');
  t.is(retryAfterMs('120', now), 120_000);
  t.is(retryAfterMs('Thu, 01 Jan 2026 01:00:00 GMT', now), 3_600_000);
  t.is(retryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
  t.is(retryAfterMs('soon', now), undefined);
  t.is(retryAfterMs(undefined, now), undefined);
  t.is(retryAfterMs(String(30 * 24 * 3600), now), 7 * 24 * 3600 * 1000, 'at most 7 days');
  const exact = { jitter: 0.1, random: () => 0 };
  const most = { jitter: 0.1, random: () => 0.999_999 };
  t.deepEqual(
    RETRY_WAITS_MS.map((_, i) => retryDelayMs(i + 1, RETRY_WAITS_MS, exact)),
    [30_000, 120_000, 600_000, 1_800_000, 7_200_000, 21_600_000, 43_200_000],
  );
  t.is(retryDelayMs(1, RETRY_WAITS_MS, most), 32_999);
  t.is(retryDelayMs(8, RETRY_WAITS_MS, exact), undefined, 'the 8th attempt is the last');
  t.is(retryDelayMs(1, RETRY_WAITS_MS, { ...exact, retryAfterMs: 90_000 }), 90_000);
  t.is(retryDelayMs(3, RETRY_WAITS_MS, { ...exact, retryAfterMs: 90_000 }), 600_000);
});

test.serial(
  "every organization's endpoints in one list, or those failing or disabled, each with its organization",
  async (t) => {
    const a = await org(t);
    const b = await org(t);
    const down = (await a.hooks.create(await downUrl())).endpoint;
    const receiver = await startReceiver();
    t.teardown(() => receiver.close());
    const fine = (await a.hooks.create(receiver.url)).endpoint;
    const off = (await b.hooks.create(receiver.url)).endpoint;
    await b.hooks.update(off.id, { enabled: false });
    await a.hooks.ping(down.id);
    await a.hooks.ping(fine.id);
    await t.context.sys.system.webhooks.worker.runDue();
    t.truthy((await a.hooks.get(down.id)).failing_since);

    /** The three endpoints as a page of the list shows them, each with its organization. */
    const listed = async (query: string) => {
      const items: Array<{ id: string; org_id: string }> = [];
      let cursor = '';
      do {
        const res = await call<{
          items: Array<{ id: string; org_id: string }>;
          next_cursor: string;
        }>(
          t.context.sys.url,
          'GET',
          `/admin/v1/webhooks?limit=200${query}${cursor ? `&cursor=${cursor}` : ''}`,
          { token: OPERATOR_TOKEN },
        );
        t.is(res.status, 200);
        items.push(...res.body.items);
        cursor = res.body.next_cursor;
      } while (cursor);
      return items
        .filter((e) => [down.id, fine.id, off.id].includes(e.id))
        .map((e) => [e.id, e.org_id]);
    };
    t.deepEqual(await listed('&state=failing'), [[down.id, a.orgId]]);
    t.deepEqual(await listed('&state=disabled'), [[off.id, b.orgId]]);
    t.deepEqual((await listed('')).map(([id]) => id).sort(), [down.id, fine.id, off.id].sort());
    const bad = await call<{ error: { code: string; param: string } }>(
      t.context.sys.url,
      'GET',
      '/admin/v1/webhooks?state=broken',
      { token: OPERATOR_TOKEN },
    );
    t.is(bad.status, 400);
    t.like(bad.body.error, { code: 'invalid', param: 'state' });

    const cli = await runSpool(['admin', 'webhook', 'list-all', '--state', 'failing'], {
      SPOOL_URL: t.context.sys.url,
      SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN,
    });
    t.is(cli.code, 0, cli.stderr);
    t.true(
      (JSON.parse(cli.stdout) as { items: Array<{ id: string }> }).items.some(
        (e) => e.id === down.id,
      ),
    );
  },
);
