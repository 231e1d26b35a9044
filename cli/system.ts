/**
 * Builds Spool's parts in one process from a database URL and a NATS URL: what `spool dev` runs and
 * what the integration tests start. Each part talks to the others only over gRPC and NATS, exactly
 * as when each runs as its own deployable.
 */

import { randomBytes } from 'node:crypto';
import type { OperatorToken } from '../gateway/auth.js';
import { closeBackends, connectBackends } from '../gateway/clients.js';
import type { EventStreamOptions } from '../gateway/event-stream.js';
import { createGateway, type Gateway } from '../gateway/index.js';
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { StationsServiceClient } from '../gen/spool/v1/stations.js';
import {
  type BusLayout,
  closeBus,
  connectBus,
  ensureStreams,
  type NatsConnection,
  SINGLE_REGION,
} from '../lib/bus.js';
import { type Clock, systemClock } from '../lib/clock.js';
import { createPool, type Pool } from '../lib/db.js';
import { createClient, type GrpcServerHandle, startGrpcServer } from '../lib/grpc.js';
import { createHealthClient } from '../lib/health-client.js';
import { watchHealth } from '../lib/health-watch.js';
import type { Logger } from '../lib/logger.js';
import { migrate } from '../lib/migrate.js';
import type { RetentionSweeper } from '../lib/retention-sweeper.js';
import type { WindowedRollup } from '../lib/rollup.js';
import { migrations as accountsMigrations, createAccounts } from '../services/accounts/index.js';
import type { SessionSettings } from '../services/accounts/people-server.js';
import { createJobs, migrations as jobsMigrations } from '../services/jobs/index.js';
import type { ServerKeys } from '../services/jobs/server.js';
import type { Sweeper } from '../services/jobs/sweeper.js';
import {
  createStations,
  type StationsPart,
  startLinkServer,
  migrations as stationsMigrations,
} from '../services/stations/index.js';
import {
  createWebhooks,
  WEBHOOK_DEFAULTS,
  type WebhooksPart,
  type WebhooksSettings,
  migrations as webhooksMigrations,
} from '../services/webhooks/index.js';

/** Every service's migrations, in the order they apply. */
export const ALL_MIGRATIONS = [
  accountsMigrations,
  stationsMigrations,
  jobsMigrations,
  webhooksMigrations,
];

export const DEFAULT_MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

export interface SystemOptions {
  databaseUrl: string;
  natsUrl: string;
  /** The region these services run in, and the installation's regions (default: one). */
  layout?: BusLayout;
  logger: Logger;
  clock?: Clock;
  operatorToken: OperatorToken;
  /** Connections in the pool; PGlite serves one at a time. */
  poolMax?: number;
  bodyLimit?: number;
  maxDocumentBytes?: number;
  /** Bytes of one organization's uploads kept at once (UPLOAD_QUOTA_BYTES). */
  uploadQuotaBytes?: number;
  /** Proxies in front adding to X-Forwarded-For (TRUST_PROXY); 0: none. */
  trustProxy?: number;
  grpcDeadlineMs?: number;
  keyCacheTtlMs?: number;
  /** How often the jobs sweeper runs; tests call it directly and set this high. */
  sweepIntervalMs?: number;
  /** How often the stations replica says it is alive; tests call its beat and set this high. */
  replicaBeatMs?: number;
  /** How long a station link tries a report NATS refuses before it asks about other replicas. */
  reportRetryMs?: number;
  /** How long a station diagnosis waits for the agent's report (default 10 s). */
  diagnoseWaitMs?: number;
  settingsTtlMs?: number;
  /** Public requests a client address may make a minute (default 30). */
  publicRateLimit?: number;
  /** Requests an API key may make a minute per gateway (default 6000; 0 for none). */
  keyRateLimit?: number;
  /** The key pair for sealed content. */
  serverKeys?: ServerKeys;
  /** Let content URIs reach http:// and non-public addresses (spool dev and tests). */
  fetchAllowInsecure?: boolean;
  /** Host and port of the station link (port 0: any free port). */
  linkHost?: string;
  linkPort?: number;
  /** The webhooks service's settings; by default the specification's, with a random secret key. */
  webhooks?: Partial<WebhooksSettings>;
  /** Mark the console's session cookie `Secure` (default true; false in `spool dev`). */
  secureCookies?: boolean;
  /** The gateway's public base URL (PUBLIC_URL), for links such as invitations. */
  publicUrl?: string | undefined;
  /**
   * Where agents download release tarballs (AGENT_DOWNLOAD_URL); by default PUBLIC_URL's, else the
   * first gateway's, `/agent/v1/releases`.
   */
  agentDownloadUrl?: string | undefined;
  /** Session expiry, invitation lifetime and sign-in limits of the accounts service. */
  sessions?: Partial<SessionSettings>;
  /** The gateways' event streams: keep-alive interval, per-client buffer, bounds on open ones. */
  eventStreams?: Partial<EventStreamOptions>;
}

export interface GatewayReplica {
  gateway: Gateway;
  url: string;
  stop(): Promise<void>;
}

export interface System {
  pool: Pool;
  /** The jobs service's sweeper, for tests that move the clock and sweep. */
  sweeper: Sweeper;
  /** The jobs service's usage rollup, for tests that move the clock and roll up. */
  usage: WindowedRollup;
  /** The accounts service's audit log retention sweep, for tests that move the clock and sweep. */
  auditSweeper: RetentionSweeper;
  /** The webhooks service, whose worker tests drive with `runDue()` after moving the clock. */
  webhooks: WebhooksPart;
  /** The stations service, whose replica beat tests call after moving the clock. */
  stations: StationsPart;
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
  const layout = options.layout ?? SINGLE_REGION;
  await ensureStreams(nc, layout);

  const grpc: GrpcServerHandle = await startGrpcServer({ host: '127.0.0.1', port: 0 });
  const servicesAddress = `127.0.0.1:${grpc.port}`;
  const deadlineMs = options.grpcDeadlineMs ?? 5_000;
  const jobsClient = createClient(JobsServiceClient, {
    service: 'jobs',
    address: servicesAddress,
    deadlineMs,
  });
  const accountsClient = createClient(AccountsServiceClient, {
    service: 'accounts',
    address: servicesAddress,
    deadlineMs,
  });
  const stationsClient = createClient(StationsServiceClient, {
    service: 'stations',
    address: servicesAddress,
    deadlineMs,
  });

  const accounts = createAccounts({
    pool,
    nc,
    logger,
    clock,
    ...(options.sessions ? { sessions: options.sessions } : {}),
  });
  const jobs = await createJobs({
    pool,
    nc,
    layout,
    logger,
    clock,
    stations: stationsClient,
    accounts: accountsClient,
    maxDocumentBytes,
    ...(options.uploadQuotaBytes === undefined
      ? {}
      : { uploadQuotaBytes: options.uploadQuotaBytes }),
    ...(options.serverKeys ? { serverKeys: options.serverKeys } : {}),
    fetchAllowInsecure: options.fetchAllowInsecure ?? false,
    ...(options.sweepIntervalMs === undefined ? {} : { sweepIntervalMs: options.sweepIntervalMs }),
    ...(options.settingsTtlMs === undefined ? {} : { settingsTtlMs: options.settingsTtlMs }),
  });
  let firstGatewayUrl: string | undefined;
  const stations = await createStations({
    pool,
    nc,
    layout,
    logger,
    clock,
    jobs: jobsClient,
    ...(options.replicaBeatMs === undefined ? {} : { replicaBeatMs: options.replicaBeatMs }),
    ...(options.reportRetryMs === undefined ? {} : { reportRetryMs: options.reportRetryMs }),
    ...(options.diagnoseWaitMs === undefined ? {} : { diagnoseWaitMs: options.diagnoseWaitMs }),
    agentDownloadUrl: () =>
      options.agentDownloadUrl ??
      `${options.publicUrl ?? firstGatewayUrl ?? 'http://127.0.0.1:8080'}/agent/v1/releases`,
  });
  const webhooks = await createWebhooks({
    pool,
    nc,
    logger,
    clock,
    settings: { ...WEBHOOK_DEFAULTS, secretKey: randomBytes(32), ...options.webhooks },
    accounts: accountsClient,
  });
  const parts = [accounts.grpc, jobs.grpc, stations.grpc, webhooks.grpc];
  for (const part of parts) grpc.add(part);
  const stopWatch = watchHealth({
    health: grpc.health,
    services: parts.map((p) => p.name),
    pool,
    nc,
    logger,
  });
  const link = await startLinkServer(
    stations,
    options.linkHost ?? '127.0.0.1',
    options.linkPort ?? 0,
  );
  const replicas = new Set<GatewayReplica>();

  return {
    pool,
    nc,
    sweeper: jobs.sweeper,
    auditSweeper: accounts.auditSweeper,
    usage: jobs.usage,
    webhooks,
    stations,
    servicesAddress,
    linkAddress: `${options.linkHost ?? '127.0.0.1'}:${link.port}`,
    async startGateway(host = '127.0.0.1', port = 0) {
      const gatewayNc = await connectBus({ url: options.natsUrl, name: 'spool-gateway', logger });
      const backends = connectBackends(
        {
          accounts: servicesAddress,
          jobs: servicesAddress,
          stations: servicesAddress,
          webhooks: servicesAddress,
        },
        deadlineMs,
      );
      const health = createHealthClient(servicesAddress);
      const gateway = createGateway({
        nc: gatewayNc,
        layout,
        backends,
        logger,
        clock,
        operatorToken: options.operatorToken,
        bodyLimit: options.bodyLimit ?? 1024 * 1024,
        maxDocumentBytes,
        trustProxy: options.trustProxy ?? 0,
        health: { accounts: health, jobs: health, stations: health, webhooks: health },
        ...(options.publicRateLimit === undefined
          ? {}
          : { publicRateLimit: options.publicRateLimit }),
        ...(options.keyRateLimit === undefined ? {} : { keyRateLimit: options.keyRateLimit }),
        ...(options.keyCacheTtlMs === undefined ? {} : { keyCacheTtlMs: options.keyCacheTtlMs }),
        secureCookies: options.secureCookies ?? true,
        publicUrl: options.publicUrl,
        ...(options.sessions?.idleMs === undefined
          ? {}
          : { sessionIdleMs: options.sessions.idleMs }),
        ...(options.sessions?.absoluteMs === undefined
          ? {}
          : { sessionAbsoluteMs: options.sessions.absoluteMs }),
        ...(options.eventStreams ? { eventStreams: options.eventStreams } : {}),
      });
      const bound = await gateway.listen(host, port);
      const replica: GatewayReplica = {
        gateway,
        url: `http://${host}:${bound}`,
        async stop() {
          replicas.delete(replica);
          await gateway.close(1_000);
          closeBackends(backends);
          health.close();
          await closeBus(gatewayNc);
        },
      };
      replicas.add(replica);
      // Bound to every address: agents on this machine reach it on loopback.
      firstGatewayUrl ??= replica.url.replace(
        /^http:\/\/(0\.0\.0\.0|\[?::\]?):/,
        'http://127.0.0.1:',
      );
      return replica;
    },
    async stop(graceMs = 10_000) {
      await Promise.all([...replicas].map((r) => r.stop()));
      stopWatch();
      stations.links.closeAll();
      await link.shutdown(Math.min(graceMs, 1_000));
      // With the gateways and links gone, the gRPC server's callers are the services' own readers
      // (the jobs service asking the stations service about printers, say): they stop first,
      // while it still answers. Stopped after it, a call in flight waited out its deadline.
      await Promise.all([accounts.stop(), jobs.stop(), stations.stop(), webhooks.stop()]);
      await grpc.shutdown(graceMs);
      jobsClient.close();
      stationsClient.close();
      accountsClient.close();
      await closeBus(nc);
      await pool.end();
    },
  };
}
