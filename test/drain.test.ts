/**
 * Production serving: each component as `spool serve` drains on SIGTERM the way Kubernetes needs
 * it (readiness false first, work in flight finished, exit 0 within the grace), logs JSON lines,
 * and the chart's `helm test` script passes against it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { type Client, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import anyTest, { type TestFn } from 'ava';
import { protoPath } from 'grpc-health-check';
import { parseAllDocuments } from 'yaml';
import { createClient, LIVENESS_SERVICE, startGrpcServer } from '../lib/grpc.js';
import { CHART_DIR, helm } from './helpers/helm.js';
import { freePort } from './helpers/ports.js';
import {
  healthClient,
  healthStatus,
  REPLICAS_OPERATOR_TOKEN,
  type ReplicatedCluster,
  startReplicatedCluster,
} from './helpers/replicas.js';
import { eventually } from './helpers/system.js';

const exec = promisify(execFile);
const test = anyTest as TestFn<{ cluster: ReplicatedCluster }>;
const DELAY_MS = 1_500;

test.before(async (t) => {
  t.context.cluster = await startReplicatedCluster({
    replicas: 1,
    env: { gateway: { SHUTDOWN_DELAY_MS: String(DELAY_MS) } },
  });
});

test.after.always(async (t) => {
  await t.context.cluster?.stop();
});

/** Every line a process wrote is a JSON log record. */
function jsonLines(output: string): Array<{ level: string; msg: string; [k: string]: unknown }> {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

test.serial(
  'on SIGTERM the gateway answers /readyz 503 while it keeps serving, then closes and exits 0',
  async (t) => {
    const { cluster } = t.context;
    const gateway = cluster.replicas.find((r) => r.component === 'gateway');
    if (!gateway) throw new Error('no gateway');
    const url = cluster.urls[0] as string;
    t.is((await fetch(`${url}/readyz`)).status, 200);

    const sent = Date.now();
    gateway.process.child.kill('SIGTERM');
    const exited = gateway.process.exited;
    let readiness: Response | undefined;
    for (;;) {
      readiness = await fetch(`${url}/readyz`);
      if (readiness.status === 503) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    t.deepEqual(await readiness.json(), { status: 'not ready' });
    t.is(gateway.process.child.exitCode, null, 'readiness turned false before the gateway went');
    // Still serving: liveness holds, and API requests are answered, each closing its connection.
    t.is((await fetch(`${url}/healthz`)).status, 200);
    const api = await fetch(`${url}/admin/v1/orgs/00000000-0000-4000-8000-000000000000`, {
      headers: { authorization: `Bearer ${REPLICAS_OPERATOR_TOKEN}` },
    });
    t.is(api.status, 404);
    t.is(api.headers.get('connection'), 'close');

    // It went on its own, once the delay for the load balancers had passed.
    t.is(await exited, 0);
    t.true(Date.now() - sent >= DELAY_MS);
    await t.throwsAsync(fetch(`${url}/healthz`), undefined, 'the port is closed');

    const logs = jsonLines(gateway.process.output());
    t.true(logs.every((l) => typeof l.level === 'string' && typeof l.time === 'string'));
    t.like(
      logs.find((l) => l.msg === 'shutting down'),
      { level: 'info', signal: 'SIGTERM' },
    );
    await cluster.restart(gateway);
    t.is((await fetch(`${url}/readyz`)).status, 200);
  },
);

test.serial(
  'on SIGTERM every service reports NOT_SERVING over gRPC health, then exits 0 within the grace',
  async (t) => {
    const { cluster } = t.context;
    const services = cluster.replicas.filter((r) => r.component !== 'gateway');
    t.true(services.length >= 3);
    for (const replica of services) {
      const address = `127.0.0.1:${replica.port}`;
      const client = healthClient(address);
      const statuses: string[] = [];
      const watch = client.watch({ service: '' });
      watch.on('error', () => {});
      const notServing = new Promise<void>((resolve) => {
        watch.on('data', (res: { status: string }) => {
          statuses.push(res.status);
          if (res.status === 'NOT_SERVING') resolve();
        });
      });
      await eventually(
        async () => statuses.length,
        (n) => n > 0,
      );

      replica.process.child.kill('SIGTERM');
      await notServing;
      // Kubernetes probes with Check; an open Watch would hold the server until the grace ends.
      watch.cancel();
      client.close();
      // Exiting on its own, with nothing in flight, is what Kubernetes needs within the grace.
      t.is(await replica.process.exited, 0, replica.component);
      t.deepEqual(statuses, ['SERVING', 'NOT_SERVING'], replica.component);

      const logs = jsonLines(replica.process.output());
      t.like(
        logs.find((l) => l.msg === 'shutting down'),
        { signal: 'SIGTERM' },
      );
      await cluster.restart(replica);
      t.is(await healthStatus(address), 'SERVING', `${replica.component} is back`);
    }
  },
);

test.serial("the chart's helm test script passes against a running Spool", async (t) => {
  const { cluster } = t.context;
  const rendered = await helm([
    'template',
    'spool',
    CHART_DIR,
    '--show-only',
    'templates/tests/test-gateway.yaml',
  ]);
  t.is(rendered.code, 0, rendered.stderr);
  const pod = parseAllDocuments(rendered.stdout)[0]?.toJSON() as {
    spec: { containers: Array<{ command: string[]; args: string[] }> };
  };
  const [container] = pod.spec.containers;
  if (!container) throw new Error('no container');
  const [command, ...args] = [...container.command, ...container.args];
  const { stdout } = await exec(command === 'node' ? process.execPath : (command as string), args, {
    env: { SPOOL_URL: cluster.urls[0] as string, SPOOL_ADMIN_TOKEN: REPLICAS_OPERATOR_TOKEN },
  });
  t.regex(stdout, /the gateway is ready and reaches the accounts service/);
});

test('the liveness status stays SERVING when the server turns NOT_SERVING for a dependency', async (t) => {
  const server = await startGrpcServer({ host: '127.0.0.1', port: 0 });
  t.teardown(() => server.shutdown(100));
  const address = `127.0.0.1:${server.port}`;
  t.is(await healthStatus(address), 'SERVING');
  // What the services do while their database or NATS is down: readiness fails, liveness holds.
  server.health.setStatus('', 'NOT_SERVING');
  t.is(await healthStatus(address), 'NOT_SERVING');
  t.is(await healthStatus(address, LIVENESS_SERVICE), 'SERVING');
});

test('a call made while no replica is up waits for one within its deadline instead of failing', async (t) => {
  const Health = (
    loadPackageDefinition(loadSync(protoPath, { enums: String })) as unknown as {
      grpc: { health: { v1: { Health: typeof Client } } };
    }
  ).grpc.health.v1.Health;
  const port = await freePort();
  const client = createClient(Health, {
    service: 'accounts',
    address: `127.0.0.1:${port}`,
    deadlineMs: 5_000,
  }) as unknown as { check(req: { service: string }): Promise<{ status: string }>; close(): void };
  t.teardown(() => client.close());
  const started = Date.now();
  const answer = client.check({ service: '' });
  // The replica comes up while the call waits (as one does in a rolling update).
  await new Promise((r) => setTimeout(r, 700));
  const server = await startGrpcServer({ host: '127.0.0.1', port });
  t.teardown(() => server.shutdown(100));
  t.deepEqual(await answer, { status: 'SERVING' });
  t.true(Date.now() - started >= 700);
});
