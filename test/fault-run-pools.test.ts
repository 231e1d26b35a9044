/**
 * The fault run with pools: Spool as Kubernetes runs it (every component a `spool serve` process,
 * two replicas each), two stations whose agents print for one pool, and pool jobs flowing from
 * clients that retry as the API asks. A jobs replica and a stations replica are killed (-9), then
 * the other two. In the end every accepted job has printed exactly once, on one member or the
 * other: routing, claims and failover lose and duplicate nothing through the faults.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { assertPrintedOnce } from './helpers/gateway-client.js';
import type { Replica } from './helpers/replicas.js';
import { startFaultRun } from './helpers/restarter.js';
import { type SpoolProcess, spawnSpool } from './helpers/spool.js';
import { eventually } from './helpers/system.js';

async function tempDir(t: ExecutionContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('killing jobs and stations replicas while pool jobs flow loses and duplicates nothing', async (t) => {
  t.timeout(300_000);
  const { cluster, restarter, client, admin, orgId, key } = await startFaultRun(
    t,
    'Pool Fault Print',
  );

  // Both stations print into one folder: a job printed by both would show in the agents' logs.
  const out = await tempDir(t, 'spool-pool-faults-out-');
  const agents: SpoolProcess[] = [];
  for (const name of ['left', 'right']) {
    const token = (
      await client.request<{ token: string }>('POST', `/admin/v1/orgs/${orgId}/stations`, {
        ...admin,
        body: { name },
      })
    ).body.token;
    const state = await tempDir(t, `spool-pool-faults-${name}-`);
    agents.push(
      spawnSpool(
        [
          'agent',
          '--server',
          cluster.linkServers,
          '--token',
          token,
          '--state-dir',
          state,
          '--printer',
          `${name}=file:${out}`,
        ],
        { LOG_LEVEL: 'info' },
      ),
    );
  }
  t.teardown(() => Promise.all(agents.map((a) => a.stop())));

  const printers = (
    await eventually(
      () =>
        client.request<{ printers: Array<{ id: string; station_online: boolean }> }>(
          'GET',
          `/v1/orgs/${orgId}/printers`,
          { token: key },
        ),
      (r) => r.body.printers.filter((p) => p.station_online).length === 2,
      30_000,
    )
  ).body.printers;
  const pool = await client.request<{ pool: { id: string } }>('POST', `/v1/orgs/${orgId}/pools`, {
    token: key,
    body: { name: 'Both', printer_ids: printers.map((p) => p.id), failover_after: 5 },
  });
  t.is(pool.status, 201, JSON.stringify(pool.body));
  const poolId = pool.body.pool.id;

  const accepted = new Map<string, string>();
  const refused: string[] = [];
  let flowing = true;
  let sequence = 0;
  const producers = Array.from({ length: 4 }, async () => {
    while (flowing) {
      const reference = `pool-fault-${sequence++}`;
      const res = await client.request<{ job: { id: string } }>('POST', `/v1/orgs/${orgId}/jobs`, {
        token: key,
        headers: { 'idempotency-key': reference },
        body: { pool_id: poolId, reference, content: { type: 'text', data: reference } },
      });
      if (res.status === 201) accepted.set(reference, res.body.job.id);
      else refused.push(`${reference}: ${res.status} ${JSON.stringify(res.body)}`);
    }
  });
  const flowsAgain = async (what: string) => {
    const before = accepted.size;
    await eventually(
      async () => accepted.size,
      (n) => n >= before + 20,
      90_000,
    ).catch((err: Error) => {
      throw new Error(`jobs did not flow again after ${what}: ${err.message}`);
    });
  };
  const replica = (component: Replica['component'], index: number) =>
    cluster.replicas.find((r) => r.component === component && r.index === index) as Replica;

  await flowsAgain('start');
  for (const index of [0, 1]) {
    restarter.kill(replica('jobs', index).process);
    await flowsAgain(`killing jobs #${index}`);
    restarter.kill(replica('stations', index).process);
    await flowsAgain(`killing stations #${index}`);
  }
  flowing = false;
  await Promise.all(producers);
  t.log(`${accepted.size} pool jobs; retried answers: ${JSON.stringify(client.retried)}`);

  t.deepEqual(refused, [], 'every job was accepted in the end');
  t.deepEqual(client.wrong, [], 'every error a client saw was an outage’s, with Retry-After');
  const ids = [...accepted.values()];
  await assertPrintedOnce(t, { client, orgId, key, accepted: ids, out }, 120_000);
  const printedLines = agents
    .flatMap((a) => a.output().split('\n'))
    .filter((line) => line.includes('"job printed"'))
    .map((line) => (JSON.parse(line) as { job_id: string }).job_id);
  const twice = printedLines.filter((id, i) => printedLines.indexOf(id) !== i);
  t.deepEqual(twice, [], 'no job printed twice, on one member or across both');
  t.true(
    agents.every((a) => a.output().includes('"job printed"')),
    'both members printed some of the pool’s jobs',
  );
  t.deepEqual(restarter.unexpected, [], 'no process exited that was not killed');
});
