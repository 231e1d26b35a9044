/**
 * Builds Spool's parts in one process from a database URL and a NATS URL: what `spool dev` runs and
 * what the integration tests start. Each part talks to the others only over gRPC and NATS, exactly
 * as when each runs as its own deployable.
 */

import { closeBackends, connectBackends } from '../gateway/clients.js';
import { createGateway, type Gateway } from '../gateway/index.js';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { StationsServiceClient } from '../gen/spool/v1/stations.js';
import { connectBus, ensureStreams, type NatsConnection } from '../lib/bus.js';
import { type Clock, systemClock } from '../lib/clock.js';
import { createPool, type Pool } from '../lib/db.js';
import { createClient, type GrpcServerHandle, startGrpcServer } from '../lib/grpc.js';
import type { Logger } from '../lib/logger.js';
import { migrate } from '../lib/migrate.js';
import { migrations as accountsMigrations, createAccounts } from '../services/accounts/index.js';
import { createJobs, migrations as jobsMigrations } from '../services/jobs/index.js';
import { createStations, migrations as stationsMigrations } from '../services/stations/index.js';

/** Every service's migrations, in the order they apply. */
export const ALL_MIGRATIONS = [accountsMigrations, stationsMigrations, jobsMigrations];

export const DEFAULT_MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

export interface SystemOptions {
  databaseUrl: string;
  natsUrl: string;
  logger: Logger;
  clock?: Clock;
  operatorToken: string;
  /** Connections in the pool; PGlite serves one at a time. */
  poolMax?: number;
  bodyLimit?: number;
  maxDocumentBytes?: number;
  trustProxy?: boolean;
  grpcDeadlineMs?: number;
  keyCacheTtlMs?: number;
  /** Host and port of the station link (port 0: any free port). */
  linkHost?: string;
  linkPort?: number;
}

export interface GatewayReplica {
  gateway: Gateway;
  url: string;
  stop(): Promise<void>;
}

export interface System {
  pool: Pool;
  nc: NatsConnection;
  /** Where the services answer gRPC. */
  servicesAddress: string;
  /** Where station agents connect (`spool agent --server`). */
  linkAddress: string;
  /** Starts a gateway replica with its own NATS connection and key cache. */
  startGateway(host?: string, port?: number): Promise<GatewayReplica>;
  stop(graceMs?: number): Promise<void>;
}

export async function startSystem(options: SystemOptions): Promise<System> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger;
  const maxDocumentBytes = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
  const pool = createPool({
    url: options.databaseUrl,
    max: options.poolMax ?? 10,
    applicationName: 'spool',
  });
  await migrate(pool, ALL_MIGRATIONS, logger);
  const nc = await connectBus({ url: options.natsUrl, name: 'spool-services', logger });
  await ensureStreams(nc);

  const grpc: GrpcServerHandle = await startGrpcServer({ host: '127.0.0.1', port: 0 });
  const servicesAddress = `127.0.0.1:${grpc.port}`;
  const deadlineMs = options.grpcDeadlineMs ?? 5_000;
  const jobsClient = createClient(JobsServiceClient, {
    service: 'jobs',
    address: servicesAddress,
    deadlineMs,
  });
  const stationsClient = createClient(StationsServiceClient, {
    service: 'stations',
    address: servicesAddress,
    deadlineMs,
  });

  const accounts = createAccounts({ pool, nc, logger, clock });
  const jobs = await createJobs({
    pool,
    nc,
    logger,
    clock,
    stations: stationsClient,
    maxDocumentBytes,
  });
  const stations = await createStations({ pool, nc, logger, clock, jobs: jobsClient });
  for (const part of [accounts.grpc, jobs.grpc, stations.grpc]) grpc.add(part);
  const link = await startGrpcServer({
    host: options.linkHost ?? '127.0.0.1',
    port: options.linkPort ?? 0,
    services: [stations.link],
  });
  const replicas = new Set<GatewayReplica>();

  return {
    pool,
    nc,
    servicesAddress,
    linkAddress: `${options.linkHost ?? '127.0.0.1'}:${link.port}`,
    async startGateway(host = '127.0.0.1', port = 0) {
      const gatewayNc = await connectBus({ url: options.natsUrl, name: 'spool-gateway', logger });
      const backends = connectBackends(
        { accounts: servicesAddress, jobs: servicesAddress, stations: servicesAddress },
        deadlineMs,
      );
      const gateway = createGateway({
        nc: gatewayNc,
        backends,
        logger,
        clock,
        operatorToken: options.operatorToken,
        bodyLimit: options.bodyLimit ?? 1024 * 1024,
        maxDocumentBytes,
        trustProxy: options.trustProxy ?? false,
        ...(options.keyCacheTtlMs === undefined ? {} : { keyCacheTtlMs: options.keyCacheTtlMs }),
      });
      const bound = await gateway.listen(host, port);
      const replica: GatewayReplica = {
        gateway,
        url: `http://${host}:${bound}`,
        async stop() {
          replicas.delete(replica);
          await gateway.close(1_000);
          closeBackends(backends);
          await gatewayNc.drain();
        },
      };
      replicas.add(replica);
      return replica;
    },
    async stop(graceMs = 10_000) {
      await Promise.all([...replicas].map((r) => r.stop()));
      stations.links.closeAll();
      await link.shutdown(Math.min(graceMs, 1_000));
      await grpc.shutdown(graceMs);
      await Promise.all([accounts.stop(), jobs.stop(), stations.stop()]);
      jobsClient.close();
      stationsClient.close();
      await nc.drain();
      await pool.end();
    },
  };
}
