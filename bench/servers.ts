/**
 * The servers a run measures, all on loopback: a private PostgreSQL (the tests' helper), a private
 * nats-server with JetStream (lib/nats-server.ts), a private Redis for the peer, and `spool dev`
 * pointed at the first two, so that Spool, the ceilings and the peer share one machine and Spool
 * and the ceilings share the same servers. With `--spool-url` the given ones are used instead.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import pg from 'pg';
import { createHealthClient } from '../lib/health-client.js';
import { startNatsServer } from '../lib/nats-server.js';
import { freePort } from '../test/helpers/ports.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { epochMs } from './clock.js';
import { type Deployment, startDeployment } from './deployment.js';
import type { Options } from './options.js';
import { enableStatements, PG_STATEMENTS_SETTINGS, writeStatements } from './pg-statements.js';
import { listeningPorts } from './proc.js';
import { startRedis } from './redis.js';
import { type SpoolProcess, spawnSpool } from './spool-process.js';
import { harnessDir, harnessSignalled, Stops } from './stops.js';

/**
 * The private PostgreSQL's own settings beyond the tests' helper's. Autovacuum looks at each
 * database every second rather than every minute: the runs are shorter than a minute, and with
 * the default the tables the run fills from empty were never analyzed while it measured, so that
 * statements prepared while they were small kept their plans for a small table (a sequential scan
 * of `jobs` per group of transitions, a little longer each run) and their dead rows were never
 * vacuumed. A deployment that has run for a while has its tables analyzed as they grow.
 */
const POSTGRES_SETTINGS = ['autovacuum_naptime=1s'];

export interface Servers {
  spoolUrl: string;
  linkAddress: string;
  adminToken: string;
  /** The database Spool uses. */
  databaseUrl: string;
  natsUrl: string;
  redis: { host: string; port: number };
  /** Processes to watch in /proc, when known. */
  spoolPid: number | undefined;
  natsPid: number | undefined;
  /** The private PostgreSQL's postmaster, whose backends are its children. */
  postgresPid: number | undefined;
  /** Settings of the private PostgreSQL that bear on the figures, for the record. */
  postgresSettings: string;
  /**
   * Starts a stations service of its own (`spool serve stations`) on the same database and NATS,
   * for the fleet; undefined when Spool was given (the fleet then uses its link).
   */
  startStations: (() => Promise<StationsProcess>) | undefined;
  /**
   * Starts a gateway of its own (`spool serve gateway`) in front of `spool dev`'s services, so
   * that its memory and CPU are the gateway's alone, with `env` beside the harness's own settings;
   * undefined when Spool was given.
   */
  startGateway: ((env?: Record<string, string>) => Promise<GatewayProcess>) | undefined;
  /**
   * Starts Spool as production runs it (bench/deployment.ts), on a fresh database of the same
   * PostgreSQL; undefined when Spool was given.
   */
  startDeployment: (() => Promise<Deployment>) | undefined;
  stop(): Promise<void>;
}

export interface GatewayProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

export interface StationsProcess {
  linkAddress: string;
  pid: number;
  /** When it was started (the harness clock): its links re-read their jobs every minute from then. */
  startedAt: number;
  stop(): Promise<void>;
}

async function createDatabase(serverUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
    await client.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'serializable'`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The jobs service's gRPC address in a `spool dev` process: its one other listening port. */
async function servicesAddress(pid: number, known: number[]): Promise<string> {
  const candidates = listeningPorts(pid).filter((p) => !known.includes(p));
  for (const port of candidates) {
    const health = createHealthClient(`127.0.0.1:${port}`);
    try {
      if ((await health.check('spool.v1.JobsService', 2_000)) === 'SERVING')
        return `127.0.0.1:${port}`;
    } finally {
      health.close();
    }
  }
  throw new Error(
    `no jobs service among the ports spool dev listens on (${candidates.join(', ')})`,
  );
}

function given(options: Options): Servers {
  return {
    spoolUrl: options.spoolUrl as string,
    linkAddress: options.linkAddress as string,
    adminToken: options.adminToken as string,
    databaseUrl: options.databaseUrl as string,
    natsUrl: options.natsUrl as string,
    redis: options.redis as { host: string; port: number },
    spoolPid: options.spoolPid,
    natsPid: options.natsPid,
    postgresPid: undefined,
    postgresSettings: 'as given',
    startStations: undefined,
    startGateway: undefined,
    startDeployment: undefined,
    async stop() {},
  };
}

export async function startServers(
  options: Options,
  log: (line: string) => void,
): Promise<Servers> {
  const stops = new Stops();
  const stopAll = () => stops.run();
  try {
    let redis = options.redis;
    if (!redis) {
      const server = await startRedis();
      stops.push(() => server.stop());
      redis = { host: server.host, port: server.port };
      log(`redis-server ${server.version} on ${server.port} (appendonly, appendfsync always)`);
    }
    if (options.spoolUrl) {
      const servers = given({ ...options, redis });
      servers.stop = stopAll;
      return servers;
    }

    const natsStore = await harnessDir('spool-bench-nats-');
    stops.push(natsStore.remove);
    const postgres = await startPostgres({
      durable: true,
      settings: [...POSTGRES_SETTINGS, ...(options.pgStatements ? PG_STATEMENTS_SETTINGS : [])],
    });
    stops.push(() => postgres.stop());
    const nats = await startNatsServer({ storeDir: natsStore.path });
    stops.push(() => nats.stop());
    const databaseUrl = await createDatabase(postgres.url, 'spool_bench');
    log(`PostgreSQL on ${postgres.port}, nats-server on ${nats.port}`);
    const pgStatements = options.pgStatements;
    if (pgStatements) {
      await enableStatements(databaseUrl);
      stops.push(async () => {
        try {
          await writeStatements(databaseUrl, resolve(pgStatements));
          log(`PostgreSQL's statements written to ${pgStatements}`);
        } catch (err) {
          log(`could not write PostgreSQL's statements: ${(err as Error).message}`);
        }
      });
    }

    // Spool's processes write a CPU profile there when they exit.
    const profiling = { cpuProfDir: options.cpuProf ? resolve(options.cpuProf) : undefined };
    const dataDir = await harnessDir('spool-bench-dev-');
    stops.push(dataDir.remove);
    const [port, stationPort] = [await freePort(), await freePort()];
    const adminToken = `spool_op_bench_${randomBytes(16).toString('hex')}`;
    const spool: SpoolProcess = spawnSpool(
      ['dev'],
      {
        DATABASE_URL: databaseUrl,
        NATS_URL: nats.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        STATION_PORT: String(stationPort),
        SPOOL_DATA_DIR: dataDir.path,
        SPOOL_ADMIN_TOKEN: adminToken,
        // The load is one API key: the per-key limit (100 a second) would measure only itself.
        KEY_RATE_LIMIT: '0',
        LOG_LEVEL: process.env.SPOOL_BENCH_LOG_LEVEL ?? 'warn',
      },
      profiling,
    );
    let stopping = false;
    stops.push(async () => {
      stopping = true;
      await spool.stop();
    });
    // Every scenario after it would fail on refused connections: say why it went.
    void spool.exited.then((code) => {
      if (!stopping && !harnessSignalled())
        log(`spool dev exited (${code}); its last output:\n${spool.output().slice(-4096)}`);
    });
    const [, spoolUrl] = await spool.waitFor(/Spool is running at (\S+)/, 120_000);
    const spoolPid = spool.pid;
    const jobsAddr = await servicesAddress(spoolPid, [port, stationPort]);
    log(`spool dev at ${spoolUrl} (pid ${spoolPid}), services at ${jobsAddr}`);

    return {
      spoolUrl: spoolUrl as string,
      linkAddress: `127.0.0.1:${stationPort}`,
      adminToken,
      databaseUrl,
      natsUrl: nats.url,
      redis,
      spoolPid,
      natsPid: nats.pid,
      postgresPid: postgres.pid,
      postgresSettings:
        'private cluster from test/helpers/postgres.ts: durable (fsync, synchronous_commit and full_page_writes on), default isolation SERIALIZABLE, autovacuum_naptime 1 s',
      startStations: async () => {
        const [grpcPort, linkPort] = [await freePort(), await freePort()];
        const startedAt = epochMs();
        const stations = spawnSpool(
          ['serve', 'stations'],
          {
            DATABASE_URL: databaseUrl,
            NATS_URL: nats.url,
            GRPC_HOST: '127.0.0.1',
            GRPC_PORT: String(grpcPort),
            STATION_HOST: '127.0.0.1',
            STATION_PORT: String(linkPort),
            JOBS_ADDR: jobsAddr,
            LOG_LEVEL: 'info',
          },
          profiling,
        );
        try {
          await stations.waitFor(/serving gRPC/, 60_000);
        } catch (err) {
          await stations.stop();
          throw err;
        }
        return {
          linkAddress: `127.0.0.1:${linkPort}`,
          pid: stations.pid,
          startedAt,
          async stop() {
            await stations.stop();
          },
        };
      },
      startGateway: async (env = {}) => {
        const gatewayPort = await freePort();
        const gateway = spawnSpool(
          ['serve', 'gateway'],
          {
            NATS_URL: nats.url,
            HOST: '127.0.0.1',
            PORT: String(gatewayPort),
            ACCOUNTS_ADDR: jobsAddr,
            JOBS_ADDR: jobsAddr,
            STATIONS_ADDR: jobsAddr,
            WEBHOOKS_ADDR: jobsAddr,
            SPOOL_ADMIN_TOKEN: adminToken,
            KEY_RATE_LIMIT: '0',
            LOG_LEVEL: 'info',
            ...env,
          },
          profiling,
        );
        try {
          await gateway.waitFor(/gateway listening/, 60_000);
        } catch (err) {
          await gateway.stop();
          throw err;
        }
        return {
          url: `http://127.0.0.1:${gatewayPort}`,
          pid: gateway.pid,
          async stop() {
            await gateway.stop();
          },
        };
      },
      startDeployment: () =>
        startDeployment({
          createDatabase: () => createDatabase(postgres.url, 'spool_bench_production'),
          cpuProfDir: profiling.cpuProfDir,
        }),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
