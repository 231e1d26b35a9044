/**
 * The fan-out: one durable consumer of `events.>` shared by every webhooks replica (JetStream
 * spreads the messages among them) turns each event into one delivery per subscribed endpoint. A
 * message is acknowledged only after the deliveries are committed, and the unique (event, endpoint)
 * index makes a redelivered message add nothing, so each endpoint gets exactly one delivery of
 * each event. An event that no enabled endpoint of its organization wants is acknowledged without
 * a transaction, on the word of the in-memory {@link EndpointIndex} (its comment says why that
 * misses no endpoint created before the event).
 */
import { DeliverPolicy } from '@nats-io/jetstream';
import type { NatsConnection } from '../../lib/bus.js';
import { startDurableConsumer } from '../../lib/consumer.js';
import { parseEvent, type SpoolEvent } from '../../lib/events.js';
import { GroupCommit } from '../../lib/group-commit.js';
import type { Logger } from '../../lib/logger.js';
import { type TraceCarrier, traceCarrier } from '../../lib/tracing.js';
import type { EndpointIndex } from './endpoint-index.js';
import type { WebhookStore } from './store.js';

export const FANOUT_CONSUMER = 'webhooks-fanout';

/**
 * Events a webhooks-service process has in hand at once. Those an endpoint wants are fanned out
 * by group commit (lib/group-commit.ts): the events that arrive while a group commits go together
 * in the next, one transaction for the group. This also bounds a group.
 */
const FANOUT_IN_FLIGHT = 256;

export interface Fanout {
  stop(): Promise<void>;
}

export async function startFanout(deps: {
  nc: NatsConnection;
  store: WebhookStore;
  index: EndpointIndex;
  logger: Logger;
  maxPayloadBytes: number;
  /** Called after new deliveries were committed, so the worker sends them at once. */
  onDeliveries: () => void;
}): Promise<Fanout> {
  const groups = new GroupCommit<{ event: SpoolEvent; trace: TraceCarrier }, number>(
    async (items) =>
      (await deps.store.fanOut(items, deps.maxPayloadBytes)).map((added) => ({ ok: added })),
    FANOUT_IN_FLIGHT,
  );
  return startDurableConsumer({
    nc: deps.nc,
    stream: 'EVENTS',
    durable: FANOUT_CONSUMER,
    config: {
      filter_subject: 'events.>',
      // A first start does not replay the stream's week of history to today's endpoints.
      deliver_policy: DeliverPolicy.New,
    },
    logger: deps.logger,
    parse: (msg) => parseEvent(msg.json()),
    // Events fan out independently of each other: the deliveries they add are unordered.
    concurrency: FANOUT_IN_FLIGHT,
    async handle(event) {
      if (!(await deps.index.wants(event.org_id, event.type))) return 'ack';
      const added = await groups.submit({ event, trace: traceCarrier() });
      if (added > 0) deps.onDeliveries();
      return 'ack';
    },
  });
}
