/**
 * The jobs deployable: `createJobs` builds the service from the connections it is given (used by
 * `spool serve jobs` and `spool dev`).
 */
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { AccountsServiceClient } from '../../gen/spool/v1/accounts.js';
import { JobsServiceService } from '../../gen/spool/v1/jobs.js';
import type { StationsServiceClient } from '../../gen/spool/v1/stations.js';
import { type BusLayout, type NatsConnection, SINGLE_REGION } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { openDocuments } from '../../lib/documents.js';
import { type AsyncClient, adaptServer, type GrpcService } from '../../lib/grpc.js';
import type { Logger } from '../../lib/logger.js';
import type { MigrationSet } from '../../lib/migrate.js';
import { OutboxRelay } from '../../lib/outbox.js';
import type { WindowedRollup } from '../../lib/rollup.js';
import { createFetcher } from './fetch.js';
import { createIdempotencyStore } from './idempotency.js';
import { OUTBOX_TABLE } from './job-rows.js';
import { createPageCounter } from './page-counts.js';
import { followPrinterChanges, PrinterCache } from './printer-cache.js';
import { createPrinterWaits, startPrinterWaitReader } from './printer-waits.js';
import { startReportReader } from './reports.js';
import { Router } from './router.js';
import { createRoutingStore } from './routing-store.js';
import { createJobsServer, type ServerKeys } from './server.js';
import { createJobStore } from './store.js';
import { Sweeper } from './sweeper.js';
import { createUsageRollup } from './usage-rollup.js';
import { createUsageStore } from './usage-store.js';

/** Bytes of one organization's uploads kept at once, unless UPLOAD_QUOTA_BYTES says otherwise. */
export const DEFAULT_UPLOAD_QUOTA_BYTES = 1024 * 1024 * 1024;

export const migrations: MigrationSet = {
  service: 'jobs',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export interface JobsDeps {
  pool: pg.Pool;
  nc: NatsConnection;
  /** This process's region; it reads the reports of that region's stations. */
  layout?: BusLayout;
  logger: Logger;
  clock: Clock;
  stations: AsyncClient<StationsServiceClient>;
  /** For the retention settings. */
  accounts: AsyncClient<AccountsServiceClient>;
  maxDocumentBytes: number;
  /** Bytes of one organization's uploads kept at once (default 1 GiB). */
  uploadQuotaBytes?: number;
  /** The key pair for sealed content; without it sealed content answers 503. */
  serverKeys?: ServerKeys;
  /** Let `pdf_uri`/`raw_uri` reach http:// and non-public addresses (spool dev only). */
  fetchAllowInsecure?: boolean;
  /** How often the sweeper runs (schedules, expiry, retention); default every second. */
  sweepIntervalMs?: number;
  /** How long retention settings are trusted; default a minute. */
  settingsTtlMs?: number;
  /** How often the router looks at pools with queued jobs; default every second. */
  routeIntervalMs?: number;
  /** How often the usage rollup runs; default every minute. */
  usageIntervalMs?: number;
}

export interface JobsPart {
  grpc: GrpcService;
  relay: OutboxRelay;
  sweeper: Sweeper;
  router: Router;
  /** The usage rollup, for tests that move the clock and roll up. */
  usage: WindowedRollup;
  stop(): Promise<void>;
}

export async function createJobs(deps: JobsDeps): Promise<JobsPart> {
  const logger = deps.logger.child({ service: 'jobs' });
  const layout = deps.layout ?? SINGLE_REGION;
  const relay = new OutboxRelay({ pool: deps.pool, nc: deps.nc, table: OUTBOX_TABLE, logger });
  const printerWaits = createPrinterWaits({ pool: deps.pool });
  const routing = createRoutingStore(deps.pool);
  // The router is made once the store it moves jobs with exists; news before that waits for its
  // first round.
  let router: Router | undefined;
  const nudgeRouter = () => router?.nudge();
  const waitReader = await startPrinterWaitReader({
    nc: deps.nc,
    stations: deps.stations,
    waits: printerWaits,
    logger,
    changed: nudgeRouter,
  });
  // Each change's messages leave as soon as its transaction commits, without a read back.
  const store = createJobStore(deps.pool, deps.clock, {
    onCommit: (rows) => relay.send(rows),
    onRequeued: (jobs) => {
      waitReader.requeued(jobs);
      if (jobs.some((j) => j.poolId && !j.printerId)) nudgeRouter();
    },
  });
  router = new Router({
    routing,
    transitions: store,
    stations: deps.stations,
    clock: deps.clock,
    logger,
    ...(deps.routeIntervalMs === undefined ? {} : { intervalMs: deps.routeIntervalMs }),
  });
  const documents = await openDocuments(deps.nc, layout);
  const fetcher = createFetcher({ allowInsecure: deps.fetchAllowInsecure ?? false });
  const printers = new PrinterCache({ clock: deps.clock });
  const stopFollowingPrinters = followPrinterChanges(deps.nc, printers, logger);
  const usageStore = createUsageStore(deps.pool);
  const usage = createUsageRollup({
    pool: deps.pool,
    store: usageStore,
    documents,
    pages: createPageCounter(logger),
    clock: deps.clock,
    logger,
    ...(deps.usageIntervalMs === undefined ? {} : { intervalMs: deps.usageIntervalMs }),
  });
  const server = createJobsServer({
    fetcher,
    store,
    idempotency: createIdempotencyStore(deps.pool, deps.clock),
    documents,
    stations: deps.stations,
    maxDocumentBytes: deps.maxDocumentBytes,
    uploadQuotaBytes: deps.uploadQuotaBytes ?? DEFAULT_UPLOAD_QUOTA_BYTES,
    clock: deps.clock,
    ...(deps.serverKeys ? { serverKeys: deps.serverKeys } : {}),
    printers,
    logger,
    routing,
    nudgeRouter,
    usage: usageStore,
  });
  const reports = await startReportReader({
    nc: deps.nc,
    layout,
    store,
    logger,
  });
  const sweeper = new Sweeper({
    store,
    documents,
    settings: async () => {
      const { settings } = await deps.accounts.getSettings({});
      if (!settings) throw new Error('accounts answered without settings');
      return settings;
    },
    clock: deps.clock,
    logger,
    ...(deps.sweepIntervalMs === undefined ? {} : { intervalMs: deps.sweepIntervalMs }),
    ...(deps.settingsTtlMs === undefined ? {} : { settingsTtlMs: deps.settingsTtlMs }),
  });
  relay.start();
  sweeper.start();
  router.start();
  usage.start();
  return {
    grpc: {
      name: 'spool.v1.JobsService',
      definition: JobsServiceService,
      implementation: adaptServer(server, logger),
    },
    relay,
    sweeper,
    router,
    usage,
    async stop() {
      await usage.stop();
      await router.stop();
      await sweeper.stop();
      await reports.stop();
      await waitReader.stop();
      stopFollowingPrinters();
      await relay.stop();
      await fetcher.close();
    },
  };
}
