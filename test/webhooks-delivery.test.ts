/**
 * Webhook deliveries against real HTTP receivers on loopback, with the retry schedule on a
 * ManualClock: signatures (checked with the stripe and standardwebhooks packages as independent
 * verifiers), the event flow from the print path and the stations, exactly-once fan-out, retries
 * of every kind of failure, rotation, 410 Gone, the 5-day rule, resends and the caps.
 */
import { randomUUID } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import anyTest, { type TestFn } from 'ava';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { verifyWebhook } from '../client/index.js';
import { SCOPES } from '../lib/credentials.js';
import { serviceSignature } from '../services/webhooks/signing.js';
import { connectLink, printer } from './helpers/link-client.js';
import { downUrl, type Received, type Receiver, startReceiver } from './helpers/receiver.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import {
  type DeliveryView,
  type EndpointView,
  type WebhookAdmin,
  webhookAdmin,
} from './helpers/webhooks.js';

interface Ctx {
  sys: TestSystem;
  receivers: Receiver[];
}

const test = anyTest as TestFn<Ctx>;

const TIMEOUT_MS = 600;
const MAX_PAYLOAD = 4096;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const WAITS = [30 * SECOND, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 12 * HOUR];

test.before(async (t) => {
  const sys = await startTestSystem({
    webhooks: { timeoutMs: TIMEOUT_MS, maxPayloadBytes: MAX_PAYLOAD, endpointConcurrency: 2 },
  });
  t.context = { sys, receivers: [] };
});

test.after.always(async (t) => {
  await Promise.all(t.context.receivers.map((r) => r.close()));
  await t.context.sys?.stop();
});

async function receiver(t: { context: Ctx }, reply?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(reply);
  t.context.receivers.push(r);
  return r;
}

async function setUp(t: { context: Ctx }): Promise<{ orgId: string; hooks: WebhookAdmin }> {
  const orgId = await createOrg(t.context.sys.url);
  return { orgId, hooks: webhookAdmin(t.context.sys.url, OPERATOR_TOKEN, orgId) };
}

/** Sends whatever is due now and waits until it is recorded. */
function settle(t: { context: Ctx }): Promise<void> {
  return t.context.sys.system.webhooks.worker.runDue();
}

/** Moves the clock just past a delivery's next attempt and sends what is due. */
async function toNextAttempt(t: { context: Ctx }, deliveries: DeliveryView[]): Promise<void> {
  const next = Math.max(...deliveries.map((d) => Date.parse(d.next_attempt_at ?? '')));
  if (Number.isNaN(next)) throw new Error('a delivery has no next attempt');
  t.context.sys.clock.set(new Date(next + SECOND));
  await settle(t);
}

function clockSeconds(t: { context: Ctx }): number {
  return Math.floor(t.context.sys.clock.now().getTime() / 1000);
}

function standardHeaders(r: Received): Record<string, string> {
  return {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  };
}

test.serial(
  'a job event reaches the endpoints that chose it, signed as spec §6 says and verified by stripe and standardwebhooks',
  async (t) => {
    const { sys } = t.context;
    // standardwebhooks checks the timestamp against the real clock.
    sys.clock.set(new Date());
    const { orgId, hooks } = await setUp(t);
    const created = await receiver(t);
    const printedOnly = await receiver(t);
    const { endpoint, secret } = await hooks.create(created.url, ['job.created']);
    const other = await hooks.create(printedOnly.url, ['job.printed']);
    t.regex(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);

    const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
    const station = await createStation(sys.url, orgId);
    const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
    t.teardown(() => link.close());
    const job = await call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: key,
      body: { printer_id: link.welcome.printerIds.front, content: { type: 'text', data: 'hi' } },
    });
    t.is(job.status, 201);

    const [req] = await created.until((r) => r.length === 1);
    if (!req) throw new Error('no request');
    t.is(req.method, 'POST');
    t.is(req.path, '/hooks');
    t.is(req.headers['content-type'], 'application/json');
    t.regex(String(req.headers['user-agent']), /^Spool-Webhooks\/2\b/);
    t.regex(req.delivery, /^[0-9a-f-]{36}$/);
    t.is(req.headers['webhook-id'], req.delivery);
    t.is(req.attempt, 1);
    const body = JSON.parse(req.body.toString('utf8'));
    t.deepEqual(Object.keys(body), ['type', 'created_at', 'org_id', 'data']);
    t.like(body, { type: 'job.created', org_id: orgId });
    t.is(body.data.job.id, job.body.job.id);

    // Stripe's own check of `t=…,v1=…`, on the test's clock.
    const header = String(req.headers['service-signature']);
    t.regex(header, /^t=\d+,v1=[0-9a-f]{64}$/);
    const stripeWebhooks = Stripe.webhooks;
    t.true(
      stripeWebhooks.signature?.verifyHeader(
        req.body.toString('utf8'),
        header,
        secret,
        300,
        undefined,
        clockSeconds(t),
      ),
    );
    const event = stripeWebhooks.constructEvent(
      req.body,
      header,
      secret,
      300,
      undefined,
      clockSeconds(t),
    );
    t.is((event as unknown as { type: string }).type, 'job.created');
    // Standard Webhooks' library on the webhook-* headers.
    t.like(new Webhook(secret).verify(req.body.toString('utf8'), standardHeaders(req)), {
      type: 'job.created',
    });
    // The project's own helper, and a tampered body.
    t.is(verifyWebhook(req.body, header, secret).type, 'job.created');
    t.throws(() => verifyWebhook(`${req.body.toString('utf8')} `, header, secret), {
      message: /no signature matches/,
    });
    t.throws(() => stripeWebhooks.signature?.verifyHeader('{}', header, secret));

    await settle(t);
    const [delivery] = await hooks.deliveries(endpoint.id);
    t.like(delivery, {
      id: req.delivery,
      event_type: 'job.created',
      state: 'succeeded',
      attempt_count: 1,
      next_attempt_at: null,
      last_status_code: 200,
    });
    t.like(delivery?.attempts[0], { number: 1, outcome: 'succeeded', status_code: 200, error: '' });
    t.deepEqual(await hooks.deliveries(other.endpoint.id), [], 'job.printed only: nothing yet');
    t.is(printedOnly.requests.length, 0);
  },
);

test.serial(
  'station.online, printer.status and station.offline reach webhooks the same way',
  async (t) => {
    const { sys } = t.context;
    const { orgId, hooks } = await setUp(t);
    const r = await receiver(t);
    const { endpoint, secret } = await hooks.create(r.url, [
      'station.online',
      'station.offline',
      'printer.status',
    ]);
    const station = await createStation(sys.url, orgId);
    const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
    const printerId = link.welcome.printerIds.front;
    const types = () => r.requests.map((q) => JSON.parse(q.body.toString('utf8')).type);
    await r.until(() => types().includes('station.online'));
    link.send({ printers: { printers: [printer('front', 'out_of_paper', 'media-empty')] } });
    const outOfPaper = (q: Received) => q.body.toString('utf8').includes('"out_of_paper"');
    await r.until((q) => q.some(outOfPaper));
    link.close();
    await r.until(() => types().includes('station.offline'));

    const bodies = r.requests.map((q) => {
      t.true(
        Stripe.webhooks.signature?.verifyHeader(
          q.body.toString('utf8'),
          String(q.headers['service-signature']),
          secret,
          300,
          undefined,
          clockSeconds(t),
        ),
      );
      return JSON.parse(q.body.toString('utf8'));
    });
    t.deepEqual(bodies.find((b) => b.type === 'station.online')?.data, {
      station_id: station.id,
    });
    t.deepEqual(bodies.find((b) => b.data.status === 'out_of_paper')?.data, {
      printer_id: printerId,
      status: 'out_of_paper',
      detail: 'media-empty',
    });
    t.deepEqual(bodies.find((b) => b.type === 'station.offline')?.data, {
      station_id: station.id,
    });
    await settle(t);
    const log = await hooks.deliveries(endpoint.id);
    t.true(log.length >= 3);
    t.true(log.every((d) => d.state === 'succeeded'));
  },
);

test.serial('an event delivered twice by the bus makes one delivery per endpoint', async (t) => {
  const { sys } = t.context;
  const { orgId, hooks } = await setUp(t);
  const r = await receiver(t);
  const a = await hooks.create(r.url, ['job.failed']);
  const b = await hooks.create(r.url, ['*']);
  const nc = await connect({ servers: sys.nats.url });
  t.teardown(() => nc.close());
  const js = jetstream(nc);
  const event = {
    id: randomUUID(),
    type: 'job.failed',
    created_at: new Date().toISOString(),
    org_id: orgId,
    data: { job: { id: randomUUID(), status: 'failed', status_detail: 'paper jam' } },
  };
  const subject = `events.${orgId}.job.failed`;
  // Different message ids, so JetStream keeps both copies, as after a relay crash outside its window.
  await js.publish(subject, JSON.stringify(event), { msgID: randomUUID() });
  await js.publish(subject, JSON.stringify(event), { msgID: randomUUID() });
  const marker = { ...event, id: randomUUID() };
  await js.publish(subject, JSON.stringify(marker), { msgID: randomUUID() });

  await r.until((q) => q.length >= 4);
  await settle(t);
  for (const endpoint of [a.endpoint, b.endpoint]) {
    const log = await hooks.deliveries(endpoint.id);
    t.deepEqual(log.map((d) => d.event_id).sort(), [event.id, marker.id].sort());
  }
  t.is(r.requests.length, 4, 'two events for two endpoints, nothing twice');
});

test.serial(
  'a receiver that times out, redirects, answers 500 or is down is retried after 30 s, 2 min, 10 min, 30 min, 2 h, 6 h and 12 h, then recorded as failed',
  async (t) => {
    const { sys } = t.context;
    const { hooks } = await setUp(t);
    const elsewhere = await receiver(t);
    const slow = await receiver(t, () => 'hang');
    const moved = await receiver(t, () => ({
      status: 302,
      headers: { location: elsewhere.url },
    }));
    const broken = await receiver(t, () => ({ status: 500, body: 'x'.repeat(5000) }));
    const cases = [
      { url: slow.url, error: `no answer within ${TIMEOUT_MS} ms`, status: null },
      { url: moved.url, error: `redirect to ${elsewhere.url} not followed`, status: 302 },
      { url: broken.url, error: 'the receiver answered 500', status: 500 },
      { url: await downUrl(), error: 'connection refused', status: null },
    ];
    const endpoints: EndpointView[] = [];
    for (const c of cases) endpoints.push((await hooks.create(c.url)).endpoint);
    const pinged: DeliveryView[] = [];
    for (const e of endpoints) pinged.push(await hooks.ping(e.id));
    await settle(t);

    let log = await Promise.all(pinged.map((d, i) => hooks.delivery(endpoints[i]?.id ?? '', d.id)));
    for (const wait of WAITS) {
      for (const d of log) {
        t.is(d.state, 'pending');
        const last = d.attempts.at(-1);
        const gap = Date.parse(d.next_attempt_at ?? '') - Date.parse(last?.at ?? '');
        // Jitter lengthens a wait by up to 10 %; the log's times are whole seconds.
        t.true(gap >= wait - SECOND && gap <= wait * 1.1 + SECOND, `wait ${gap} for ${wait}`);
      }
      await toNextAttempt(t, log);
      log = await Promise.all(pinged.map((d, i) => hooks.delivery(endpoints[i]?.id ?? '', d.id)));
    }
    await settle(t);
    log = await Promise.all(pinged.map((d, i) => hooks.delivery(endpoints[i]?.id ?? '', d.id)));
    cases.forEach((c, i) => {
      const d = log[i] as DeliveryView;
      t.is(d.state, 'failed', c.url);
      t.is(d.attempt_count, 8);
      t.is(d.next_attempt_at, null);
      t.deepEqual(
        d.attempts.map((a) => a.number),
        [1, 2, 3, 4, 5, 6, 7, 8],
      );
      for (const a of d.attempts) {
        t.like(a, { outcome: 'failed', status_code: c.status, error: c.error });
        t.true(a.duration_ms >= 0);
      }
    });
    t.is(slow.requests.length, 8);
    t.true(slow.requests.every((q) => q.delivery === pinged[0]?.id));
    t.deepEqual(
      slow.requests.map((q) => q.attempt),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    t.is(moved.requests.length, 8);
    t.is(elsewhere.requests.length, 0, 'redirects are never followed');
    const brokenAttempt = (log[2] as DeliveryView).attempts[0];
    t.is(brokenAttempt?.response_body, 'x'.repeat(1024), 'the log keeps the first KiB');
    // No ninth attempt, however late it gets.
    sys.clock.advance(48 * HOUR);
    await settle(t);
    t.is(broken.requests.length, 8);
  },
);

test.serial('a receiver’s Retry-After is honoured', async (t) => {
  const { sys } = t.context;
  const { hooks } = await setUp(t);
  let busy = true;
  const r = await receiver(t, () =>
    busy ? { status: 503, headers: { 'retry-after': '3600' } } : { status: 204 },
  );
  const { endpoint } = await hooks.create(r.url);
  const ping = await hooks.ping(endpoint.id);
  await settle(t);
  const d = await hooks.delivery(endpoint.id, ping.id);
  const first = Date.parse(d.attempts[0]?.at ?? '');
  t.true(Date.parse(d.next_attempt_at ?? '') - first >= HOUR - SECOND);
  sys.clock.advance(31 * SECOND);
  await settle(t);
  t.is(r.requests.length, 1, 'not retried after the usual 30 s');
  busy = false;
  await toNextAttempt(t, [d]);
  t.is(r.requests.length, 2);
  t.is((await hooks.delivery(endpoint.id, ping.id)).state, 'succeeded');
});

test.serial(
  'an endpoint answering 410 Gone is disabled, and its other pending deliveries end',
  async (t) => {
    const { hooks } = await setUp(t);
    const r = await receiver(t, (q) => ({
      status: q.attempt === 1 && r.requests.length === 1 ? 500 : 410,
    }));
    const { endpoint } = await hooks.create(r.url);
    const first = await hooks.ping(endpoint.id);
    await settle(t);
    t.is((await hooks.delivery(endpoint.id, first.id)).state, 'pending');
    const second = await hooks.ping(endpoint.id);
    await settle(t);
    const gone = await hooks.delivery(endpoint.id, second.id);
    t.like(gone, { state: 'failed', last_status_code: 410 });
    t.regex(gone.notice, /410 Gone/);
    const cut = await hooks.delivery(endpoint.id, first.id);
    t.like(cut, { state: 'failed', next_attempt_at: null });
    t.regex(cut.notice, /not sent again/);
    t.like(await hooks.get(endpoint.id), { enabled: false, disabled_reason: 'gone' });
    const refused = await hooks.raw('POST', `/${endpoint.id}/test`);
    t.is(refused.status, 409);
  },
);

test.serial(
  'an endpoint failing every attempt for 5 days is disabled with a notice in its log; enabled again, its failures can be resent',
  async (t) => {
    const { sys } = t.context;
    const { hooks } = await setUp(t);
    const { endpoint } = await hooks.create(await downUrl());
    const start = sys.clock.now();
    const early = await hooks.ping(endpoint.id);
    await settle(t);
    t.truthy((await hooks.get(endpoint.id)).failing_since);
    sys.clock.advance(2 * 24 * HOUR);
    await settle(t);
    const later = await hooks.ping(endpoint.id);
    await settle(t);
    t.true((await hooks.get(endpoint.id)).enabled, 'two days of failures are not enough');

    sys.clock.advance(3 * 24 * HOUR);
    await settle(t);
    const disabled = await hooks.get(endpoint.id);
    t.like(disabled, { enabled: false, disabled_reason: 'failing' });
    const log = await hooks.deliveries(endpoint.id);
    t.true(log.every((d) => d.state === 'failed'));
    t.true(
      log.some((d) =>
        /every attempt to the endpoint since .* failed, so it was disabled/.test(d.notice),
      ),
      JSON.stringify(log.map((d) => d.notice)),
    );

    const r = await receiver(t);
    const enabled = await hooks.update(endpoint.id, { enabled: true, url: r.url });
    t.like(enabled, { enabled: true, disabled_reason: null, failing_since: null });
    const resent = await hooks.resendFailed(endpoint.id, start.toISOString());
    t.is(resent, 2);
    await r.until((q) => q.length === 2);
    t.deepEqual(r.requests.map((q) => q.delivery).sort(), [early.id, later.id].sort());
    await settle(t);
    t.true((await hooks.deliveries(endpoint.id)).every((d) => d.state === 'succeeded'));
  },
);

test.serial(
  'after a rotation the next delivery, retries of older ones included, is signed with the new secret; the old one signs alongside only in webhook-signature, during the grace period',
  async (t) => {
    const { sys } = t.context;
    sys.clock.set(new Date());
    const { hooks } = await setUp(t);
    let failFirst = true;
    const r = await receiver(t, () => {
      if (failFirst) {
        failFirst = false;
        return { status: 500 };
      }
      return { status: 200 };
    });
    const { endpoint, secret: s1 } = await hooks.create(r.url);
    const older = await hooks.ping(endpoint.id);
    await settle(t);
    t.is(r.requests.length, 1);

    const rotated = await hooks.rotate(endpoint.id);
    const s2 = rotated.secret;
    t.not(s2, s1);
    t.truthy(rotated.endpoint.previous_secret_expires_at);
    const fresh = await hooks.ping(endpoint.id);
    await r.until((q) => q.some((x) => x.delivery === fresh.id));
    await toNextAttempt(t, [await hooks.delivery(endpoint.id, older.id)]);
    const retried = r.forDelivery(older.id)[1];
    const signedNew = r.forDelivery(fresh.id)[0];
    for (const q of [retried, signedNew]) {
      if (!q) throw new Error('missing request');
      // Spec §6: `t=<unix_seconds>,v1=<hex_signature>`, the new secret used from the next
      // delivery. A receiver that reads the header into a map of its fields verifies.
      const header = String(q.headers['service-signature']);
      t.regex(header, /^t=\d+,v1=[0-9a-f]{64}$/, 'one signature, the new secret’s');
      const fields = Object.fromEntries(header.split(',').map((f) => f.split('=')));
      t.is(fields.v1, serviceSignature(s2, Number(fields.t), q.body));
      const now = () => sys.clock.now().getTime();
      t.is(verifyWebhook(q.body, header, s2, { now }).type, 'ping');
      t.throws(() => verifyWebhook(q.body, header, s1, { now }), {
        message: /no signature matches/,
      });
      t.true(
        Stripe.webhooks.signature?.verifyHeader(
          q.body.toString('utf8'),
          header,
          s2,
          300,
          undefined,
          clockSeconds(t),
        ),
      );
      // Standard Webhooks' header lists signatures by design: the old secret's is there too.
      t.is(String(q.headers['webhook-signature']).split(' ').length, 2);
      for (const s of [s1, s2]) {
        t.like(new Webhook(s).verify(q.body.toString('utf8'), standardHeaders(q as Received)), {
          type: 'ping',
        });
      }
    }
    // The first attempt, before the rotation, had only the old secret's signature.
    const before = r.forDelivery(older.id)[0];
    t.throws(() =>
      verifyWebhook(before?.body ?? '', String(before?.headers['service-signature']), s2, {
        now: () => sys.clock.now().getTime(),
      }),
    );

    // A leaked secret: no grace, the old one stops signing at once.
    const leaked = await hooks.rotate(endpoint.id, 0);
    t.is(leaked.endpoint.previous_secret_expires_at, null);
    const after = await hooks.ping(endpoint.id);
    await r.until((q) => q.some((x) => x.delivery === after.id));
    const q = r.forDelivery(after.id)[0];
    const header = String(q?.headers['service-signature']);
    t.regex(header, /^t=\d+,v1=[0-9a-f]{64}$/);
    const now = () => sys.clock.now().getTime();
    t.is(verifyWebhook(q?.body ?? '', header, leaked.secret, { now }).type, 'ping');
    t.throws(() => verifyWebhook(q?.body ?? '', header, s2, { now }), {
      message: /no signature matches/,
    });
    t.like(
      new Webhook(leaked.secret).verify(
        q?.body.toString('utf8') ?? '',
        standardHeaders(q as Received),
      ),
      {
        type: 'ping',
      },
    );

    // The grace period ends on its own.
    const graced = await hooks.rotate(endpoint.id, 60);
    sys.clock.advance(61 * SECOND);
    t.is((await hooks.get(endpoint.id)).previous_secret_expires_at, null);
    const last = await hooks.ping(endpoint.id);
    await r.until((x) => x.some((y) => y.delivery === last.id));
    const lastHeader = String(r.forDelivery(last.id)[0]?.headers['service-signature']);
    t.regex(lastHeader, /^t=\d+,v1=[0-9a-f]{64}$/);
    t.is(
      verifyWebhook(r.forDelivery(last.id)[0]?.body ?? '', lastHeader, graced.secret, { now }).type,
      'ping',
    );
    await settle(t);
  },
);

test.serial(
  'the test action sends ping with {endpoint_id, sent_at}; resend sends a delivery again with the same id',
  async (t) => {
    const { sys } = t.context;
    const { orgId, hooks } = await setUp(t);
    const r = await receiver(t);
    const { endpoint } = await hooks.create(r.url, ['job.printed']);
    const ping = await hooks.ping(endpoint.id);
    t.like(ping, { event_type: 'ping', state: 'pending' });
    await r.until((q) => q.length === 1);
    const body = JSON.parse(r.requests[0]?.body.toString('utf8') ?? '');
    t.deepEqual(body, {
      type: 'ping',
      created_at: body.created_at,
      org_id: orgId,
      data: { endpoint_id: endpoint.id, sent_at: body.created_at },
    });
    t.regex(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    await settle(t);

    const resent = await hooks.resend(endpoint.id, ping.id);
    t.is(resent.id, ping.id);
    await r.until((q) => q.length === 2);
    t.is(r.requests[1]?.delivery, ping.id);
    t.is(r.requests[1]?.attempt, 2);
    t.deepEqual(r.requests[1]?.body, r.requests[0]?.body, 'the same bytes');
    await settle(t);
    const d = await hooks.delivery(endpoint.id, ping.id);
    t.like(d, { state: 'succeeded', attempt_count: 2 });
    t.is(d.payload, r.requests[0]?.body.toString('utf8'));
    t.is(
      (await hooks.raw('POST', `/${endpoint.id}/deliveries/${randomUUID()}/resend`)).status,
      404,
    );
    const other = await setUp(t);
    t.is(
      (await other.hooks.raw('GET', `/${endpoint.id}/deliveries/${ping.id}`)).status,
      404,
      'another organization cannot see it',
    );
    t.is(sys.system.webhooks.worker.stats.attempts > 0, true);
  },
);

test.serial('an event over the payload cap is logged as failed and never sent', async (t) => {
  const { sys } = t.context;
  const { orgId, hooks } = await setUp(t);
  const r = await receiver(t);
  const { endpoint } = await hooks.create(r.url);
  const nc = await connect({ servers: sys.nats.url });
  t.teardown(() => nc.close());
  const event = {
    id: randomUUID(),
    type: 'printer.status',
    created_at: new Date().toISOString(),
    org_id: orgId,
    data: { printer_id: randomUUID(), status: 'error', detail: 'x'.repeat(MAX_PAYLOAD) },
  };
  await jetstream(nc).publish(`events.${orgId}.printer.status`, JSON.stringify(event));
  const [d] = await (async () => {
    for (;;) {
      const log = await hooks.deliveries(endpoint.id);
      if (log.length > 0) return log;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  t.like(d, { state: 'failed', attempt_count: 0 });
  t.regex(d?.notice ?? '', new RegExp(`more than the limit of ${MAX_PAYLOAD}`));
  t.is((await hooks.raw('POST', `/${endpoint.id}/deliveries/${d?.id}/resend`)).status, 409);
  await settle(t);
  t.is(r.requests.length, 0);
});
