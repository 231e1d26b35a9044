/**
 * The fan-out: one durable consumer of `events.>` shared by every webhooks replica (JetStream
 * spreads the messages among them) turns each event into one delivery per subscribed endpoint. A
 * message is acknowledged only after the deliveries are committed, and the unique (event, endpoint)
 * index makes a redelivered message add nothing, so each endpoint gets exactly one delivery of
 * each event. An event that no enabled endpoint of its organization wants is acknowledged without
 * a transaction, on the word of the in-memory {@link EndpointIndex} (its comment says why that
 * misses no endpoint created before the event). An event that is wanted waits, unacknowledged,
 * until this process's worker has room for its deliveries, which are then added already claimed
 * for the worker and sent without a round claiming them (docs/webhooks.md, "Hand-over and
 * backpressure").
 */
import { DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '../../lib/bus.js';
import { startDurableConsumer } from '../../lib/consumer.js';
import { isWebhookEventType, parseEvent, type SpoolEvent } from '../../lib/events.js';
import { GATHER_UNDER_LOAD_MS, GroupCommit } from '../../lib/group-commit.js';
import type { Logger } from '../../lib/logger.js';
import { type TraceCarrier, traceCarrier } from '../../lib/tracing.js';
import type { EndpointIndex } from './endpoint-index.js';
import type { FannedOut, FanoutStore } from './fanout-rows.js';
import type { DeliveryWorker } from './worker.js';

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
  store: FanoutStore;
  index: EndpointIndex;
  logger: Logger;
  maxPayloadBytes: number;
  /** The worker that sends what this process fans out. */
  worker: Pick<DeliveryWorker, 'admit' | 'admitAll' | 'handover' | 'kick'>;
}): Promise<Fanout> {
  const groups = new GroupCommit<
    { event: SpoolEvent; trace: TraceCarrier; admitted: number },
    number
  >(
    async (items) => {
      // What the worker has room for goes to it claimed, as the transaction adds it; the rest it
      // claims in rounds, told of them once they are committed.
      const handing = deps.worker.handover(
        items.map((item) => ({ orgId: item.event.org_id, admitted: item.admitted })),
      );
      // The room set aside is given back once, whatever happens: an event retried alone after its
      // group failed takes what room is free then.
      for (const item of items) item.admitted = 0;
      let fanned: FannedOut;
      try {
        fanned = await deps.store.fanOut(items, deps.maxPayloadBytes, handing.handover);
      } catch (err) {
        handing.settle([]);
        throw err;
      }
      handing.settle(fanned.claimed);
      if (fanned.queued.length > 0) deps.worker.kick(true, fanned.queued);
      return fanned.added.map((added) => ({ ok: added }));
    },
    FANOUT_IN_FLIGHT,
    { gatherMs: GATHER_UNDER_LOAD_MS },
  );
  const consumer = await startDurableConsumer({
    nc: deps.nc,
    stream: 'EVENTS',
    durable: FANOUT_CONSUMER,
    config: {
      filter_subject: 'events.>',
      // A first start does not replay the stream's week of history to today's endpoints.
      deliver_policy: DeliverPolicy.New,
    },
    logger: deps.logger,
    // The subject names the organization and the type, which is all it takes to drop an event
    // nobody wants; only the events an endpoint wants are read.
    parse: (msg) => eventSubject(msg),
    // Events fan out independently of each other: the deliveries they add are unordered.
    concurrency: FANOUT_IN_FLIGHT,
    async handle({ orgId, type, msg }) {
      // Resource events (station.created…) are for the event stream only; `*` does not take them.
      if (!isWebhookEventType(type)) return 'ack';
      const wanting = await deps.index.wanting(orgId, type);
      if (wanting === 0) return 'ack';
      const event = readEvent(msg, orgId, type);
      if (!event) {
        deps.logger.error({ subject: msg.subject }, 'dropping an event that cannot be read');
        return 'term';
      }
      // The event waits here, unacknowledged, until the worker has room for its deliveries.
      const admitted = await deps.worker.admit(wanting, event.org_id);
      await groups.submit({ event, trace: traceCarrier(), admitted });
      return 'ack';
    },
  });
  return {
    async stop() {
      // Events waiting for room go to the database now, to be claimed in rounds by any replica.
      deps.worker.admitAll();
      await consumer.stop();
    },
  };
}

/** An event's message, with the organization and type its subject (`events.<org>.<type>`) names. */
interface EventMessage {
  orgId: string;
  type: string;
  msg: JsMsg;
}

const EVENT_SUBJECT = /^events\.([^.]+)\.(.+)$/;

function eventSubject(msg: JsMsg): EventMessage | undefined {
  const m = EVENT_SUBJECT.exec(msg.subject);
  return m ? { orgId: m[1] as string, type: m[2] as string, msg } : undefined;
}

/** The event the message holds, when it is one of the organization and type its subject names. */
function readEvent(msg: JsMsg, orgId: string, type: string): SpoolEvent | undefined {
  let event: SpoolEvent | undefined;
  try {
    event = parseEvent(msg.json());
  } catch {
    return undefined;
  }
  return event?.org_id === orgId && event.type === type ? event : undefined;
}
