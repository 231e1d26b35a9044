/**
 * Spool on a 3-node NATS cluster with every stream kept three times (NATS_REPLICAS=3), every
 * component its own `spool serve` process and `spool agent` printing to files: jobs keep flowing
 * while the node leading the reports stream is killed, and later the node leading the events
 * stream. Every job prints once and every job.printed webhook arrives once.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import test, { type ExecutionContext } from 'ava';
import { connectBus } from '../lib/bus.js';
import { silentLogger } from '../lib/logger.js';
import { CLUSTER_OPERATOR_TOKEN, startCluster } from './helpers/cluster.js';
import { printerId, setUpOrg, startAgent } from './helpers/cluster-org.js';
import { startTestNatsCluster, type TestNatsNode } from './helpers/nats-cluster.js';
import { startReceiver } from './helpers/receiver.js';
import { call, eventually } from './helpers/system.js';

async function tempDir(t: ExecutionContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('jobs flowing while the stream leaders’ nodes are killed, one after the other, print once each and every webhook arrives', async (t) => {
  const cluster = await startCluster({
    nats: () => startTestNatsCluster({ size: 3 }),
    env: { NATS_REPLICAS: '3' },
    // Every component creates the streams at once on a cluster still electing their leaders.
    readyTimeoutMs: 90_000,
    webhooksEnv: { WEBHOOK_POLL_MS: '100' },
  });
  t.teardown(() => cluster.stop());
  const { orgId, key, station } = await setUpOrg(cluster);
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const endpoint = await call(cluster.url, 'POST', `/admin/v1/orgs/${orgId}/webhooks`, {
    token: CLUSTER_OPERATOR_TOKEN,
    body: { url: receiver.url, events: ['job.printed'] },
  });
  t.is(endpoint.status, 201);

  const out = await tempDir(t, 'spool-out-');
  const agent = startAgent(
    cluster.linkAddress,
    station.token,
    [`desk=file:${out}`],
    await tempDir(t, 'spool-agent-'),
  );
  t.teardown(() => agent.stop());
  const deskId = await printerId(cluster, { orgId, key, station }, 'desk');

  const nc = await connectBus({ url: cluster.nats.url, name: 'test', logger: silentLogger });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  for (const stream of ['DISPATCH', 'REPORTS', 'EVENTS']) {
    t.is((await jsm.streams.info(stream)).config.num_replicas, 3, `${stream} is kept three times`);
  }
  const leaderOf = async (stream: string): Promise<TestNatsNode> => {
    const info = await eventually(
      () => jsm.streams.info(stream).catch(() => undefined),
      (i) => i?.cluster?.leader !== undefined,
      20_000,
    );
    const node = cluster.nats.nodes.find((n) => n.serverName === info?.cluster?.leader);
    if (!node) throw new Error(`no node leads ${stream}`);
    return node;
  };

  // Jobs flow the whole time, one every 100 ms; a POST never waits on NATS.
  const accepted: Array<{ id: string; at: number }> = [];
  const refused: number[] = [];
  let flowing = true;
  const flow = (async () => {
    for (let i = 0; flowing; i++) {
      const res = await call<{ job: { id: string } }>(
        cluster.url,
        'POST',
        `/v1/orgs/${orgId}/jobs`,
        {
          token: key,
          body: {
            printer_id: deskId,
            reference: `job ${i}`,
            content: { type: 'text', data: `${i}` },
          },
        },
      ).catch(() => undefined);
      if (res?.status === 201) accepted.push({ id: res.body.job.id, at: Date.now() });
      else refused.push(res?.status ?? 0);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  t.teardown(() => {
    flowing = false;
  });

  const statusOf = async (id: string) =>
    (
      await call<{ job: { status: string } }>(cluster.url, 'GET', `/v1/orgs/${orgId}/jobs/${id}`, {
        token: key,
      })
    ).body.job.status;
  /** Every copy of every stream and of its consumers is current, and each has a leader. */
  const caughtUp = async (): Promise<boolean> => {
    const current = (c?: {
      leader?: string;
      replicas?: Array<{ current: boolean; offline?: boolean }>;
    }) => c?.leader !== undefined && (c.replicas ?? []).every((r) => r.current && !r.offline);
    try {
      for (const stream of ['DISPATCH', 'REPORTS', 'EVENTS']) {
        if (!current((await jsm.streams.info(stream)).cluster)) return false;
        for await (const consumer of jsm.consumers.list(stream)) {
          if (!current(consumer.cluster)) return false;
        }
      }
      return true;
    } catch {
      return false;
    }
  };
  /** Kills `node` and measures how long until a job created after the kill has printed. */
  const killAndRecover = async (node: TestNatsNode): Promise<number> => {
    const killedAt = Date.now();
    node.kill('SIGKILL');
    const after = await eventually(
      async () => accepted.find((j) => j.at > killedAt),
      (j) => j !== undefined,
      20_000,
    );
    try {
      await eventually(
        () => statusOf(after?.id as string),
        (s) => s === 'printed',
        30_000,
      );
    } catch (err) {
      // What each process warned of (a consumer stalled, a publish refused) is the only trace of
      // why printing did not resume.
      for (const [name, proc] of [...cluster.processes, ['agent', agent] as const]) {
        const said = proc
          .output()
          .split('\n')
          .filter((line) => !line.includes('"level":"info"') || line.includes('resumed'));
        t.log(`--- ${name} ---\n${said.slice(-40).join('\n')}`);
      }
      throw err;
    }
    const recovered = Date.now() - killedAt;
    await node.restart();
    // The node is back once it has caught up: killing another before that would leave a stream
    // with one current copy of three, which takes no writes (two nodes lost, not one after the
    // other).
    await eventually(caughtUp, (done) => done, 60_000);
    return recovered;
  };

  await eventually(
    async () => accepted.length,
    (n) => n >= 10,
  );
  const first = await leaderOf('REPORTS');
  const firstRecovery = await killAndRecover(first);
  // Later, another node: the one leading the events stream now, or else any other.
  let second = await leaderOf('EVENTS');
  if (second === first) second = cluster.nats.nodes.find((n) => n !== first) as TestNatsNode;
  const secondRecovery = await killAndRecover(second);
  t.log(
    `printing resumed ${firstRecovery} ms after the REPORTS leader's node (${first.serverName}) was killed, ${secondRecovery} ms after ${second.serverName}`,
  );
  const flowed = Date.now();
  await eventually(
    async () => accepted.filter((j) => j.at > flowed).length,
    (n) => n >= 10,
  );
  flowing = false;
  await flow;

  t.deepEqual(refused, [], 'every POST was accepted');
  const ids = accepted.map((j) => j.id);
  const counts = await eventually(
    () =>
      call<{ counts: Record<string, number> }>(
        cluster.url,
        'GET',
        `/v1/orgs/${orgId}/jobs?limit=1`,
        {
          token: key,
        },
      ),
    (r) => (r.body.counts?.printed ?? 0) + (r.body.counts?.failed ?? 0) === ids.length,
    60_000,
  );
  t.deepEqual(counts.body.counts, { printed: ids.length }, 'every accepted job printed');
  const files = (await readdir(out)).filter((f) => f.endsWith('.txt')).sort();
  t.deepEqual(files, ids.map((id) => `${id}-1.txt`).sort(), 'one file per job, none twice');

  const printedHooks = (requests: typeof receiver.requests) =>
    new Map(
      requests.map((r) => {
        const body = JSON.parse(r.body.toString()) as { data: { job: { id: string } } };
        return [body.data.job.id, r.delivery] as const;
      }),
    );
  await receiver.until((reqs) => printedHooks(reqs).size === ids.length, 60_000);
  const deliveries = new Map<string, Set<string>>();
  for (const r of receiver.requests) {
    const id = (JSON.parse(r.body.toString()) as { data: { job: { id: string } } }).data.job.id;
    deliveries.set(id, (deliveries.get(id) ?? new Set()).add(r.delivery));
  }
  t.deepEqual([...deliveries.keys()].sort(), [...ids].sort(), 'a job.printed webhook per job');
  t.true(
    [...deliveries.values()].every((d) => d.size === 1),
    'one delivery per job.printed event',
  );
});
