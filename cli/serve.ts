/**
 * `spool serve <component>` and `spool migrate`: one deployable per process, configured from the
 * environment, draining on SIGTERM.
 */

import { closeBackends, connectBackends } from '../gateway/clients.js';
import { createGateway } from '../gateway/index.js';
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { StationsServiceClient } from '../gen/spool/v1/stations.js';
import {
  type BusLayout,
  closeBus,
  connectBus,
  ensureStreams,
  type NatsConnection,
} from '../lib/bus.js';
import { systemClock } from '../lib/clock.js';
import { type Env, readConfig } from '../lib/config.js';
import { createPool, type Pool } from '../lib/db.js';
import {
  createClient,
  type GrpcServerHandle,
  type GrpcService,
  startGrpcServer,
} from '../lib/grpc.js';
import { createHealthClient } from '../lib/health-client.js';
import { watchHealth } from '../lib/health-watch.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { migrate, pendingMigrations } from '../lib/migrate.js';
import { serverKeysFrom } from '../lib/sealing.js';
import { serveMetrics, telemetry } from '../lib/telemetry.js';
import { isTransient } from '../lib/transient.js';
import { spoolVersion } from '../lib/version.js';
import { createAccounts } from '../services/accounts/index.js';
import { createJobs } from '../services/jobs/index.js';
import { createStations, startLinkServer } from '../services/stations/index.js';
import { createWebhooks, type WebhooksSettings } from '../services/webhooks/index.js';
import type { Component } from './components.js';
import {
  accountsConfig,
  busLayoutOf,
  gatewayConfig,
  jobsConfig,
  migrateConfig,
  stationsConfig,
  streamLimitsOf,
  webhooksConfig,
} from './config.js';
import { checkPortsFree, type PlannedListener } from './ports.js';
import { onShutdown } from './shutdown.js';
import { ALL_MIGRATIONS } from './system.js';

export async function runMigrate(env: Env): Promise<void> {
  const config = readConfig(env, migrateConfig);
  const logger = createLogger({ name: 'migrate', level: config.logLevel });
  const pool = createPool({ url: config.databaseUrl, max: 1, applicationName: 'spool-migrate' });
  try {
    const applied = await migrate(pool, ALL_MIGRATIONS, logger);
    logger.info({ applied: applied.length }, 'migrations up to date');
  } finally {
    await pool.end();
  }
}

/** Throws when migrations are `pending`: the database's schema is behind this version of Spool. */
function refuseBehind(pending: string[]): void {
  if (pending.length > 0) {
    throw new Error(
      `the database's schema is behind this version of Spool (${pending.length} migrations not applied, ${pending[0]} first): run spool migrate (the chart's migration Job) against DATABASE_URL, then start again`,
    );
  }
}

/**
 * Refuses to start on a database whose schema is behind this version (never migrated, or an
 * upgrade whose migration did not run): every query would fail with "relation does not exist"
 * while health said SERVING. A database that cannot be reached now is not checked here: the
 * service starts, NOT_SERVING, and waits for it, as in any outage; answers whether it was checked.
 */
async function requireSchema(pool: Pool, logger: Logger): Promise<boolean> {
  let pending: string[];
  try {
    pending = await pendingMigrations(pool, ALL_MIGRATIONS);
  } catch (err) {
    if (!isTransient(err)) {
      // A certificate the database's TLS is not trusted with, a password refused: name which
      // server it is, as the driver's own message does not.
      throw new Error(`cannot use the database (DATABASE_URL): ${(err as Error).message}`, {
        cause: err,
      });
    }
    logger.warn(
      { err },
      'the database cannot be reached; not serving until it answers and its schema is checked',
    );
    return false;
  }
  refuseBehind(pending);
  return true;
}

/** What every service's process shares: configuration read, the connections made. */
interface ServiceConfig {
  logLevel: string;
  shutdownGraceMs: number;
  databaseUrl: string;
  natsUrl: string;
  natsCreds: string | undefined;
  natsReplicas: number;
  region: string;
  regions: string[] | undefined;
  grpcHost: string;
  grpcPort: number;
  metricsPort: number;
}

interface ServicePart {
  grpc: GrpcService;
  /** Runs once the gRPC server is up (another listener, say); what it returns is logged. */
  afterStart?(): Promise<Record<string, unknown>>;
  /** Runs first on SIGTERM, before the gRPC server drains. */
  beforeShutdown?(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs one service as its own process: opens the pool and the NATS connection, builds the part,
 * serves it over gRPC with health that follows the database and NATS, and drains on SIGTERM.
 */
async function serveService(
  name: string,
  config: ServiceConfig,
  build: (deps: {
    pool: Pool;
    nc: NatsConnection;
    logger: Logger;
    layout: BusLayout;
  }) => Promise<ServicePart>,
  /** The service's other listeners (the stations' link), checked with its own. */
  listeners: PlannedListener[] = [],
): Promise<void> {
  const layout = busLayoutOf(config);
  await checkPortsFree([
    { host: config.grpcHost, port: config.grpcPort, variable: 'GRPC_PORT' },
    { host: config.grpcHost, port: config.metricsPort, variable: 'METRICS_PORT' },
    ...listeners,
  ]);
  const logger = createLogger({ name, level: config.logLevel });
  const pool = createPool({ url: config.databaseUrl, applicationName: `spool-${name}` });
  const schemaChecked = await requireSchema(pool, logger);
  const nc = await connectBus({
    url: config.natsUrl,
    credsFile: config.natsCreds,
    name: `spool-${name}`,
    logger,
  });
  await ensureStreams(nc, layout);
  const part = await build({ pool, nc, logger, layout });
  const grpc = await startGrpcServer({
    host: config.grpcHost,
    port: config.grpcPort,
    services: [part.grpc],
    // Not SERVING until the watch has heard from the database: one away at start must not be
    // reported ready meanwhile.
    serving: false,
  });
  const stopWatch = watchHealth({
    health: grpc.health,
    services: [part.grpc.name],
    pool,
    nc,
    logger,
    ...(schemaChecked
      ? {}
      : { gate: async () => refuseBehind(await pendingMigrations(pool, ALL_MIGRATIONS)) }),
  });
  const extra = (await part.afterStart?.()) ?? {};
  const metricsServer = await serveMetrics(config.grpcHost, config.metricsPort);
  logger.info(
    {
      version: spoolVersion(),
      port: grpc.port,
      ...extra,
      ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
    },
    `${name} serving gRPC`,
  );
  onShutdown(logger, async () => {
    stopWatch();
    await part.beforeShutdown?.();
    await grpc.shutdown(config.shutdownGraceMs);
    await part.stop();
    await closeBus(nc);
    await pool.end();
    metricsServer?.server.close();
    await telemetry().shutdown();
  });
}

async function serveAccounts(env: Env): Promise<void> {
  const config = readConfig(env, accountsConfig);
  await serveService('accounts', config, async ({ pool, nc, logger }) =>
    createAccounts({ pool, nc, logger, clock: systemClock }),
  );
}

async function serveGateway(env: Env): Promise<void> {
  const config = readConfig(env, gatewayConfig);
  await checkPortsFree([
    { host: config.host, port: config.port, variable: 'PORT' },
    { host: config.host, port: config.metricsPort, variable: 'METRICS_PORT' },
  ]);
  const layout = busLayoutOf(config);
  const logger = createLogger({ name: 'gateway', level: config.logLevel });
  const nc = await connectBus({
    url: config.natsUrl,
    credsFile: config.natsCreds,
    name: 'spool-gateway',
    logger,
  });
  const backends = connectBackends(
    {
      accounts: config.accountsAddr,
      jobs: config.jobsAddr,
      stations: config.stationsAddr,
      webhooks: config.webhooksAddr,
    },
    config.grpcDeadlineMs,
  );
  const health = {
    accounts: createHealthClient(config.accountsAddr),
    jobs: createHealthClient(config.jobsAddr),
    stations: createHealthClient(config.stationsAddr),
    webhooks: createHealthClient(config.webhooksAddr),
  };
  const gateway = createGateway({
    nc,
    layout,
    backends,
    health,
    publicRateLimit: config.publicRateLimit,
    keyRateLimit: config.keyRateLimit,
    eventStreams: streamLimitsOf(config),
    logger,
    clock: systemClock,
    // While a rotation is under way, the token being replaced is accepted too.
    operatorToken: config.adminTokenPrevious
      ? [config.adminToken, config.adminTokenPrevious]
      : config.adminToken,
    bodyLimit: config.bodyLimit,
    maxDocumentBytes: config.maxDocumentBytes,
    trustProxy: config.trustProxy,
    keyCacheTtlMs: config.keyCacheTtlMs,
    publicUrl: config.publicUrl,
  });
  const port = await gateway.listen(config.host, config.port);
  const metricsServer = await serveMetrics(config.host, config.metricsPort);
  logger.info(
    {
      version: spoolVersion(),
      port,
      ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
    },
    'gateway listening',
  );
  onShutdown(logger, async () => {
    await gateway.close(config.shutdownGraceMs, config.shutdownDelayMs);
    metricsServer?.server.close();
    closeBackends(backends);
    for (const client of Object.values(health)) client.close();
    await closeBus(nc);
    await telemetry().shutdown();
  });
}

async function serveJobs(env: Env): Promise<void> {
  const config = readConfig(env, jobsConfig);
  const stations = createClient(StationsServiceClient, {
    service: 'stations',
    address: config.stationsAddr,
  });
  const accounts = createClient(AccountsServiceClient, {
    service: 'accounts',
    address: config.accountsAddr,
  });
  await serveService('jobs', config, async ({ pool, nc, logger, layout }) => {
    const jobs = await createJobs({
      pool,
      nc,
      layout,
      logger,
      clock: systemClock,
      stations,
      accounts,
      maxDocumentBytes: config.maxDocumentBytes,
      uploadQuotaBytes: config.uploadQuotaBytes,
      ...(config.serverPrivateKey
        ? { serverKeys: serverKeysFrom(config.serverPrivateKey, config.serverPreviousKeys) }
        : {}),
      fetchAllowInsecure: config.fetchAllowInsecure,
    });
    return {
      grpc: jobs.grpc,
      async stop() {
        await jobs.stop();
        stations.close();
        accounts.close();
      },
    };
  });
}

async function serveStations(env: Env): Promise<void> {
  const config = readConfig(env, stationsConfig);
  const jobs = createClient(JobsServiceClient, { service: 'jobs', address: config.jobsAddr });
  const linkListener = {
    host: config.stationHost,
    port: config.stationPort,
    variable: 'STATION_PORT',
  };
  await serveService(
    'stations',
    config,
    async ({ pool, nc, logger, layout }) => {
      const stations = await createStations({
        pool,
        nc,
        layout,
        logger,
        clock: systemClock,
        jobs,
        agentDownloadUrl: config.agentDownloadUrl,
      });
      let link: GrpcServerHandle | undefined;
      return {
        grpc: stations.grpc,
        async afterStart() {
          link = await startLinkServer(stations, config.stationHost, config.stationPort);
          return { stationPort: link.port };
        },
        async beforeShutdown() {
          // Agents reconnect to another replica; their jobs stay queued meanwhile.
          stations.links.closeAll();
          await link?.shutdown(1_000);
        },
        async stop() {
          await stations.stop();
          jobs.close();
        },
      };
    },
    [linkListener],
  );
}

/** The webhooks service's settings from its variables (`spool serve webhooks` and `spool dev`). */
export function webhookSettings(
  values: {
    webhookTimeoutMs: number;
    webhookRetryWaitsMs: number[];
    webhookGraceSeconds: number;
    webhookMaxPayloadBytes: number;
    webhookConcurrency: number;
    webhookEndpointConcurrency: number;
    webhookOrgConcurrency: number;
    webhookPollMs: number;
    webhookLeaseMs: number;
  },
  secretKey: Buffer,
  allowInsecure: boolean,
): WebhooksSettings {
  return {
    secretKey,
    allowInsecure,
    timeoutMs: values.webhookTimeoutMs,
    retryWaitsMs: values.webhookRetryWaitsMs,
    rotationGraceMs: values.webhookGraceSeconds * 1000,
    maxPayloadBytes: values.webhookMaxPayloadBytes,
    concurrency: values.webhookConcurrency,
    endpointConcurrency: values.webhookEndpointConcurrency,
    ...(values.webhookOrgConcurrency > 0 ? { orgConcurrency: values.webhookOrgConcurrency } : {}),
    pollMs: values.webhookPollMs,
    ...(values.webhookLeaseMs > 0 ? { leaseMs: values.webhookLeaseMs } : {}),
  };
}

async function serveWebhooks(env: Env): Promise<void> {
  const config = readConfig(env, webhooksConfig);
  const accounts = createClient(AccountsServiceClient, {
    service: 'accounts',
    address: config.accountsAddr,
  });
  await serveService('webhooks', config, async ({ pool, nc, logger }) => {
    logger.info({ allowInsecure: config.allowInsecure }, 'webhook targets');
    const webhooks = await createWebhooks({
      pool,
      nc,
      logger,
      clock: systemClock,
      settings: webhookSettings(config, config.secretKey as Buffer, config.allowInsecure),
      accounts,
    });
    return {
      ...webhooks,
      async stop() {
        await webhooks.stop();
        accounts.close();
      },
    };
  });
}

const SERVERS: Record<Component, (env: Env) => Promise<void>> = {
  gateway: serveGateway,
  accounts: serveAccounts,
  jobs: serveJobs,
  stations: serveStations,
  webhooks: serveWebhooks,
};

export async function serve(component: Component, env: Env): Promise<void> {
  return SERVERS[component](env);
}
