import test from 'ava';
import { startCluster } from './helpers/cluster.js';
import { call, eventually } from './helpers/system.js';

interface Status {
  status: string;
  components: Array<{ name: string; status: string }>;
}

test('the status turns outage when the stations service stops, answers in time while it hangs, and recovers', async (t) => {
  // The test polls the public status more often than the 30 a minute a client may.
  const cluster = await startCluster({ env: { PUBLIC_RATE_LIMIT: '100000' } });
  t.teardown(() => cluster.stop());
  const status = () => call<Status>(cluster.url, 'GET', '/v1/public/status');
  const component = (s: Status, name: string) => s.components.find((c) => c.name === name)?.status;

  // A check slower than 500 ms reads as degraded, which a machine busy with other tests can
  // make the first one, before the gateway's channels to the services are up.
  await eventually(status, (res) => res.body.status === 'operational', 10_000);

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
  await cluster.start('stations');
  const back = await eventually(status, (res) => res.body.status === 'operational', 10_000);
  t.true(back.body.components.every((c) => c.status === 'operational'));
});
