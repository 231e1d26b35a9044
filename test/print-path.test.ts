/**
 * The whole print path with real processes: every component a `spool serve` process, a private
 * nats-server and PostgreSQL, and `spool agent` printing to a file backend.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { type Cluster, startCluster } from './helpers/cluster.js';
import {
  addStation,
  type ClusterOrg,
  printerId,
  setUpOrg,
  startAgent,
} from './helpers/cluster-org.js';
import { call, eventually } from './helpers/system.js';

async function tempDir(t: ExecutionContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function postJob(cluster: Cluster, setup: ClusterOrg, printer: string, text: string) {
  return call<{ job: { id: string; status: string } }>(
    cluster.url,
    'POST',
    `/v1/orgs/${setup.orgId}/jobs`,
    {
      token: setup.key,
      body: { printer_id: printer, reference: text, content: { type: 'text', data: text } },
    },
  );
}

async function jobCounts(cluster: Cluster, setup: ClusterOrg): Promise<Record<string, number>> {
  const res = await call<{ counts: Record<string, number> }>(
    cluster.url,
    'GET',
    `/v1/orgs/${setup.orgId}/jobs?limit=1`,
    {
      token: setup.key,
    },
  );
  return res.body.counts;
}

test('a job POSTed to the API is printed by spool agent to a file and reads printed', async (t) => {
  const cluster = await startCluster();
  t.teardown(() => cluster.stop());
  const setup = await setUpOrg(cluster);
  const out = await tempDir(t, 'spool-out-');
  const agent = startAgent(
    cluster.linkAddress,
    setup.station.token,
    [`desk=file:${out}`],
    await tempDir(t, 'spool-agent-'),
  );
  t.teardown(() => agent.stop());
  const printer = await printerId(cluster, setup, 'desk');

  const job = (await postJob(cluster, setup, printer, 'Hello, printer')).body.job;
  const done = await eventually(
    () =>
      call<{ job: { status: string } }>(
        cluster.url,
        'GET',
        `/v1/orgs/${setup.orgId}/jobs/${job.id}`,
        { token: setup.key },
      ),
    (r) => r.body.job.status === 'printed',
    20_000,
  );
  t.is(done.body.job.status, 'printed');
  const files = await readdir(out);
  t.deepEqual(files, [`${job.id}-1.txt`]);
  t.is(await readFile(join(out, files[0] as string), 'utf8'), 'Hello, printer');
});

test('jobs flowing while the stations service, the agent and nats-server are killed and restarted print exactly once', async (t) => {
  const cluster = await startCluster();
  t.teardown(() => cluster.stop());
  const setup = await setUpOrg(cluster);
  const out = await tempDir(t, 'spool-out-');
  const state = await tempDir(t, 'spool-agent-');
  let agent = startAgent(cluster.linkAddress, setup.station.token, [`desk=file:${out}`], state);
  t.teardown(() => agent.stop());
  const printer = await printerId(cluster, setup, 'desk');

  const total = 60;
  const accepted: string[] = [];
  for (let i = 0; i < total; i++) {
    if (i === 15) {
      cluster.processes.get('stations')?.child.kill('SIGKILL');
      await cluster.processes.get('stations')?.exited;
      await cluster.start('stations');
    }
    if (i === 30) {
      agent.child.kill('SIGKILL');
      await agent.exited;
      agent = startAgent(cluster.linkAddress, setup.station.token, [`desk=file:${out}`], state);
    }
    if (i === 45) {
      cluster.nats.kill('SIGKILL');
      await cluster.nats.restart();
    }
    const res = await eventually(
      () => postJob(cluster, setup, printer, `job ${i}`),
      (r) => r.status === 201,
      20_000,
    );
    accepted.push(res.body.job.id);
  }

  const counts = await eventually(
    () => jobCounts(cluster, setup),
    (c) => (c.printed ?? 0) + (c.failed ?? 0) === total,
    60_000,
  );
  const failed = await call<{ items: Array<{ status_detail: string }> }>(
    cluster.url,
    'GET',
    `/v1/orgs/${setup.orgId}/jobs?status=failed`,
    { token: setup.key },
  );
  t.deepEqual(
    failed.body.items.map((j) => j.status_detail),
    [],
    'no job failed',
  );
  t.deepEqual(counts, { printed: total }, 'every accepted job printed');
  const files = (await readdir(out)).filter((f) => f.endsWith('.txt')).sort();
  t.deepEqual(files, accepted.map((id) => `${id}-1.txt`).sort(), 'one file per job, none twice');
});

test('two stations-service replicas share a fleet: jobs reach stations connected to either', async (t) => {
  const cluster = await startCluster();
  t.teardown(() => cluster.stop());
  const setup = await setUpOrg(cluster, 'North');
  const replica = await cluster.startStationsReplica();
  const south = await addStation(cluster, setup.orgId, 'South');
  const outNorth = await tempDir(t, 'spool-north-');
  const outSouth = await tempDir(t, 'spool-south-');
  const north = startAgent(
    cluster.linkAddress,
    setup.station.token,
    [`n=file:${outNorth}`],
    await tempDir(t, 'spool-a-'),
  );
  const southAgent = startAgent(
    replica.linkAddress,
    south.token,
    [`s=file:${outSouth}`],
    await tempDir(t, 'spool-b-'),
  );
  t.teardown(() => Promise.all([north.stop(), southAgent.stop()]).then(() => undefined));
  const n = await printerId(cluster, setup, 'n');
  const s = await printerId(cluster, setup, 's');
  const jobs: string[] = [];
  for (let i = 0; i < 10; i++) {
    jobs.push((await postJob(cluster, setup, i % 2 ? s : n, `job ${i}`)).body.job.id);
  }
  await eventually(
    () => jobCounts(cluster, setup),
    (c) => c.printed === 10,
    30_000,
  );
  t.is((await readdir(outNorth)).length, 5);
  t.is((await readdir(outSouth)).length, 5);
});
