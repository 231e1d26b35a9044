/**
 * Publishing to JetStream with acknowledgement, many messages in flight on one connection.
 *
 * nats.js publishes each JetStream message as a request of its own: a reply subscription entry, a
 * timer, a deferred and an Error built for the stack trace (one even when the request succeeds),
 * the Error alone 4.8 % of the stations process's busy time while a fleet connected. This
 * publisher sends each message with a reply subject under one inbox of its own, answered by one
 * subscription, and keeps the waiting publishes in a map by token; one timer, not one per
 * message, set for the oldest, expires those whose acknowledgement never comes. nats.js offers
 * nothing of the kind (its batch publisher needs a server with atomic batches, and is
 * all-or-nothing), so it is written here.
 *
 * What it returns is what `jetstream(nc).publish` returns: the stream, the sequence and whether the
 * server had already stored a message with the same `Nats-Msg-Id`. While the connection is down, a
 * publish fails at once, and so do those waiting when it drops: nats.js would send them once it
 * reconnects, and a server just restarted was seen to neither store nor answer them, so they
 * waited out their time.
 */
import {
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  headers as natsHeaders,
  type Subscription,
} from '@nats-io/transport-node';
import { onConnectionLost } from './bus.js';

export interface StreamAck {
  stream: string;
  seq: number;
  /** The stream already held a message with this `Nats-Msg-Id` (inside its duplicate window). */
  duplicate: boolean;
}

/**
 * A publish JetStream did not acknowledge: `status` is 503 when no stream takes the subject (or
 * none is reachable now), 408 when no acknowledgement came in time, and otherwise the code of
 * the error JetStream answered with (503 while a stream elects its leader, for instance).
 */
export class StreamPublishError extends Error {
  override name = 'StreamPublishError';
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

interface Waiting {
  subject: string;
  sentAt: number;
  resolve(ack: StreamAck): void;
  reject(err: Error): void;
}

export interface StreamPublisherOptions {
  /** How long a publish waits for its acknowledgement. */
  timeoutMs?: number;
  /** Milliseconds on a monotonic clock; tests move it. */
  now?: () => number;
}

export class StreamPublisher {
  readonly #nc: NatsConnection;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  readonly #inbox = createInbox();
  readonly #waiting = new Map<string, Waiting>();
  readonly #sub: Subscription;
  /** Set for when the oldest waiting publish is due, while any waits. */
  #timer: NodeJS.Timeout | undefined;
  #next = 0;
  /** False from when the connection drops until it is back. */
  #connected = true;
  readonly #stopWatching: () => void;

  constructor(nc: NatsConnection, options: StreamPublisherOptions = {}) {
    this.#nc = nc;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#now = options.now ?? (() => performance.now());
    this.#sub = nc.subscribe(`${this.#inbox}.*`, {
      callback: (err, msg) => {
        if (!err) this.#answer(msg);
      },
    });
    // What is published while the connection is down is never stored nor answered, and what
    // waits when it drops never hears back: both fail at once (a transient 503, tried again by
    // the caller) rather than when their time is up.
    this.#stopWatching = onConnectionLost(nc, (back) => {
      this.#connected = back;
      if (!back)
        this.#failAll((subject) => `the connection to NATS dropped before ${subject} was stored`);
    });
  }

  /**
   * Publishes `payload` to `subject` and resolves when its stream has stored it. `msgID` becomes
   * the `Nats-Msg-Id` header, by which the stream drops a message published twice.
   */
  publish(
    subject: string,
    payload: string | Uint8Array,
    options: { msgID?: string; headers?: MsgHdrs } = {},
  ): Promise<StreamAck> {
    return new Promise<StreamAck>((resolve, reject) => {
      if (!this.#connected) {
        reject(new StreamPublishError(503, `not connected to NATS; ${subject} was not sent`));
        return;
      }
      const token = (this.#next++).toString(36);
      const headers = options.headers ?? natsHeaders();
      if (options.msgID !== undefined) headers.set('Nats-Msg-Id', options.msgID);
      try {
        this.#nc.publish(subject, payload, { reply: `${this.#inbox}.${token}`, headers });
      } catch (err) {
        reject(err as Error);
        return;
      }
      this.#waiting.set(token, { subject, sentAt: this.#now(), resolve, reject });
      this.#timer ??= setTimeout(() => this.#onTimer(), this.#timeoutMs).unref();
    });
  }

  /** Publishes waiting for an acknowledgement. */
  get inFlight(): number {
    return this.#waiting.size;
  }

  /**
   * Fails the publishes whose acknowledgement is overdue (their message or its acknowledgement
   * was lost, with a server that went away for instance). A timer calls it when the oldest is
   * due.
   */
  expire(): void {
    const oldest = this.#now() - this.#timeoutMs;
    // The map keeps the order of sending, so the overdue are at its start.
    for (const [token, w] of this.#waiting) {
      if (w.sentAt > oldest) break;
      this.#waiting.delete(token);
      w.reject(new StreamPublishError(408, `no acknowledgement from JetStream for ${w.subject}`));
    }
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.expire();
    const [oldest] = this.#waiting.values();
    if (oldest) {
      const dueIn = Math.max(oldest.sentAt + this.#timeoutMs - this.#now(), 1);
      this.#timer = setTimeout(() => this.#onTimer(), dueIn).unref();
    }
  }

  /** Stops listening; publishes still waiting fail. */
  close(): void {
    this.#stopWatching();
    this.#sub.unsubscribe();
    this.#failAll((subject) => `the publisher closed before ${subject} was stored`);
  }

  /** Fails every publish still waiting for its acknowledgement, as a transient 503. */
  #failAll(why: (subject: string) => string): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const w of waiting) w.reject(new StreamPublishError(503, why(w.subject)));
  }

  #answer(msg: Msg): void {
    const token = msg.subject.slice(this.#inbox.length + 1);
    const w = this.#waiting.get(token);
    if (!w) return;
    this.#waiting.delete(token);
    if (msg.headers?.hasError) {
      // The server's own status: 503 when nothing subscribes to the subject, so no stream has it.
      const { code, description } = msg.headers;
      w.reject(
        new StreamPublishError(
          code,
          code === 503 ? `no stream takes ${w.subject}` : `${w.subject}: ${description}`,
        ),
      );
      return;
    }
    let ack: {
      stream?: string;
      seq?: number;
      duplicate?: boolean;
      error?: Record<string, unknown>;
    };
    try {
      ack = msg.json();
    } catch {
      w.reject(new StreamPublishError(500, `unreadable acknowledgement for ${w.subject}`));
      return;
    }
    if (ack.error || typeof ack.stream !== 'string' || typeof ack.seq !== 'number') {
      const status = typeof ack.error?.code === 'number' ? ack.error.code : 500;
      const description = ack.error?.description ?? 'no stream in the acknowledgement';
      w.reject(new StreamPublishError(status, `${w.subject}: ${String(description)}`));
      return;
    }
    w.resolve({ stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true });
  }
}
