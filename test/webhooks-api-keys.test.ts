/**
 * Webhook endpoints managed by API key under `/v1/orgs/{org}/webhooks…`: the `webhooks:read` and
 * `webhooks:write` scopes, the organization check, and the same answers and rules as the operator
 * API, against a real receiver.
 */
import anyTest, { type TestFn } from 'ava';
import { isWebhookVerificationError, verifyWebhook } from '../client/index.js';
import type { Received, Receiver } from './helpers/receiver.js';
import { startReceiver } from './helpers/receiver.js';
import {
  type Answer,
  call,
  createKey,
  createOrg,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import { type DeliveryView, type EndpointView, webhookAdmin } from './helpers/webhooks.js';

interface Ctx {
  sys: TestSystem;
  receiver: Receiver;
}

const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const [sys, receiver] = await Promise.all([startTestSystem(), startReceiver()]);
  t.context = { sys, receiver };
});

test.after.always(async (t) => {
  await t.context.receiver?.close();
  await t.context.sys?.stop();
});

type ErrorBody = { error: { code: string; message: string; param?: string; request_id: string } };
type Secreted = { endpoint: EndpointView; secret: string };

/** Calls `/v1/orgs/{org}/webhooks{path}` with an API key. */
function hooks(t: { context: Ctx }, token: string, orgId: string) {
  return <T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Answer<T>> =>
    call<T>(t.context.sys.url, method, `/v1/orgs/${orgId}/webhooks${path}`, {
      token,
      ...(body === undefined ? {} : { body }),
      ...(headers ? { headers } : {}),
    });
}

async function keyFor(t: { context: Ctx }, orgId: string, scopes: string[], mode = 'live') {
  return (await createKey(t.context.sys.url, orgId, { mode, scopes })).secret;
}

/** Verifies a received delivery with `secret` the way a receiver does (spec §6). */
function verifies(t: { context: Ctx }, req: Received, secret: string): boolean {
  try {
    verifyWebhook(req.body, String(req.headers['service-signature'] ?? ''), secret, {
      now: () => t.context.sys.clock.now().getTime(),
    });
    return true;
  } catch (err) {
    if (isWebhookVerificationError(err) && err.code === 'signature_mismatch') return false;
    throw err;
  }
}

for (const mode of ['live', 'test']) {
  test(`a ${mode} key with webhooks:write creates an endpoint, sees its secret once, pings it, reads the log and resends`, async (t) => {
    const { receiver } = t.context;
    const orgId = await createOrg(t.context.sys.url);
    const api = hooks(t, await keyFor(t, orgId, ['webhooks:read', 'webhooks:write'], mode), orgId);

    const created = await api<Secreted>('POST', '', {
      url: receiver.url,
      events: ['job.printed'],
      description: 'ERP',
    });
    t.is(created.status, 201);
    t.regex(created.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    t.like(created.body.endpoint, {
      org_id: orgId,
      url: receiver.url,
      events: ['job.printed'],
      description: 'ERP',
      enabled: true,
    });
    const { secret, endpoint } = created.body;
    t.is(created.headers.get('location'), `/v1/orgs/${orgId}/webhooks/${endpoint.id}`);
    const got = await api<{ endpoint: EndpointView }>('GET', `/${endpoint.id}`);
    t.is(got.status, 200);
    t.deepEqual(got.body.endpoint, endpoint);
    const list = await api<{ items: EndpointView[]; next_cursor: string }>('GET', '');
    t.deepEqual(list.body, { items: [endpoint], next_cursor: '' });
    t.false(
      JSON.stringify([got.body, list.body]).includes('whsec_'),
      'the secret is not shown again',
    );

    const ping = await api<{ delivery: DeliveryView }>('POST', `/${endpoint.id}/test`);
    t.is(ping.status, 202, 'queued (DESIGN §5)');
    t.like(ping.body.delivery, { endpoint_id: endpoint.id, event_type: 'ping' });
    const deliveryId = ping.body.delivery.id;
    await receiver.until((r) => r.some((q) => q.delivery === deliveryId));
    const [first] = receiver.forDelivery(deliveryId);
    if (!first) throw new Error('no ping arrived');
    t.true(verifies(t, first, secret), 'the ping is signed with the secret from creation');
    t.like(JSON.parse(first.body.toString('utf8')), {
      type: 'ping',
      org_id: orgId,
      data: { endpoint_id: endpoint.id },
    });

    const succeeded = async () => {
      const log = await api<{ items: DeliveryView[]; next_cursor: string }>(
        'GET',
        `/${endpoint.id}/deliveries`,
      );
      // A loaded machine may answer 503 (Retry-After) for a moment; anything else is a failure.
      if (log.status === 503) return [];
      t.is(log.status, 200);
      return log.body.items;
    };
    const logged = await eventually(succeeded, (items) => items[0]?.state === 'succeeded');
    t.is(logged.length, 1);
    t.like(logged[0], { id: deliveryId, event_type: 'ping', attempt_count: 1 });
    t.like(logged[0]?.attempts[0], { number: 1, outcome: 'succeeded', status_code: 200 });

    const resent = await api<{ delivery: DeliveryView }>(
      'POST',
      `/${endpoint.id}/deliveries/${deliveryId}/resend`,
    );
    t.is(resent.status, 202, 'queued again (DESIGN §5)');
    t.is(resent.body.delivery.id, deliveryId);
    await receiver.until(() => receiver.forDelivery(deliveryId).length === 2);
    const again = receiver.forDelivery(deliveryId)[1] as Received;
    t.is(again.attempt, 2);
    t.true(verifies(t, again, secret));
    const relogged = await eventually(
      succeeded,
      (items) => items[0]?.attempts.length === 2 && items[0].state === 'succeeded',
    );
    t.is(relogged[0]?.attempt_count, 2);

    const changed = await api<{ endpoint: EndpointView }>('PATCH', `/${endpoint.id}`, {
      events: ['*'],
    });
    t.is(changed.status, 200);
    t.deepEqual(changed.body.endpoint.events, ['*']);
    t.is((await api('DELETE', `/${endpoint.id}`)).status, 204);
    t.is((await api('GET', `/${endpoint.id}`)).status, 404);
  });
}

test('rotate answers a new secret, which signs from the next delivery on', async (t) => {
  const { receiver } = t.context;
  const orgId = await createOrg(t.context.sys.url);
  const api = hooks(t, await keyFor(t, orgId, ['webhooks:write']), orgId);
  const created = await api<Secreted>('POST', '', { url: receiver.url, events: ['*'] });
  const { endpoint, secret: old } = created.body;

  const rotated = await api<Secreted>('POST', `/${endpoint.id}/rotate`, { grace_seconds: 0 });
  t.is(rotated.status, 200);
  t.regex(rotated.body.secret, /^whsec_/);
  t.not(rotated.body.secret, old);
  t.is(rotated.body.endpoint.id, endpoint.id);
  t.truthy(rotated.body.endpoint.secret_rotated_at);

  const ping = await api<{ delivery: DeliveryView }>('POST', `/${endpoint.id}/test`);
  const id = ping.body.delivery.id;
  await receiver.until((r) => r.some((q) => q.delivery === id));
  const req = receiver.forDelivery(id)[0] as Received;
  t.true(verifies(t, req, rotated.body.secret));
  t.false(verifies(t, req, old), 'with no grace the old secret no longer signs');
});

test('a key sends again what failed while its endpoint was down and disabled', async (t) => {
  const { receiver } = t.context;
  const orgId = await createOrg(t.context.sys.url);
  const api = hooks(t, await keyFor(t, orgId, ['webhooks:read', 'webhooks:write']), orgId);
  const since = new Date(Date.now() - 60_000).toISOString();
  // Nothing listens on port 9: the ping's first attempt fails, and it waits for its retry.
  const created = await api<Secreted>('POST', '', {
    url: 'http://127.0.0.1:9/down',
    events: ['*'],
  });
  const { endpoint } = created.body;
  const ping = await api<{ delivery: DeliveryView }>('POST', `/${endpoint.id}/test`);
  const log = async () =>
    (await api<{ items: DeliveryView[] }>('GET', `/${endpoint.id}/deliveries`)).body.items ?? [];
  await eventually(log, (items) => items[0]?.attempts[0]?.outcome === 'failed');
  // Disabled, its pending delivery ends failed; enabled again at a working URL, it is sent.
  await api('PATCH', `/${endpoint.id}`, { enabled: false });
  await eventually(log, (items) => items[0]?.state === 'failed');
  await api('PATCH', `/${endpoint.id}`, { enabled: true, url: receiver.url });
  const resent = await api<{ resent: number }>('POST', `/${endpoint.id}/resend-failed`, { since });
  t.is(resent.status, 202);
  t.deepEqual(resent.body, { resent: 1 });
  await receiver.until((r) => r.some((q) => q.delivery === ping.body.delivery.id));
  const delivered = await eventually(log, (items) => items[0]?.state === 'succeeded');
  t.is(delivered[0]?.id, ping.body.delivery.id);
});

test('a key with only webhooks:read lists and gets, and every change answers 403 naming webhooks:write', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const admin = webhookAdmin(sys.url, OPERATOR_TOKEN, orgId);
  const { endpoint } = await admin.create('https://hooks.example.com/spool');
  const ping = await admin.ping(endpoint.id);
  // The ping's attempt (to a host that does not answer) marks the endpoint failing when it is
  // recorded: the two views below are compared once it has been.
  await eventually(
    () => admin.delivery(endpoint.id, ping.id),
    (d) => d.attempts.some((a) => a.outcome !== 'in_flight'),
    60_000,
  );
  const api = hooks(t, await keyFor(t, orgId, ['webhooks:read']), orgId);

  const list = await api<{ items: EndpointView[] }>('GET', '');
  t.is(list.status, 200);
  t.deepEqual(
    list.body.items.map((e) => e.id),
    [endpoint.id],
  );
  const got = await api<{ endpoint: EndpointView }>('GET', `/${endpoint.id}`);
  t.is(got.status, 200);
  t.deepEqual(got.body.endpoint, await admin.get(endpoint.id), 'the same view as the admin API');
  t.is((await api('GET', `/${endpoint.id}/deliveries`)).status, 200);

  const writes: Array<[string, string, unknown]> = [
    ['POST', '', { url: 'https://hooks.example.com/other', events: ['*'] }],
    ['PATCH', `/${endpoint.id}`, { enabled: false }],
    ['DELETE', `/${endpoint.id}`, undefined],
    ['POST', `/${endpoint.id}/rotate`, {}],
    ['POST', `/${endpoint.id}/test`, {}],
    ['POST', `/${endpoint.id}/deliveries/${ping.id}/resend`, {}],
  ];
  for (const [method, path, body] of writes) {
    const res = await api<ErrorBody>(method, path, body);
    t.is(res.status, 403, `${method} ${path}`);
    t.is(res.body.error.code, 'forbidden');
    t.regex(res.body.error.message, /webhooks:write/);
  }
  t.like(await admin.get(endpoint.id), { enabled: true }, 'nothing changed');
});

test('a key with neither webhooks scope answers 403 naming webhooks:read on every GET', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const { endpoint } = await webhookAdmin(sys.url, OPERATOR_TOKEN, orgId).create(
    'https://hooks.example.com/spool',
  );
  const api = hooks(t, await keyFor(t, orgId, ['jobs:read', 'jobs:write']), orgId);
  for (const path of ['', `/${endpoint.id}`, `/${endpoint.id}/deliveries`]) {
    const res = await api<ErrorBody>('GET', path);
    t.is(res.status, 403, path);
    t.is(res.body.error.code, 'forbidden');
    t.regex(res.body.error.message, /webhooks:read/);
  }
  const create = await api<ErrorBody>('POST', '', { url: 'https://a.example.com/', events: ['*'] });
  t.is(create.status, 403);
  t.regex(create.body.error.message, /webhooks:write/);
});

test("another organization's endpoints answer 404, by its path or by their id under one's own", async (t) => {
  const { sys } = t.context;
  const [mine, theirs] = await Promise.all([createOrg(sys.url), createOrg(sys.url, 'Other Co')]);
  const admin = webhookAdmin(sys.url, OPERATOR_TOKEN, theirs);
  const { endpoint } = await admin.create('https://hooks.example.com/theirs');
  const delivery = await admin.ping(endpoint.id);
  const key = await keyFor(t, mine, ['webhooks:read', 'webhooks:write']);
  const own = hooks(t, key, mine);
  const foreign = hooks(t, key, theirs);
  const attempts: Array<[string, string, unknown]> = [
    ['GET', `/${endpoint.id}`, undefined],
    ['PATCH', `/${endpoint.id}`, { enabled: false }],
    ['DELETE', `/${endpoint.id}`, undefined],
    ['POST', `/${endpoint.id}/rotate`, {}],
    ['POST', `/${endpoint.id}/test`, {}],
    ['GET', `/${endpoint.id}/deliveries`, undefined],
    ['POST', `/${endpoint.id}/deliveries/${delivery.id}/resend`, {}],
  ];
  for (const api of [own, foreign]) {
    for (const [method, path, body] of attempts) {
      const res = await api<ErrorBody>(method, path, body);
      t.is(res.status, 404, `${method} ${path}`);
      t.is(res.body.error.code, 'not_found');
    }
  }
  const listed = await foreign<ErrorBody>('GET', '');
  t.is(listed.status, 404);
  t.deepEqual((await own<{ items: unknown[] }>('GET', '')).body.items, []);
  t.like(await admin.get(endpoint.id), { enabled: true }, 'nothing changed');
});

test('the 21st endpoint answers by key what it answers on the admin route', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const api = hooks(t, await keyFor(t, orgId, ['webhooks:write'], 'test'), orgId);
  for (let i = 0; i < 20; i++) {
    const res = await api('POST', '', { url: `https://hooks.example.com/${i}`, events: ['*'] });
    t.is(res.status, 201);
  }
  const body = { url: 'https://hooks.example.com/21', events: ['*'] };
  const byKey = await api<ErrorBody>('POST', '', body);
  const byOperator = await webhookAdmin(sys.url, OPERATOR_TOKEN, orgId).raw<ErrorBody>(
    'POST',
    '',
    body,
  );
  t.is(byKey.status, 409);
  t.is(byKey.status, byOperator.status);
  const { request_id: _a, ...keyError } = byKey.body.error;
  const { request_id: _b, ...operatorError } = byOperator.body.error;
  t.deepEqual(keyError, operatorError);
  t.regex(keyError.message, /at most 20 webhook endpoints/);
});

test('bad bodies answer by key as on the admin route', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const api = hooks(t, await keyFor(t, orgId, ['webhooks:write']), orgId);
  const admin = webhookAdmin(sys.url, OPERATOR_TOKEN, orgId);
  for (const body of [
    { url: 'ftp://example.com/', events: ['*'] },
    { url: 'https://example.com/', events: ['job.exploded'] },
    { url: 'https://example.com/', events: ['*'], secret: 'mine' },
  ]) {
    const byKey = await api<ErrorBody>('POST', '', body);
    const byOperator = await admin.raw<ErrorBody>('POST', '', body);
    t.is(byKey.status, 400, JSON.stringify(body));
    const { request_id: _a, ...keyError } = byKey.body.error;
    const { request_id: _b, ...operatorError } = byOperator.body.error;
    t.deepEqual(keyError, operatorError);
  }
});

test('an Idempotency-Key makes a retried create answer the first answer, making one endpoint', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const api = hooks(t, await keyFor(t, orgId, ['webhooks:read', 'webhooks:write']), orgId);
  const body = { url: 'https://hooks.example.com/once', events: ['*'] };
  const headers = { 'idempotency-key': 'create-hook-1' };
  const first = await api<Secreted>('POST', '', body, headers);
  const retry = await api<Secreted>('POST', '', body, headers);
  t.is(first.status, 201);
  t.is(retry.status, 201);
  t.is(retry.headers.get('idempotent-replayed'), 'true');
  // The secret is shown once: the replay names the same endpoint without it.
  t.deepEqual(retry.body.endpoint, first.body.endpoint);
  t.true(first.body.secret.startsWith('whsec_'));
  t.false('secret' in retry.body);
  t.is((await api<{ items: unknown[] }>('GET', '')).body.items.length, 1);
});

test('outside spool dev a key gets the https rule and the SSRF guard, as the admin route does', async (t) => {
  const strict = await startTestSystem({ webhooks: { allowInsecure: false } });
  t.teardown(() => strict.stop());
  const orgId = await createOrg(strict.url);
  const { secret } = await createKey(strict.url, orgId, { scopes: ['webhooks:write'] });
  for (const url of ['http://hooks.example.com/', 'https://127.0.0.1/', 'https://10.0.0.8/']) {
    const body = { url, events: ['*'] };
    const byKey = await call<ErrorBody>(strict.url, 'POST', `/v1/orgs/${orgId}/webhooks`, {
      token: secret,
      body,
    });
    t.is(byKey.status, 400, url);
    t.like(byKey.body.error, { code: 'invalid', param: 'url' });
    const byOperator = await webhookAdmin(strict.url, OPERATOR_TOKEN, orgId).raw<ErrorBody>(
      'POST',
      '',
      body,
    );
    t.is(byOperator.body.error.message, byKey.body.error.message);
  }
});
