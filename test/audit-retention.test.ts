/**
 * The audit log's retention: entries older than the installation's `audit_retention_days` go,
 * younger ones stay, and operators read and change the setting through the admin API. The clock is
 * moved by hand and the sweep run directly.
 */
import anyTest, { type TestFn } from 'ava';
import {
  call,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

const test = anyTest as TestFn<{ sys: TestSystem }>;
const DAY = 24 * 60 * 60 * 1000;

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

/** The routes of the audit entries of one organization, newest first. */
async function routesOf(sys: TestSystem, orgId: string): Promise<string[]> {
  const res = await call<{ items: { route: string }[] }>(
    sys.url,
    'GET',
    `/admin/v1/audit?org=${orgId}`,
    { token: OPERATOR_TOKEN },
  );
  if (res.status !== 200) throw new Error(`audit answered ${res.status}`);
  return res.body.items.map((e) => e.route);
}

function setRetention(sys: TestSystem, days: unknown) {
  return call<{ settings: Record<string, unknown> }>(sys.url, 'PATCH', '/admin/v1/settings', {
    token: OPERATOR_TOKEN,
    body: { audit_retention_days: days },
  });
}

test.serial('entries older than the retention are deleted; younger ones stay', async (t) => {
  const { sys } = t.context;
  const settings = await call<{ settings: Record<string, unknown> }>(
    sys.url,
    'GET',
    '/admin/v1/settings',
    { token: OPERATOR_TOKEN },
  );
  t.is(settings.body.settings.audit_retention_days, 365, 'the default is a year');

  const old = await createOrg(sys.url);
  t.deepEqual(await routesOf(sys, old), ['/admin/v1/orgs']);
  sys.clock.advance(200 * DAY);
  const recent = await createOrg(sys.url);

  sys.clock.advance(160 * DAY);
  t.is(await sys.system.auditSweeper.runOnce(), 0, 'nothing is a year old yet');
  t.is((await routesOf(sys, old)).length, 1);

  sys.clock.advance(10 * DAY);
  t.true((await sys.system.auditSweeper.runOnce()) >= 1);
  t.deepEqual(await routesOf(sys, old), [], 'the entry of 370 days ago is gone');
  t.deepEqual(await routesOf(sys, recent), ['/admin/v1/orgs'], 'the one of 170 days stays');
});

test.serial('operators change the retention in the settings; bad values are refused', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url);
  const changed = await setRetention(sys, 30);
  t.is(changed.status, 200);
  t.is(changed.body.settings.audit_retention_days, 30);
  t.teardown(() => setRetention(sys, 365));
  const read = await call<{ settings: Record<string, unknown> }>(
    sys.url,
    'GET',
    '/admin/v1/settings',
    { token: OPERATOR_TOKEN },
  );
  t.is(read.body.settings.audit_retention_days, 30, 'the setting reads back');

  sys.clock.advance(29 * DAY);
  await sys.system.auditSweeper.runOnce();
  t.is((await routesOf(sys, orgId)).length, 1, 'kept: the setting says 30 days');
  sys.clock.advance(2 * DAY);
  await sys.system.auditSweeper.runOnce();
  t.deepEqual(await routesOf(sys, orgId), []);

  for (const days of [0, 3651, 'ten', 1.5]) {
    const refused = await setRetention(sys, days);
    t.is(refused.status, 400, `${days} is refused`);
    t.like(refused.body, { error: { code: 'invalid', param: 'audit_retention_days' } });
  }
});
