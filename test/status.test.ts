import test from 'ava';
import { startCluster } from './helpers/cluster.js';
import { setUpOrg } from './helpers/cluster-org.js';
import { call, eventually } from './helpers/system.js';

interface Status {
  status: string;
  components: Array<{ name: string; status: string }>;
}

test('the status turns outage when the stations service stops, answers in time while it hangs, and recovers; a 503 is logged with its cause', async (t) => {
  // The test polls the public status more often than the 30 a minute a client may.
  const cluster = await startCluster({ env: { PUBLIC_RATE_LIMIT: '100000' } });
  t.teardown(() => cluster.stop());
  const status = () => call<Status>(cluster.url, 'GET', '/v1/public/status');
  const component = (s: Status, name: string) => s.components.find((c) => c.name === name)?.status;

  // A check slower than 500 ms reads as degraded, which a machine busy with other tests can
  // make the first one, before the gateway's channels to the services are up.
  await eventually(status, (res) => res.body.status === 'operational', 10_000);
  const { orgId, key } = await setUpOrg(cluster);

  const stations = cluster.processes.get('stations');
  stations?.child.kill('SIGSTOP');
  const started = Date.now();
  const hanging = await status();
  const took = Date.now() - started;
  t.is(hanging.status, 200);
  t.is(hanging.body.status, 'outage');
  t.is(component(hanging.body, 'print_delivery'), 'outage');
  t.is(component(hanging.body, 'api'), 'operational');
  t.true(took < 3_000, `the status took ${took} ms while a backend hung`);
  stations?.child.kill('SIGCONT');

  await stations?.stop();
  t.is((await status()).body.status, 'outage');

  // A 503 for a service that cannot be reached: its request id leads to the gateway's line saying
  // which, and what the transport said.
  await cluster.processes.get('jobs')?.stop();
  const refused = await call<{ error: { code: string; request_id: string } }>(
    cluster.url,
    'GET',
    `/v1/orgs/${orgId}/jobs`,
    { token: key },
  );
  t.is(refused.status, 503);
  const requestId = refused.body.error.request_id;
  // The log line may reach the process's output a moment after the answer.
  const [matched] =
    (await cluster.processes
      .get('gateway')
      ?.waitFor(
        new RegExp(`\\{"level":"warn"[^\\n]*"err":[^\\n]*"request_id":"${requestId}"[^\\n]*\\}`),
      )) ?? [];
  const line = JSON.parse(matched ?? '{}') as { msg?: string; err?: { message: string } };
  t.is(line.msg, 'the jobs service is unavailable; try again');
  t.regex(line.err?.message ?? '', /UNAVAILABLE|DEADLINE/);
  await cluster.start('jobs');
  await cluster.start('stations');
  const back = await eventually(status, (res) => res.body.status === 'operational', 10_000);
  t.true(back.body.components.every((c) => c.status === 'operational'));
});
