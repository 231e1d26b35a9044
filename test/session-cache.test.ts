/**
 * The gateway's session cache remembers refusals as the key cache does: a forged session cookie
 * sent again and again costs the accounts service one look-up per cache period, not one per
 * request. The look-ups are counted as the accounts service's own metrics count its calls.
 */
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import anyTest, { type TestFn } from 'ava';
import type { ErrorBody } from './helpers/console.js';
import { call, startTestSystem, type TestSystem } from './helpers/system.js';

const test = anyTest.serial as TestFn<{ sys: TestSystem }>;

/** Reads this process's metrics on demand, as a scrape does. */
class OnDemandReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}
const reader = new OnDemandReader();
// Before the services start: their instruments are made from the provider registered then.
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

/** The calls of `AuthenticateSession` the accounts service has served. */
async function sessionLookUps(): Promise<number> {
  const { resourceMetrics } = await reader.collect();
  let calls = 0;
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== 'rpc.server.duration') continue;
      for (const point of metric.dataPoints) {
        if (point.attributes['rpc.method'] !== 'AuthenticateSession') continue;
        calls += (point.value as { count: number }).count;
      }
    }
  }
  return calls;
}

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

test('a forged session cookie sent 1,000 times costs the accounts service one look-up per cache period', async (t) => {
  const { sys } = t.context;
  const forged = `svc_sess_${'F'.repeat(43)}`;
  const headers = { cookie: `spool_session=${forged}` };
  const before = await sessionLookUps();
  let next = 0;
  const statuses = new Map<number, number>();
  // Twenty clients at once, as a flood would come.
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < 1_000) {
        next++;
        const res = await call<ErrorBody>(sys.url, 'GET', '/console/v1/session', { headers });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }),
  );
  t.deepEqual([...statuses], [[401, 1_000]], 'every request is refused');
  const lookUps = (await sessionLookUps()) - before;
  t.true(lookUps >= 1 && lookUps <= 3, `${lookUps} look-ups`);

  // Once the period ends the cookie is looked up again, once.
  sys.clock.advance(30_000);
  for (let i = 0; i < 10; i++) {
    const res = await call<ErrorBody>(sys.url, 'GET', '/console/v1/session', { headers });
    t.is(res.status, 401);
  }
  t.is(await sessionLookUps(), before + lookUps + 1);
});
