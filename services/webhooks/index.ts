/**
 * The webhooks deployable: the gRPC service for endpoints and the delivery log, the fan-out
 * consumer of `events.>`, and the delivery worker, built from the connections they are given (used
 * by `spool serve webhooks` and `spool dev`). Replicas share the work through the database and
 * JetStream; what a replica keeps in memory (which event types each organization's endpoints want,
 * and the secrets it opened, by ciphertext) is a cache of the database.
 */
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { AccountsServiceClient } from '../../gen/spool/v1/accounts.js';
import { WebhooksServiceService } from '../../gen/spool/v1/webhooks.js';
import type { NatsConnection } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { type AsyncClient, adaptServer, type GrpcService } from '../../lib/grpc.js';
import type { Logger } from '../../lib/logger.js';
import type { MigrationSet } from '../../lib/migrate.js';
import { OutboxRelay } from '../../lib/outbox.js';
import { RetentionSweeper } from '../../lib/retention-sweeper.js';
import type { WindowedRollup } from '../../lib/rollup.js';
import { createSecretBox, createSecretCache } from './crypto.js';
import { RETRY_JITTER } from './defaults.js';
import { createSender, type Sender } from './delivery.js';
import { EndpointIndex, followEndpointChanges } from './endpoint-index.js';
import { type Fanout, startFanout } from './fanout.js';
import { OUTBOX_TABLE } from './outbox.js';
import { createWebhooksServer } from './server.js';
import type { WebhooksSettings } from './settings.js';
import { createWebhookStore, type WebhookStore } from './store.js';
import { createDeliveryUsageRollup } from './usage-rollup.js';
import { DeliveryWorker } from './worker.js';

export const migrations: MigrationSet = {
  service: 'webhooks',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export { WEBHOOK_DEFAULTS } from './defaults.js';
export type { WebhooksSettings } from './settings.js';

export interface WebhooksDeps {
  pool: pg.Pool;
  nc: NatsConnection;
  logger: Logger;
  clock: Clock;
  settings: WebhooksSettings;
  /** For the delivery log's retention setting. */
  accounts: AsyncClient<AccountsServiceClient>;
  /** How often the usage rollup runs; default every minute. */
  usageIntervalMs?: number;
}

export interface WebhooksPart {
  grpc: GrpcService;
  store: WebhookStore;
  worker: DeliveryWorker;
  sender: Sender;
  fanout: Fanout;
  /** Which event types each organization's enabled endpoints want, as the fan-out knows it. */
  endpointIndex: EndpointIndex;
  /** The delivery log's retention sweep, for tests that move the clock and sweep. */
  logSweeper: RetentionSweeper;
  /** The deliveries' usage rollup, for tests that move the clock and roll up. */
  usage: WindowedRollup;
  /** Publishes the outbox's `webhook_endpoint.*` events. */
  relay: OutboxRelay;
  stop(): Promise<void>;
}

export async function createWebhooks(deps: WebhooksDeps): Promise<WebhooksPart> {
  const logger = deps.logger.child({ service: 'webhooks' });
  const { settings } = deps;
  const relay = new OutboxRelay({ pool: deps.pool, nc: deps.nc, table: OUTBOX_TABLE, logger });
  const store = createWebhookStore(
    deps.pool,
    deps.clock,
    createSecretCache(createSecretBox(settings.secretKey)),
  );
  const sender = createSender({
    timeoutMs: settings.timeoutMs,
    allowInsecure: settings.allowInsecure,
    connectionsPerOrigin: settings.endpointConcurrency,
  });
  const index = new EndpointIndex({
    load: (orgId) => store.enabledEndpointEvents(orgId),
    clock: deps.clock,
  });
  // Attempts waiting for a slot to an endpoint deleted through this replica are dropped before
  // the deletion is answered; through another, once its notice arrives.
  const endpointChanges = followEndpointChanges(deps.nc, index, logger, (orgId) =>
    worker
      .endpointsChanged(orgId, () => store.endpointIds(orgId))
      .catch((err: unknown) =>
        logger.warn({ err, orgId }, 'could not check the attempts waiting for changed endpoints'),
      ),
  );
  const worker: DeliveryWorker = new DeliveryWorker({
    store,
    sender,
    clock: deps.clock,
    logger,
    retryWaitsMs: settings.retryWaitsMs,
    jitter: settings.jitter ?? RETRY_JITTER,
    concurrency: settings.concurrency,
    endpointConcurrency: settings.endpointConcurrency,
    orgConcurrency: settings.orgConcurrency ?? Math.ceil(settings.concurrency / 2),
    leaseMs: settings.leaseMs ?? 2 * settings.timeoutMs + 30_000,
    pollMs: settings.pollMs,
    onEndpointsChanged: (orgId) => void endpointChanges.changed(orgId),
    onAnnounced: () => relay.kick(),
  });
  const fanout = await startFanout({
    nc: deps.nc,
    store,
    index,
    logger,
    maxPayloadBytes: settings.maxPayloadBytes,
    worker,
  });
  worker.start();
  const logSweeper = new RetentionSweeper({
    what: 'delivery log',
    deleteBefore: (cutoff, limit) => store.deleteFinishedBefore(cutoff, limit),
    retentionDays: async () => {
      const { settings } = await deps.accounts.getSettings({});
      if (!settings) throw new Error('accounts answered without settings');
      return settings.webhookDeliveryRetentionDays;
    },
    clock: deps.clock,
    logger,
  });
  logSweeper.start();
  const usage = createDeliveryUsageRollup({
    pool: deps.pool,
    store,
    clock: deps.clock,
    logger,
    ...(deps.usageIntervalMs === undefined ? {} : { intervalMs: deps.usageIntervalMs }),
  });
  usage.start();
  const server = createWebhooksServer({
    store,
    allowInsecure: settings.allowInsecure,
    rotationGraceMs: settings.rotationGraceMs,
    onWork: () => worker.kick(true),
    onEndpointsChanged: (orgId) => endpointChanges.changed(orgId),
    onAnnounced: () => relay.kick(),
  });
  relay.start();
  return {
    grpc: {
      name: 'spool.v1.WebhooksService',
      definition: WebhooksServiceService,
      implementation: adaptServer(server, logger),
    },
    store,
    worker,
    sender,
    fanout,
    endpointIndex: index,
    logSweeper,
    usage,
    relay,
    async stop() {
      await usage.stop();
      await logSweeper.stop();
      await fanout.stop();
      endpointChanges.stop();
      await worker.stop();
      await sender.close();
      await relay.stop();
    },
  };
}
