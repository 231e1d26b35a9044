/**
 * The jobs deployable: `createJobs` builds the service from the connections it is given (used by
 * `spool serve jobs` and `spool dev`).
 */
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { JobsServiceService } from '../../gen/spool/v1/jobs.js';
import type { StationsServiceClient } from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { openDocuments } from '../../lib/documents.js';
import { type AsyncClient, adaptServer, type GrpcService } from '../../lib/grpc.js';
import type { Logger } from '../../lib/logger.js';
import type { MigrationSet } from '../../lib/migrate.js';
import { OutboxRelay } from '../../lib/outbox.js';
import { startReportReader } from './reports.js';
import { createJobsServer } from './server.js';
import { createJobStore, OUTBOX_TABLE } from './store.js';

export const migrations: MigrationSet = {
  service: 'jobs',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export interface JobsDeps {
  pool: pg.Pool;
  nc: NatsConnection;
  logger: Logger;
  clock: Clock;
  stations: AsyncClient<StationsServiceClient>;
  maxDocumentBytes: number;
}

export interface JobsPart {
  grpc: GrpcService;
  relay: OutboxRelay;
  stop(): Promise<void>;
}

export async function createJobs(deps: JobsDeps): Promise<JobsPart> {
  const logger = deps.logger.child({ service: 'jobs' });
  const relay = new OutboxRelay({ pool: deps.pool, nc: deps.nc, table: OUTBOX_TABLE, logger });
  const store = createJobStore(deps.pool, deps.clock);
  const documents = await openDocuments(deps.nc);
  const server = createJobsServer({
    store,
    documents,
    stations: deps.stations,
    maxDocumentBytes: deps.maxDocumentBytes,
    onChange: () => relay.kick(),
  });
  const reports = await startReportReader({
    nc: deps.nc,
    store,
    logger,
    onApplied: (applied) => {
      if (applied.changed) relay.kick();
    },
  });
  relay.start();
  return {
    grpc: {
      name: 'spool.v1.JobsService',
      definition: JobsServiceService,
      implementation: adaptServer(server, logger),
    },
    relay,
    async stop() {
      await reports.stop();
      await relay.stop();
    },
  };
}
