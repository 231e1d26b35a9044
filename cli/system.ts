/**
 * Builds Spool's parts in one process from a database URL and a NATS URL: what `spool dev` runs and
 * what the integration tests start. Each part talks to the others only over gRPC and NATS, exactly
 * as when each runs as its own deployable.
 */

import { closeBackends, connectBackends } from '../gateway/clients.js';
import { createGateway, type Gateway } from '../gateway/index.js';
import { connectBus, ensureStreams, type NatsConnection } from '../lib/bus.js';
import { type Clock, systemClock } from '../lib/clock.js';
import { createPool, type Pool } from '../lib/db.js';
import { type GrpcServerHandle, startGrpcServer } from '../lib/grpc.js';
import type { Logger } from '../lib/logger.js';
import { migrate } from '../lib/migrate.js';
import { migrations as accountsMigrations, createAccounts } from '../services/accounts/index.js';

/** Every service's migrations, in the order they apply. */
export const ALL_MIGRATIONS = [accountsMigrations];

export interface SystemOptions {
  databaseUrl: string;
  natsUrl: string;
  logger: Logger;
  clock?: Clock;
  operatorToken: string;
  /** Connections in the pool; PGlite serves one at a time. */
  poolMax?: number;
  bodyLimit?: number;
  trustProxy?: boolean;
  grpcDeadlineMs?: number;
  keyCacheTtlMs?: number;
}

export interface GatewayReplica {
  gateway: Gateway;
  url: string;
  stop(): Promise<void>;
}

export interface System {
  pool: Pool;
  nc: NatsConnection;
  accountsAddress: string;
  /** Starts a gateway replica with its own NATS connection and key cache. */
  startGateway(host?: string, port?: number): Promise<GatewayReplica>;
  stop(graceMs?: number): Promise<void>;
}

export async function startSystem(options: SystemOptions): Promise<System> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger;
  const pool = createPool({
    url: options.databaseUrl,
    max: options.poolMax ?? 10,
    applicationName: 'spool',
  });
  await migrate(pool, ALL_MIGRATIONS, logger);
  const nc = await connectBus({ url: options.natsUrl, name: 'spool-services', logger });
  await ensureStreams(nc);

  const accounts = createAccounts({ pool, nc, logger, clock });
  const grpc: GrpcServerHandle = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    services: [accounts.grpc],
  });
  const accountsAddress = `127.0.0.1:${grpc.port}`;
  const replicas = new Set<GatewayReplica>();

  return {
    pool,
    nc,
    accountsAddress,
    async startGateway(host = '127.0.0.1', port = 0) {
      const gatewayNc = await connectBus({ url: options.natsUrl, name: 'spool-gateway', logger });
      const backends = connectBackends(
        { accounts: accountsAddress },
        options.grpcDeadlineMs ?? 5_000,
      );
      const gateway = createGateway({
        nc: gatewayNc,
        backends,
        logger,
        clock,
        operatorToken: options.operatorToken,
        bodyLimit: options.bodyLimit ?? 1024 * 1024,
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
      await grpc.shutdown(graceMs);
      await accounts.stop();
      await nc.drain();
      await pool.end();
    },
  };
}
