/**
 * A durable JetStream pull consumer shared by every replica of a service (JetStream spreads the
 * messages among them), with explicit acks: a message is acknowledged only after its handler
 * finished, retried a second later when the handler threw, and terminated when it cannot be read.
 * Handlers may run several at once, those of one key in the order their messages came. The loop
 * survives server restarts by consuming again. Each message is handled in a span that continues
 * the trace its headers carry, and the consumer's lag is a metric.
 */
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import type { ObservableResult } from '@opentelemetry/api';
import type { NatsConnection } from './bus.js';
import type { Logger } from './logger.js';
import { spoolMetrics } from './metrics.js';
import {
  contextOfMessage,
  inSpan,
  natsAttributes,
  natsSpanName,
  SpanKind,
  tracing,
} from './tracing.js';
import { retryTransient } from './transient.js';

/**
 * How long one pull request waits for messages (nats.js's default is 30 s). The server sends a
 * heartbeat every half of it; two missed mean the consumer's leader went away (a NATS server
 * died), and nats.js asks for the consumer and pulls again, waiting this long between tries. A
 * consumer whose leader is re-elected thus resumes within a few seconds of the election.
 */
const PULL_EXPIRES_MS = 2_000;

/**
 * How long a JetStream API request of the consumer (the consumer's info, asked when a pull has
 * stalled) waits for its answer; nats.js's default is 5 s, which a leaderless consumer spends in
 * full on every try.
 */
const API_TIMEOUT_MS = 2_000;

/** How long the server waits for a message's ack before it sends the message again: 30 s. */
const ACK_WAIT_NS = 30_000_000_000;

/** Pull notifications that say messages stopped coming for a while. */
const STALLS = new Set([
  'heartbeats_missed',
  'no_responders',
  'consumer_not_found',
  'stream_not_found',
  'consumer_deleted',
]);

export interface DurableConsumer {
  stop(): Promise<void>;
}

export interface DurableConsumerOptions<T> {
  nc: NatsConnection;
  stream: string;
  durable: string;
  /** filter_subject, deliver_policy and the like. */
  config: Partial<ConsumerConfig>;
  logger: Logger;
  /** The message's content, or undefined when it is not one the handler can use (terminated). */
  parse(msg: JsMsg): T | undefined;
  /** Handles one message; `'term'` drops it for good, a throw retries it later. */
  handle(value: T): Promise<'ack' | 'term'>;
  /** Messages handled at once by this process (default 1: one after another). */
  concurrency?: number;
  /** Messages of the same key are handled one after another, in the order they came. */
  keyOf?(value: T): string;
  /** How set-up waits before trying again after a transient failure (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
}

export async function startDurableConsumer<T>(
  options: DurableConsumerOptions<T>,
): Promise<DurableConsumer> {
  const config = {
    durable_name: options.durable,
    ack_policy: AckPolicy.Explicit,
    max_deliver: -1,
    ack_wait: ACK_WAIT_NS,
    ...options.config,
  };
  // A busy or still-electing NATS server may not answer the set-up in time: try again, as
  // ensureStreams does, rather than fail the process's start.
  const consumer = await retryTransient(
    async () => {
      const jsm = await jetstreamManager(options.nc, { timeout: API_TIMEOUT_MS });
      await jsm.consumers.add(options.stream, config);
      return jetstream(options.nc, { timeout: API_TIMEOUT_MS }).consumers.get(
        options.stream,
        options.durable,
      );
    },
    options.sleep ? { sleep: options.sleep } : {},
  );
  const { logger } = options;
  const { consumerLag } = spoolMetrics();
  const observeLag = async (result: ObservableResult) => {
    const info = await consumer.info().catch(() => undefined);
    if (!info) return;
    result.observe(info.num_pending, {
      'messaging.destination.name': options.stream,
      'messaging.consumer.group.name': options.durable,
    });
  };
  consumerLag.addCallback(observeLag);
  let messages: ConsumerMessages | undefined;
  let stopped = false;
  const concurrency = options.concurrency ?? 1;
  /** Messages in hand (handled, or waiting behind their key), each with its handling. */
  const inFlight = new Map<JsMsg, Promise<void>>();
  /** The last message in flight of each key, which the next one of that key waits for. */
  const lastOfKey = new Map<string, Promise<void>>();
  /** Wakes the reader, waiting for a free slot, when a handler finishes. */
  let slotFreed: (() => void) | undefined;
  /**
   * Messages handled this turn of the event loop, acknowledged together at its end: nats.js
   * writes what is queued in one system call, where acks sent as each handler finished went one
   * write each.
   */
  let toAck: JsMsg[] = [];
  const ackNow = () => {
    const batch = toAck;
    toAck = [];
    for (const msg of batch) msg.ack();
  };
  const ack = (msg: JsMsg) => {
    if (toAck.push(msg) === 1) setImmediate(ackNow);
  };

  /** Handles one message in a span continuing its trace, then acks, terms or naks it. */
  const handleOne = async (msg: JsMsg, value: T): Promise<void> => {
    // A message still waiting behind its key when the reader stops is left for the next reader
    // (another replica, or this one restarted) rather than handled during shutdown.
    if (stopped) {
      msg.nak();
      return;
    }
    try {
      // Untraced, no span: its parent and attributes would decode the message's headers and
      // parse its reply subject.
      const verdict = tracing()
        ? await inSpan(
            natsSpanName('process', msg.subject),
            {
              kind: SpanKind.CONSUMER,
              parent: contextOfMessage(msg),
              attributes: {
                ...natsAttributes('process', msg.subject),
                'messaging.consumer.group.name': options.durable,
                'messaging.message.delivery_count': msg.info.deliveryCount,
              },
            },
            () => options.handle(value),
          )
        : await options.handle(value);
      if (verdict === 'term') msg.term();
      else ack(msg);
    } catch (err) {
      // A handler cut short by the reader stopping is no news; the message is redelivered.
      if (stopped) logger.debug({ err, subject: msg.subject }, 'message left for the next reader');
      else logger.warn({ err, subject: msg.subject }, 'message not handled; will retry');
      msg.nak(1_000);
    }
  };

  /**
   * Every third of the ack wait each message in hand is told to the server as still in progress,
   * which starts its wait again: a handler that takes longer (a slow database, a fan-out waiting
   * for room) does not get its message sent again to another replica, or to itself, while it works
   * on it.
   */
  const keepAlive = setInterval(
    () => {
      for (const msg of inFlight.keys()) msg.working();
    },
    Number(config.ack_wait) / 3 / 1e6,
  );
  keepAlive.unref();

  const dispatch = (msg: JsMsg, value: T): Promise<void> => {
    const key = options.keyOf?.(value);
    const before = key === undefined ? undefined : lastOfKey.get(key);
    const run = before ? before.then(() => handleOne(msg, value)) : handleOne(msg, value);
    inFlight.set(msg, run);
    if (key !== undefined) lastOfKey.set(key, run);
    void run.then(() => {
      inFlight.delete(msg);
      slotFreed?.();
      slotFreed = undefined;
      if (key !== undefined && lastOfKey.get(key) === run) lastOfKey.delete(key);
    });
    return run;
  };

  /** When the pull last stalled, until a message comes again. */
  let stalledAt: number | undefined;
  /**
   * Says when the pull stalls (a NATS server went away with the consumer's leader): nats.js pulls
   * again on its own, and the log says why messages paused meanwhile.
   */
  const watch = async (pull: ConsumerMessages) => {
    for await (const status of pull.status()) {
      if (!STALLS.has(status.type) || stalledAt !== undefined) continue;
      stalledAt = Date.now();
      logger.warn({ durable: options.durable, status }, 'consumer stalled; pulling again');
    }
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        messages = await consumer.consume({ max_messages: 256, expires: PULL_EXPIRES_MS });
        void watch(messages);
        for await (const msg of messages) {
          if (stalledAt !== undefined) {
            logger.info(
              { durable: options.durable, stalledMs: Date.now() - stalledAt },
              'consumer resumed',
            );
            stalledAt = undefined;
          }
          let value: T | undefined;
          try {
            value = options.parse(msg);
          } catch {
            value = undefined;
          }
          if (value === undefined) {
            logger.error({ subject: msg.subject }, 'dropping a message that cannot be read');
            msg.term();
            continue;
          }
          dispatch(msg, value);
          // Waiting on one promise, not racing all of those in flight: a race of 256 adds 256
          // reactions for every message read at capacity.
          while (inFlight.size >= concurrency) {
            await new Promise<void>((resolve) => {
              slotFreed = resolve;
            });
          }
        }
      } catch (err) {
        if (stopped) break;
        logger.warn({ err, durable: options.durable }, 'consumer failed; restarting');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
    await Promise.all(inFlight.values());
    clearInterval(keepAlive);
    ackNow();
  })();
  return {
    async stop() {
      consumerLag.removeCallback(observeLag);
      stopped = true;
      await messages?.close();
      await loop;
    },
  };
}
