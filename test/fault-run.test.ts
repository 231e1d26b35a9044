/**
 * The fault run: Spool as Kubernetes runs it (every component a `spool serve` process, two replicas
 * each, the agent a process of its own, a restarter that starts again whatever dies), while jobs
 * flow from clients that retry as the API asks them to. One at a time, every kind of process is
 * killed, the gateways are restarted, nats-server is killed and PostgreSQL is shut down. In the end
 * every job the API accepted has printed exactly once and reached its webhook, no Idempotency-Key
 * is left claimed, no process exited that was not killed, and every error a client saw was a 503
 * or 504 (or a 409 for a twin still running) telling it when to try again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { assertPrintedOnce } from './helpers/gateway-client.js';
import { startReceiver } from './helpers/receiver.js';
import type { Replica } from './helpers/replicas.js';
import { startFaultRun } from './helpers/restarter.js';
import { type SpoolProcess, spawnSpool } from './helpers/spool.js';
import { eventually } from './helpers/system.js';

async function tempDir(t: ExecutionContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('killing every component in turn, nats-server and PostgreSQL loses, duplicates and strands nothing', async (t) => {
  t.timeout(420_000);
  const { postgres, nats, cluster, restarter, client, admin, orgId, key } = await startFaultRun(
    t,
    'Fault Print',
  );
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const stationToken = (
    await client.request<{ token: string }>('POST', `/admin/v1/orgs/${orgId}/stations`, {
      ...admin,
      body: { name: 'Front desk' },
    })
  ).body.token;
  await client.request('POST', `/admin/v1/orgs/${orgId}/webhooks`, {
    ...admin,
    body: { url: receiver.url, events: ['job.printed'] },
  });

  const out = await tempDir(t, 'spool-faults-out-');
  const stateDir = await tempDir(t, 'spool-faults-agent-');
  const agentArgs = [
    'agent',
    '--server',
    cluster.linkServers,
    '--token',
    stationToken,
    '--state-dir',
    stateDir,
    '--printer',
    `desk=file:${out}`,
  ];
  const agents: SpoolProcess[] = [spawnSpool(agentArgs, { LOG_LEVEL: 'info' })];
  const agent = () => agents.at(-1) as SpoolProcess;
  restarter.watch('agent', agent, async () => {
    agents.push(spawnSpool(agentArgs, { LOG_LEVEL: 'info' }));
  });
  // Teardowns run last first: this one stops the restarter before anything it watches goes.
  t.teardown(async () => {
    restarter.stop();
    await Promise.all(agents.map((a) => a.stop()));
  });

  const printerId = (
    await eventually(
      () =>
        client.request<{ printers: Array<{ id: string; station_online: boolean }> }>(
          'GET',
          `/v1/orgs/${orgId}/printers`,
          { token: key },
        ),
      (r) => r.body.printers.some((p) => p.station_online),
      30_000,
    )
  ).body.printers[0]?.id as string;

  // Jobs flow from four clients at once, each retrying its job until it is answered.
  const accepted = new Map<string, string>();
  const refused: string[] = [];
  let flowing = true;
  let sequence = 0;
  const producers = Array.from({ length: 4 }, async () => {
    while (flowing) {
      const reference = `fault-${sequence++}`;
      const res = await client.request<{ job: { id: string } }>('POST', `/v1/orgs/${orgId}/jobs`, {
        token: key,
        headers: { 'idempotency-key': reference },
        body: { printer_id: printerId, reference, content: { type: 'text', data: reference } },
      });
      if (res.status === 201) accepted.set(reference, res.body.job.id);
      else refused.push(`${reference}: ${res.status} ${JSON.stringify(res.body)}`);
    }
  });

  /** Waits until jobs flow again after a fault: a few more accepted than before it. */
  const flowsAgain = async (what: string) => {
    const before = accepted.size;
    await eventually(
      async () => accepted.size,
      (n) => n >= before + 10,
      90_000,
    ).catch((err: Error) => {
      throw new Error(`jobs did not flow again after ${what}: ${err.message}`);
    });
  };
  const replica = (component: Replica['component'], index: number) =>
    cluster.replicas.find((r) => r.component === component && r.index === index) as Replica;

  const started = Date.now();
  await flowsAgain('start');
  for (const component of ['jobs', 'stations', 'webhooks', 'accounts'] as const) {
    restarter.kill(replica(component, 0).process);
    await flowsAgain(`killing ${component} #0`);
  }
  restarter.kill(agent());
  await flowsAgain('killing the agent');
  for (const index of [0, 1]) {
    const gateway = replica('gateway', index);
    const old = gateway.process;
    restarter.kill(old, 'SIGTERM');
    await eventually(
      async () => gateway.process !== old,
      (replaced) => replaced,
      30_000,
    );
    await flowsAgain(`restarting gateway #${index}`);
  }
  nats.kill('SIGKILL');
  await sleep(2_000);
  await nats.restart();
  await flowsAgain('killing nats-server');
  await postgres.halt();
  await sleep(3_000);
  await postgres.resume();
  await flowsAgain('stopping PostgreSQL');
  restarter.kill(replica('jobs', 1).process);
  restarter.kill(replica('stations', 1).process);
  await flowsAgain('killing jobs #1 and stations #1');
  flowing = false;
  await Promise.all(producers);
  t.log(
    `${accepted.size} jobs in ${Math.round((Date.now() - started) / 1000)} s; retried answers: ${JSON.stringify(client.retried)}`,
  );

  t.deepEqual(refused, [], 'every job was accepted in the end');
  t.deepEqual(client.wrong, [], 'every error a client saw was an outage’s, with Retry-After');

  const ids = [...accepted.values()];
  await assertPrintedOnce(t, { client, orgId, key, accepted: ids, out }, 120_000);
  const printedLines = agents
    .flatMap((a) => a.output().split('\n'))
    .filter((line) => line.includes('"job printed"'))
    .map((line) => (JSON.parse(line) as { job_id: string }).job_id);
  const twice = printedLines.filter((id, i) => printedLines.indexOf(id) !== i);
  t.deepEqual(twice, [], 'no job printed twice');

  const delivered = await receiver.until((requests) => {
    const seen = new Set(requests.map((r) => JSON.parse(r.body.toString()).data.job.id));
    return ids.every((id) => seen.has(id));
  }, 120_000);
  t.true(delivered.length >= ids.length, 'every job.printed webhook arrived');

  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  const stuck = await db.query('SELECT key FROM idempotency_keys WHERE status = 0');
  await db.end();
  t.deepEqual(stuck.rows, [], 'no Idempotency-Key is left claimed');

  t.deepEqual(restarter.unexpected, [], 'no process exited that was not killed');
});
