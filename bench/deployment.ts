/**
 * Spool deployed as in production, on this machine: each component its own `spool serve`
 * process (gateway, accounts, two jobs replicas, stations, webhooks), wired together by the
 * variables docs/deploy.md names, on a fresh database migrated by `spool migrate` and on a
 * nats-server of its own. The nats-server cannot be `spool dev`'s: every Spool's services share
 * durable consumers by name (`jobs-reports`, `webhooks-fanout`), so `spool dev` would take half
 * of this deployment's reports and events and drop them as unknown.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { createHealthClient } from '../lib/health-client.js';
import { startNatsServer } from '../lib/nats-server.js';
import { freePort } from '../test/helpers/ports.js';
import { epochMs, sleep } from './clock.js';
import { type SpoolProcess, spawnSpool } from './spool-process.js';
import { harnessDir, Stops } from './stops.js';

/** The processes of a deployment, in the order they start; jobs twice, as replicas. */
export const DEPLOYED = ['accounts', 'jobs', 'jobs', 'stations', 'webhooks', 'gateway'] as const;
type Component = (typeof DEPLOYED)[number];

/** The gRPC service each component's health answers for. */
const SERVICE: Record<Exclude<Component, 'gateway'>, string> = {
  accounts: 'spool.v1.AccountsService',
  jobs: 'spool.v1.JobsService',
  stations: 'spool.v1.StationsService',
  webhooks: 'spool.v1.WebhooksService',
};

// Five Node processes starting at once on a busy two-core machine take a while.
const READY_TIMEOUT_MS = 300_000;
/** Time each process has to drain after SIGTERM before it is killed (and the harness says so). */
const STOP_GRACE_MS = 15_000;

export interface DeployedProcess {
  /** `gateway`, `accounts`, `jobs 1`, `jobs 2`, `stations`, `webhooks`. */
  name: string;
  pid: number;
}

export interface Deployment {
  url: string;
  linkAddress: string;
  adminToken: string;
  databaseUrl: string;
  natsUrl: string;
  natsPid: number;
  processes: DeployedProcess[];
  /** Stops the gateway, then the services, then the nats-server. */
  stop(): Promise<void>;
}

async function serviceReady(address: string, service: string): Promise<boolean> {
  const health = createHealthClient(address);
  try {
    return (await health.check(service, 1_000)) === 'SERVING';
  } finally {
    health.close();
  }
}

async function gatewayReady(url: string): Promise<boolean> {
  return fetch(`${url}/readyz`).then(
    (res) => res.status === 200,
    () => false,
  );
}

/** Whether something accepts TCP connections on the loopback `port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Waits until `ready` says so: health rather than a log line, since the processes log at warn.
 * Rejects with the process's output if it exits first or is not ready in time.
 */
async function waitReady(
  name: string,
  spool: SpoolProcess,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = epochMs() + READY_TIMEOUT_MS;
  let exited = false;
  void spool.exited.then(() => {
    exited = true;
  });
  while (!(await ready())) {
    if (exited || epochMs() > deadline) {
      throw new Error(
        `spool serve ${name} ${exited ? 'exited' : `not ready in ${READY_TIMEOUT_MS} ms`}; its output:\n${spool.output()}`,
      );
    }
    await sleep(100);
  }
}

export async function startDeployment(options: {
  /** Creates the fresh database; resolves its URL. */
  createDatabase: () => Promise<string>;
  cpuProfDir: string | undefined;
}): Promise<Deployment> {
  const stops = new Stops();
  const stopAll = () => stops.run();
  try {
    const natsStore = await harnessDir('spool-bench-production-nats-');
    stops.push(natsStore.remove);
    const [databaseUrl, nats] = await Promise.all([
      options.createDatabase(),
      startNatsServer({ storeDir: natsStore.path }),
    ]);
    stops.push(() => nats.stop());

    const migrate = spawnSpool(['migrate'], { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' });
    if ((await migrate.exited) !== 0) {
      throw new Error(`spool migrate failed; its output:\n${migrate.output()}`);
    }

    const grpcPorts: number[] = [];
    for (const _ of DEPLOYED) grpcPorts.push(await freePort());
    const [httpPort, linkPort] = [await freePort(), await freePort()];
    const target = (component: Component) =>
      `ipv4:${DEPLOYED.flatMap((c, i) => (c === component ? [`127.0.0.1:${grpcPorts[i]}`] : [])).join(',')}`;
    const adminToken = `spool_op_bench_${randomBytes(16).toString('hex')}`;
    // One environment for all six; each reads what it needs. Every process gets every service's
    // address, as the Helm chart gives them.
    const common: Record<string, string> = {
      DATABASE_URL: databaseUrl,
      NATS_URL: nats.url,
      ACCOUNTS_ADDR: target('accounts'),
      JOBS_ADDR: target('jobs'),
      STATIONS_ADDR: target('stations'),
      WEBHOOKS_ADDR: target('webhooks'),
      GRPC_HOST: '127.0.0.1',
      STATION_HOST: '127.0.0.1',
      STATION_PORT: String(linkPort),
      HOST: '127.0.0.1',
      PORT: String(httpPort),
      SPOOL_ADMIN_TOKEN: adminToken,
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      // The receivers are plain http:// on loopback.
      SPOOL_WEBHOOKS_ALLOW_INSECURE: '1',
      // The load is one API key: the per-key limit (100 a second) would measure only itself.
      KEY_RATE_LIMIT: '0',
      // As `spool dev` runs here: at info the gateway logs every request, which costs CPU.
      LOG_LEVEL: process.env.SPOOL_BENCH_LOG_LEVEL ?? 'warn',
    };
    const started: Array<{ component: Component; name: string; process: SpoolProcess }> = [];
    stops.push(async () => {
      // As a rolling stop would: no new requests first, then the services drain.
      const stopping = (gateway: boolean) =>
        started
          .filter((s) => (s.component === 'gateway') === gateway)
          .map((s) => s.process.stop(STOP_GRACE_MS));
      await Promise.all(stopping(true));
      await Promise.all(stopping(false));
    });
    const start = async (component: Component, index: number) => {
      const replicas = DEPLOYED.filter((c) => c === component).length;
      const nth = DEPLOYED.slice(0, index + 1).filter((c) => c === component).length;
      const name = replicas > 1 ? `${component} ${nth}` : component;
      const spool = spawnSpool(
        ['serve', component],
        { ...common, GRPC_PORT: String(grpcPorts[index]) },
        { cpuProfDir: options.cpuProfDir },
      );
      started.push({ component, name, process: spool });
      const ready =
        component === 'gateway'
          ? () => gatewayReady(`http://127.0.0.1:${httpPort}`)
          : () =>
              serviceReady(`127.0.0.1:${grpcPorts[index]}`, SERVICE[component]).then(
                async (ok) => ok && (component !== 'stations' || (await accepts(linkPort))),
              );
      await waitReady(name, spool, ready);
    };
    // The services first, then the gateway in front of them, as the tests' clusters start.
    await Promise.all(DEPLOYED.map((c, i) => (c === 'gateway' ? undefined : start(c, i))));
    await start('gateway', DEPLOYED.indexOf('gateway'));

    const gatewayFirst = [
      ...started.filter((s) => s.component === 'gateway'),
      ...started.filter((s) => s.component !== 'gateway'),
    ];
    return {
      url: `http://127.0.0.1:${httpPort}`,
      linkAddress: `127.0.0.1:${linkPort}`,
      adminToken,
      databaseUrl,
      natsUrl: nats.url,
      natsPid: nats.pid,
      processes: gatewayFirst.map((s) => ({ name: s.name, pid: s.process.pid })),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
