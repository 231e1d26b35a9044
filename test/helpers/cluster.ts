/**
 * Spool as an operator runs it: every component its own `spool serve` process, on a private
 * database and nats-server. Fault tests kill and restart components one at a time.
 */
import { startTestNats, type TestNats } from './nats.js';
import { freePort } from './ports.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';
import { runSpool, type SpoolProcess, spawnSpool } from './spool.js';

export const CLUSTER_OPERATOR_TOKEN = 'cluster-operator-token';

type Component = 'accounts' | 'jobs' | 'stations' | 'webhooks' | 'gateway';

/** The key the cluster's webhooks service encrypts secrets under. */
export const CLUSTER_WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');

/** What the cluster needs of its NATS: where it is, and how to stop it with the cluster. */
interface ClusterNats {
  url: string;
  stop(): Promise<void>;
}

export interface Cluster<N extends ClusterNats = TestNats> {
  db: TestDatabase;
  nats: N;
  /** The gateway's base URL. */
  url: string;
  /** Where agents connect. */
  linkAddress: string;
  processes: Map<Component, SpoolProcess>;
  /** Where each component serves its Prometheus metrics. */
  metricsUrls: Record<Component, string>;
  /** Starts (or starts again, on the same ports) one component and waits until it serves. */
  start(component: Component): Promise<SpoolProcess>;
  /** Starts another stations-service replica on ports of its own; resolves its link address. */
  startStationsReplica(): Promise<{ process: SpoolProcess; linkAddress: string }>;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 90_000;

const READY: Record<Component, RegExp> = {
  accounts: /accounts serving gRPC/,
  jobs: /jobs serving gRPC/,
  stations: /stations serving gRPC/,
  webhooks: /webhooks serving gRPC/,
  gateway: /gateway listening/,
};

export interface ClusterOptions<N extends ClusterNats = TestNats> {
  /** Starts the NATS the cluster runs on (default: one private nats-server). */
  nats?: () => Promise<N>;
  /**
   * How long each component may take to start serving (default 90 s: a test that starts three
   * clusters at once, beside other test files, starts fifteen processes on two cores).
   */
  readyTimeoutMs?: number;
  /** Extra environment of the webhooks service, such as a short WEBHOOK_RETRY_WAITS. */
  webhooksEnv?: Record<string, string>;
  /** Extra environment of every component, such as OTEL_* variables. */
  env?: Record<string, string>;
}

export async function startCluster<N extends ClusterNats = TestNats>(
  options: ClusterOptions<N> = {},
): Promise<Cluster<N>> {
  const startNats = options.nats ?? (startTestNats as unknown as () => Promise<N>);
  const [db, nats] = await Promise.all([createTestDatabase(), startNats()]);
  const migrated = await runSpool(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
  if (migrated.code !== 0) throw new Error(`spool migrate failed: ${migrated.stderr}`);
  const ports = {
    accounts: await freePort(),
    jobs: await freePort(),
    stations: await freePort(),
    webhooks: await freePort(),
    link: await freePort(),
    http: await freePort(),
  };
  const metricsPorts = {
    gateway: await freePort(),
    accounts: await freePort(),
    jobs: await freePort(),
    stations: await freePort(),
    webhooks: await freePort(),
  };
  const common = {
    NATS_URL: nats.url,
    GRPC_HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...options.env,
  };
  const env: Record<Component, Record<string, string>> = {
    accounts: {
      ...common,
      DATABASE_URL: db.url,
      GRPC_PORT: String(ports.accounts),
      METRICS_PORT: String(metricsPorts.accounts),
    },
    jobs: {
      ...common,
      DATABASE_URL: db.url,
      GRPC_PORT: String(ports.jobs),
      METRICS_PORT: String(metricsPorts.jobs),
      STATIONS_ADDR: `127.0.0.1:${ports.stations}`,
      ACCOUNTS_ADDR: `127.0.0.1:${ports.accounts}`,
    },
    stations: {
      ...common,
      DATABASE_URL: db.url,
      GRPC_PORT: String(ports.stations),
      METRICS_PORT: String(metricsPorts.stations),
      STATION_HOST: '127.0.0.1',
      STATION_PORT: String(ports.link),
      JOBS_ADDR: `127.0.0.1:${ports.jobs}`,
    },
    webhooks: {
      ...common,
      DATABASE_URL: db.url,
      GRPC_PORT: String(ports.webhooks),
      METRICS_PORT: String(metricsPorts.webhooks),
      WEBHOOK_SECRET_KEY: CLUSTER_WEBHOOK_SECRET_KEY,
      ACCOUNTS_ADDR: `127.0.0.1:${ports.accounts}`,
      // Test receivers listen on loopback over http.
      SPOOL_WEBHOOKS_ALLOW_INSECURE: '1',
      ...options.webhooksEnv,
    },
    gateway: {
      ...options.env,
      NATS_URL: nats.url,
      HOST: '127.0.0.1',
      PORT: String(ports.http),
      METRICS_PORT: String(metricsPorts.gateway),
      ACCOUNTS_ADDR: `127.0.0.1:${ports.accounts}`,
      JOBS_ADDR: `127.0.0.1:${ports.jobs}`,
      STATIONS_ADDR: `127.0.0.1:${ports.stations}`,
      WEBHOOKS_ADDR: `127.0.0.1:${ports.webhooks}`,
      SPOOL_ADMIN_TOKEN: CLUSTER_OPERATOR_TOKEN,
    },
  };
  const processes = new Map<Component, SpoolProcess>();
  const extras: SpoolProcess[] = [];
  const start = async (component: Component) => {
    const proc = spawnSpool(['serve', component], env[component]);
    processes.set(component, proc);
    await proc.waitFor(READY[component], options.readyTimeoutMs ?? READY_TIMEOUT_MS);
    return proc;
  };
  try {
    await Promise.all((['accounts', 'jobs', 'stations', 'webhooks'] as const).map(start));
    await start('gateway');
  } catch (err) {
    // Leave nothing running behind a cluster that did not start.
    await Promise.all([...processes.values()].map((p) => p.stop()));
    await nats.stop();
    await db.drop();
    throw err;
  }
  return {
    db,
    nats,
    url: `http://127.0.0.1:${ports.http}`,
    linkAddress: `127.0.0.1:${ports.link}`,
    processes,
    metricsUrls: {
      gateway: `http://127.0.0.1:${metricsPorts.gateway}/metrics`,
      accounts: `http://127.0.0.1:${metricsPorts.accounts}/metrics`,
      jobs: `http://127.0.0.1:${metricsPorts.jobs}/metrics`,
      stations: `http://127.0.0.1:${metricsPorts.stations}/metrics`,
      webhooks: `http://127.0.0.1:${metricsPorts.webhooks}/metrics`,
    },
    start,
    async startStationsReplica() {
      const link = await freePort();
      const proc = spawnSpool(['serve', 'stations'], {
        ...env.stations,
        GRPC_PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
        STATION_PORT: String(link),
      });
      extras.push(proc);
      await proc.waitFor(READY.stations, options.readyTimeoutMs ?? READY_TIMEOUT_MS);
      return { process: proc, linkAddress: `127.0.0.1:${link}` };
    },
    async stop() {
      await Promise.all([...processes.values(), ...extras].map((p) => p.stop()));
      await nats.stop();
      await db.drop();
    },
  };
}
