/**
 * The delivery log's retention: finished deliveries go with their attempts once they are older
 * than the installation's `webhook_delivery_retention_days`; pending ones stay. The clock is moved
 * by hand and the sweep run directly.
 */
import anyTest, { type TestFn } from 'ava';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import {
  call,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import { type WebhookAdmin, webhookAdmin } from './helpers/webhooks.js';

interface Ctx {
  sys: TestSystem;
  ok: Receiver;
  failing: Receiver;
}

const test = anyTest as TestFn<Ctx>;
const DAY = 24 * 60 * 60 * 1000;

test.before(async (t) => {
  const [sys, ok, failing] = await Promise.all([
    startTestSystem(),
    startReceiver(),
    startReceiver(() => ({ status: 500 })),
  ]);
  t.context = { sys, ok, failing };
});

test.after.always(async (t) => {
  await Promise.all([t.context.ok?.close(), t.context.failing?.close()]);
  await t.context.sys?.stop();
});

async function setUp(t: { context: Ctx }): Promise<WebhookAdmin> {
  const orgId = await createOrg(t.context.sys.url);
  return webhookAdmin(t.context.sys.url, OPERATOR_TOKEN, orgId);
}

function setRetention(t: { context: Ctx }, days: number) {
  return call<{ settings: Record<string, unknown> }>(
    t.context.sys.url,
    'PATCH',
    '/admin/v1/settings',
    {
      token: OPERATOR_TOKEN,
      body: { webhook_delivery_retention_days: days },
    },
  );
}

test.serial(
  'finished deliveries past retention are deleted with their attempts; pending ones stay',
  async (t) => {
    const { sys } = t.context;
    const hooks = await setUp(t);
    const settings = await call<{ settings: Record<string, unknown> }>(
      sys.url,
      'GET',
      '/admin/v1/settings',
      {
        token: OPERATOR_TOKEN,
      },
    );
    t.is(settings.body.settings.webhook_delivery_retention_days, 30, 'the default is 30 days');

    const good = (await hooks.create(t.context.ok.url)).endpoint;
    const bad = (await hooks.create(t.context.failing.url)).endpoint;
    const sent = await hooks.ping(good.id);
    const retrying = await hooks.ping(bad.id);
    await sys.system.webhooks.worker.runDue();
    t.is((await hooks.delivery(good.id, sent.id)).state, 'succeeded');
    t.is(
      (await hooks.delivery(bad.id, retrying.id)).state,
      'pending',
      'the failing one waits to retry',
    );

    sys.clock.advance(29 * DAY);
    t.is(await sys.system.webhooks.logSweeper.runOnce(), 0, 'nothing is 30 days old yet');
    t.is((await hooks.deliveries(good.id)).length, 1);

    sys.clock.advance(2 * DAY);
    t.true((await sys.system.webhooks.logSweeper.runOnce()) >= 1);
    t.deepEqual(await hooks.deliveries(good.id), [], 'the finished delivery left the log');
    const gone = await hooks.raw('GET', `/${good.id}/deliveries/${sent.id}`);
    t.is(gone.status, 404);
    t.is((await hooks.deliveries(bad.id)).length, 1, 'a pending delivery is never deleted');
  },
);

test.serial('operators change the retention in the settings; bad values are refused', async (t) => {
  const { sys } = t.context;
  const hooks = await setUp(t);
  const changed = await setRetention(t, 60);
  t.is(changed.status, 200);
  t.is(changed.body.settings.webhook_delivery_retention_days, 60);
  t.teardown(() => setRetention(t, 30));

  const good = (await hooks.create(t.context.ok.url)).endpoint;
  const sent = await hooks.ping(good.id);
  await sys.system.webhooks.worker.runDue();
  t.is((await hooks.delivery(good.id, sent.id)).state, 'succeeded');

  sys.clock.advance(31 * DAY);
  await sys.system.webhooks.logSweeper.runOnce();
  t.is((await hooks.deliveries(good.id)).length, 1, 'kept: the setting says 60 days');
  sys.clock.advance(30 * DAY);
  await sys.system.webhooks.logSweeper.runOnce();
  t.deepEqual(await hooks.deliveries(good.id), []);

  for (const days of [0, 3651, 'ten']) {
    const refused = await setRetention(t, days as number);
    t.is(refused.status, 400, `${days} is refused`);
    t.like(refused.body, { error: { code: 'invalid', param: 'webhook_delivery_retention_days' } });
  }
});
