/**
 * Spool as Kubernetes runs it, on this machine: every component `spool serve` processes with
 * several replicas each, on a private database and nats-server. Callers reach a service's replicas
 * through one gRPC target listing them all (`ipv4:127.0.0.1:a,127.0.0.1:b`, as `dns:///` names
 * a headless Service in the chart), and agents get every replica's station link. Replicas restart
 * one at a time, on the same ports, as a rolling update does.
 */
import { credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath } from 'grpc-health-check';
import { COMPONENTS } from '../../cli/components.js';
import { startTestNats, type TestNats } from './nats.js';
import { freePort } from './ports.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';
import { runSpool, type SpoolProcess, spawnSpool } from './spool.js';

export const REPLICAS_OPERATOR_TOKEN = 'replicas-operator-token';

type Component = (typeof COMPONENTS)[number];

export interface Replica {
  component: Component;
  index: number;
  /** The running process; replaced by {@link ReplicatedCluster.restart}. */
  process: SpoolProcess;
  /** gRPC port (services), HTTP port (gateway). */
  port: number;
  /** The station link's port (stations). */
  linkPort?: number;
  /** Exit codes of the processes this replica ran before the current one. */
  exits: Array<number | null>;
}

export interface ReplicatedCluster {
  db: TestDatabase;
  nats: TestNats;
  /** Every replica, services first and the gateways last. */
  replicas: Replica[];
  /** The gateways' base URLs. */
  urls: string[];
  /** Every stations replica's link address, comma separated, as `spool agent --server` takes it. */
  linkServers: string;
  /** SIGTERMs a replica, waits for it to exit, starts it again and waits until it is ready. */
  restart(replica: Replica): Promise<number | null>;
  /**
   * Starts a replica whose process has exited (recording its exit code), on the same ports, and
   * waits until it is ready: what Kubernetes does for a container that died.
   */
  respawn(replica: Replica): Promise<void>;
  stop(): Promise<void>;
}

export interface ReplicatedOptions {
  replicas: number;
  /** More environment for every process of a component. */
  env?: Partial<Record<Component, Record<string, string>>>;
  /**
   * A database and a nats-server of the caller's (one it can stop and start, say); the cluster
   * then neither creates nor removes them. By default it makes its own.
   */
  external?: { databaseUrl: string; nats: TestNats };
}

const SERVICES = COMPONENTS.filter((c): c is Exclude<Component, 'gateway'> => c !== 'gateway');

export async function startReplicatedCluster(
  options: ReplicatedOptions,
): Promise<ReplicatedCluster> {
  const [db, nats] = options.external
    ? [{ url: options.external.databaseUrl, name: '', drop: async () => {} }, options.external.nats]
    : await Promise.all([createTestDatabase(), startTestNats()]);
  const ownNats = options.external === undefined;
  const migrated = await runSpool(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
  if (migrated.code !== 0) throw new Error(`spool migrate failed: ${migrated.stderr}`);

  const replicas: Replica[] = [];
  for (const component of [...SERVICES, 'gateway' as const]) {
    for (let index = 0; index < options.replicas; index += 1) {
      replicas.push({
        component,
        index,
        port: await freePort(),
        ...(component === 'stations' ? { linkPort: await freePort() } : {}),
        process: undefined as unknown as SpoolProcess,
        exits: [],
      });
    }
  }
  const target = (component: Component) =>
    `ipv4:${replicas
      .filter((r) => r.component === component)
      .map((r) => `127.0.0.1:${r.port}`)
      .join(',')}`;
  // Every address and every secret goes to every process; each reads what it needs (as in the chart).
  const common: Record<string, string> = {
    NATS_URL: nats.url,
    LOG_LEVEL: 'info',
    SHUTDOWN_GRACE_MS: '5000',
    ...Object.fromEntries(SERVICES.map((s) => [`${s.toUpperCase()}_ADDR`, target(s)])),
  };
  const envOf = (replica: Replica): Record<string, string> => {
    const own = options.env?.[replica.component] ?? {};
    if (replica.component === 'gateway') {
      return {
        ...common,
        HOST: '127.0.0.1',
        PORT: String(replica.port),
        SPOOL_ADMIN_TOKEN: REPLICAS_OPERATOR_TOKEN,
        ...own,
      };
    }
    return {
      ...common,
      DATABASE_URL: db.url,
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(replica.port),
      STATION_HOST: '127.0.0.1',
      STATION_PORT: String(replica.linkPort ?? 0),
      WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      SPOOL_WEBHOOKS_ALLOW_INSECURE: '1',
      ...own,
    };
  };
  const start = async (replica: Replica) => {
    replica.process = spawnSpool(['serve', replica.component], envOf(replica));
    await waitReady(replica);
  };

  try {
    await Promise.all(replicas.filter((r) => r.component !== 'gateway').map(start));
    await Promise.all(replicas.filter((r) => r.component === 'gateway').map(start));
  } catch (error) {
    await Promise.all(replicas.map((r) => r.process?.stop()));
    await Promise.all([ownNats ? nats.stop() : undefined, db.drop()]);
    throw error;
  }

  return {
    db,
    nats,
    replicas,
    urls: replicas.filter((r) => r.component === 'gateway').map((r) => gatewayUrl(r)),
    linkServers: replicas
      .filter((r) => r.component === 'stations')
      .map((r) => `127.0.0.1:${r.linkPort}`)
      .join(','),
    async restart(replica) {
      const code = await replica.process.stop();
      replica.exits.push(code);
      await start(replica);
      return code;
    },
    async respawn(replica) {
      replica.exits.push(await replica.process.exited);
      await start(replica);
    },
    async stop() {
      // Gateways first, so nothing calls a service that is gone.
      const gateways = replicas.filter((r) => r.component === 'gateway');
      await Promise.all(gateways.map((r) => r.process.stop()));
      await Promise.all(replicas.filter((r) => !gateways.includes(r)).map((r) => r.process.stop()));
      if (ownNats) await nats.stop();
      await db.drop();
    },
  };
}

function gatewayUrl(replica: Replica): string {
  return `http://127.0.0.1:${replica.port}`;
}

/**
 * Ready as Kubernetes would see it: /readyz answers 200, or gRPC health answers SERVING. A process
 * starts in a few seconds alone, and in tens beside a whole test run on two busy cores.
 */
async function waitReady(replica: Replica, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await replica.process.waitFor(
    replica.component === 'gateway' ? /gateway listening/ : /serving gRPC/,
    timeoutMs,
  );
  for (;;) {
    const ready =
      replica.component === 'gateway'
        ? await fetch(`${gatewayUrl(replica)}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          )
        : (await healthStatus(`127.0.0.1:${replica.port}`).catch(() => 'DOWN')) === 'SERVING';
    if (ready) return;
    if (Date.now() > deadline) {
      throw new Error(`${replica.component} #${replica.index} is not ready in ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface HealthClient {
  check(
    request: { service: string },
    options: { deadline: number },
    callback: (err: Error | null, res: { status: string }) => void,
  ): void;
  watch(request: { service: string }): NodeJS.EventEmitter & { cancel(): void };
  close(): void;
}

let healthCtor: (new (address: string, creds: unknown) => HealthClient) | undefined;

/** A client of the standard `grpc.health.v1.Health` service. */
export function healthClient(address: string): HealthClient {
  healthCtor ??= (
    loadPackageDefinition(loadSync(protoPath, { enums: String })) as unknown as {
      grpc: { health: { v1: { Health: new (address: string, creds: unknown) => HealthClient } } };
    }
  ).grpc.health.v1.Health;
  return new healthCtor(address, credentials.createInsecure());
}

/** One health check of the whole server (service ""), as a Kubernetes gRPC probe makes. */
export function healthStatus(address: string, service = ''): Promise<string> {
  const client = healthClient(address);
  return new Promise<string>((resolve, reject) => {
    client.check({ service }, { deadline: Date.now() + 1_000 }, (err, res) =>
      err ? reject(err) : resolve(res.status),
    );
  }).finally(() => client.close());
}
