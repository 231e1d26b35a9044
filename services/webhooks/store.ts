/**
 * The webhooks tables, as one object for those that use most of them (the gRPC server, tests):
 * endpoints, the delivery log, the fan-out's write, the worker's rounds, the purge of an
 * organization, the log's retention and the deliveries per day, each its own module. Every
 * query on an organization's data is scoped by `org_id`; the worker's claim, which serves every
 * organization, is the one query that is not (it then works by id on the rows it locked), and the
 * usage rollup's count of a window of deliveries is another (it adds each organization's to its
 * own days); the recording of outcomes names each row by organization and id. Secrets are sealed
 * before they are written and opened only to sign an attempt.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from './crypto.js';
import { createDeliveryLog, type DeliveryLog } from './delivery-log.js';
import { createEndpointStore, type EndpointStore } from './endpoints.js';
import { createFanoutStore, type FanoutStore } from './fanout-rows.js';
import { createPurgeStore, type PurgeStore } from './purge.js';
import { createRetentionStore, type RetentionStore } from './retention.js';
import { createRoundStore, type RoundStore } from './rounds.js';
import { createDeliveryUsageStore, type DeliveryUsageStore } from './usage-store.js';

/** Every part of the webhooks service's storage. */
export interface WebhookStore
  extends EndpointStore,
    DeliveryLog,
    FanoutStore,
    RoundStore,
    PurgeStore,
    RetentionStore,
    DeliveryUsageStore {}

export function createWebhookStore(pool: pg.Pool, clock: Clock, box: SecretBox): WebhookStore {
  return {
    ...createEndpointStore(pool, clock, box),
    ...createDeliveryLog(pool, clock),
    ...createFanoutStore(pool, clock, box),
    ...createRoundStore(pool, box),
    ...createPurgeStore(pool),
    ...createRetentionStore(pool),
    ...createDeliveryUsageStore(pool),
  };
}
