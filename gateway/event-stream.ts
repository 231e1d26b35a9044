/**
 * Realtime (DESIGN §5): the event streams of `GET /v1/orgs/{org}/stream`. Each gateway process
 * reads the `EVENTS` stream once, through one ordered consumer of `events.>`, and fans every event
 * out in memory to the open streams of its organization; no listener has a consumer of its own on
 * the server. The consumer runs only while streams are open: the first starts it, and it stops
 * once none has been open for a keep-alive interval.
 *
 * An event's id on the wire is its sequence number in `EVENTS`: ids grow with time across the
 * installation, so resuming after `Last-Event-ID` is a short-lived consumer of the organization's
 * subjects that starts at the next sequence (or, when that event is over 24 hours old, at the first
 * event of the last 24 hours), read up to where the live feed took over for that stream; the
 * sequence tells replayed and live copies apart, so the switch loses and repeats nothing.
 *
 * A stream whose client reads too slowly is closed once more than `bufferBytes` wait for it; the
 * client resumes with `Last-Event-ID` and misses nothing that is under a day old.
 */
import type { ServerResponse } from 'node:http';
import {
  AckPolicy,
  type Consumer,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  type MsgRequest,
  type StoredMsg,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import { deliveryBody, type EventType, parseEvent } from '../lib/events.js';
import type { Logger } from '../lib/logger.js';

const STREAM = 'EVENTS';

/** How far back a reconnecting client is given the events it missed. */
export const RESUME_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface EventStreamOptions {
  /** Milliseconds between keep-alive comments (DESIGN §5: 15 seconds). */
  keepAliveMs: number;
  /** Bytes that may wait for one slow client before its stream is closed. */
  bufferBytes: number;
  /** Longest a new stream waits for this process's feed to start before answering 503. */
  readyTimeoutMs: number;
}

export const DEFAULT_EVENT_STREAM_OPTIONS: EventStreamOptions = {
  keepAliveMs: 15_000,
  bufferBytes: 1024 * 1024,
  readyTimeoutMs: 5_000,
};

/** One event as it goes on the wire. */
interface Piece {
  /** The message's bytes, made once and written to every stream that wants it. */
  bytes: Buffer;
  /** The same as one chunk of a chunked body, made when a stream first needs it. */
  chunk?: Buffer;
}

interface Frame extends Piece {
  seq: number;
  type: EventType;
}

/** The bytes as one chunk of a chunked HTTP/1.1 body. */
function chunkOf(bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, CRLF]);
}

const CRLF = Buffer.from('\r\n');

const KEEP_ALIVE: Piece = { bytes: Buffer.from(': keep-alive\n\n') };

/** The SSE message of one event: `id`, `event` and the webhook body as `data`. */
export function eventFrame(seq: number, type: string, body: Buffer | string): string {
  // JSON.stringify escapes line breaks inside strings, so the body is one line.
  return `id: ${seq}\nevent: ${type}\ndata: ${body}\n\n`;
}

/** The sequence a `Last-Event-ID` names, or undefined when it is not one of ours. */
export function parseEventId(text: string): number | undefined {
  if (!/^[1-9]\d{0,15}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** What the feed reads of a stored event: a consumer's message or one fetched by sequence. */
type StoredEvent = Pick<JsMsg, 'subject' | 'seq' | 'json'>;

function frameOf(msg: StoredEvent): { orgId: string; frame: Frame } | undefined {
  let event: ReturnType<typeof parseEvent>;
  try {
    event = parseEvent(msg.json());
  } catch {
    return undefined;
  }
  // The subject names the organization too; an event that disagrees goes to no one.
  if (!event || msg.subject !== `events.${event.org_id}.${event.type}`) return undefined;
  return {
    orgId: event.org_id,
    frame: {
      seq: msg.seq,
      type: event.type,
      bytes: Buffer.from(eventFrame(msg.seq, event.type, deliveryBody(event))),
    },
  };
}

/** One open stream. */
class Listener {
  /** The highest sequence sent; nothing at or below it is sent again. */
  last: number;
  /** Live frames held while the missed ones are read, or undefined once live. */
  held: Frame[] | undefined;
  heldBytes = 0;
  closed = false;
  /** Writes are gathered until the end of the current turn of the event loop. */
  corked = false;
  /** Whether the body is chunked (HTTP/1.1) or ends with the connection (HTTP/1.0). */
  readonly chunked: boolean;

  constructor(
    readonly orgId: string,
    readonly res: ServerResponse,
    readonly types: ReadonlySet<string> | undefined,
    readonly bufferBytes: number,
    after: number,
    resuming: boolean,
    readonly onClose: (l: Listener) => void,
    readonly onCork: (l: Listener) => void,
    readonly allowed: (() => Promise<boolean>) | undefined,
  ) {
    this.last = after;
    this.held = resuming ? [] : undefined;
    this.chunked = res.chunkedEncoding;
    res.once('close', () => this.close());
  }

  wants(frame: Frame): boolean {
    return frame.seq > this.last && (!this.types || this.types.has(frame.type));
  }

  /** A live event: sent now, or held until the missed ones are out. */
  live(frame: Frame): void {
    if (this.closed || frame.seq <= this.last) return;
    if (this.held) {
      this.held.push(frame);
      this.heldBytes += frame.bytes.length;
      if (this.heldBytes > this.bufferBytes) this.close(true);
      return;
    }
    if (this.wants(frame)) this.send(frame);
  }

  send(frame: Frame): void {
    if (this.closed) return;
    if (frame.seq > this.last) this.last = frame.seq;
    this.write(frame);
  }

  /** Bytes written that the socket has not sent yet. */
  get waiting(): number {
    return this.res.socket?.writableLength ?? 0;
  }

  /**
   * Writes straight to the socket, framed as the response's body is: the same bytes go to a
   * thousand streams, and the HTTP layer's own framing of each write costs more than the write.
   * The response still ends the body (`res.end()` writes the last chunk).
   */
  write(piece: Piece): void {
    if (this.closed) return;
    const socket = this.res.socket;
    if (!socket || socket.destroyed) {
      this.close(true);
      return;
    }
    if (!this.corked) {
      // Events that arrive together leave in one write to the socket, not one each.
      this.corked = true;
      socket.cork();
      this.onCork(this);
    }
    if (this.chunked) {
      piece.chunk ??= chunkOf(piece.bytes);
      socket.write(piece.chunk);
    } else {
      socket.write(piece.bytes);
    }
    // What the socket has not taken yet stays in memory: past the limit the client is too slow.
    if (socket.writableLength > this.bufferBytes) this.close(true);
  }

  /** The missed events are out: the held live ones follow, without repeats. */
  goLive(): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.heldBytes = 0;
    for (const frame of held) if (this.wants(frame)) this.send(frame);
  }

  close(abort = false): void {
    if (this.closed) return;
    this.closed = true;
    this.held = undefined;
    this.onClose(this);
    if (abort) this.res.destroy();
    else this.res.end();
  }

  /** Resolves once what was written has reached the socket, or the stream has closed. */
  async drained(): Promise<void> {
    this.uncork();
    const socket = this.res.socket;
    if (this.closed || !socket || socket.writableLength === 0) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        socket.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      socket.on('drain', done);
      this.res.on('close', done);
    });
  }

  uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    this.res.socket?.uncork();
  }
}

export interface OpenStream {
  orgId: string;
  res: ServerResponse;
  /** Only these event types; undefined for all. */
  types: ReadonlySet<string> | undefined;
  /** The sequence of the `Last-Event-ID`, when the client resumes. */
  lastEventId: number | undefined;
  /**
   * Whether the credential that opened the stream still allows it (not signed out, revoked,
   * expired, removed from the organization or stripped of the scope); asked at every keep-alive
   * and at every revocation heard, and the stream ends when it answers false. Undefined: always.
   */
  allowed?: () => Promise<boolean>;
}

export interface EventStreams {
  /** Starts sending an organization's events on `res`, whose headers are written already. */
  open(stream: OpenStream): Promise<void>;
  /**
   * Asks every open stream's {@link OpenStream.allowed} again, and ends the streams it no longer
   * allows: called when a key or session is revoked.
   */
  recheck(): void;
  /** Open streams, for metrics and tests. */
  readonly size: number;
  /** Resolves once the feed reads `EVENTS`; rejects after `readyTimeoutMs`. */
  ready(): Promise<void>;
  /** Ends every stream cleanly (clients reconnect elsewhere) and stops the feed. */
  close(): Promise<void>;
}

export function createEventStreams(deps: {
  nc: NatsConnection;
  clock: Clock;
  logger: Logger;
  options?: Partial<EventStreamOptions>;
}): EventStreams {
  const options = { ...DEFAULT_EVENT_STREAM_OPTIONS, ...deps.options };
  const { logger } = deps;
  const byOrg = new Map<string, Set<Listener>>();
  let count = 0;
  let closed = false;
  const corked = new Set<Listener>();
  let flushing: NodeJS.Immediate | undefined;
  const flush = () => {
    flushing = undefined;
    for (const l of corked) l.uncork();
    corked.clear();
  };
  const cork = (l: Listener) => {
    corked.add(l);
    flushing ??= setImmediate(flush);
  };
  /** The last sequence of `EVENTS` the feed has handed out. */
  let fed = 0;
  let jsm: JetStreamManager | undefined;

  const remove = (l: Listener) => {
    const set = byOrg.get(l.orgId);
    if (set?.delete(l)) {
      count--;
      if (set.size === 0) byOrg.delete(l.orgId);
    }
  };

  /** The feed while it runs: `started` resolves once it reads `EVENTS` from `fed` on. */
  interface Feed {
    started: Promise<void>;
    stop(): Promise<void>;
  }
  let feed: Feed | undefined;
  /** A feed being stopped, which a new one waits for. */
  let stopping: Promise<void> | undefined;

  /** Starts reading `EVENTS` from its last stored event on, through one ordered consumer. */
  function startFeed(): Feed {
    let stopped = false;
    let consumer: Consumer | undefined;
    let messages: ConsumerMessages | undefined;
    let loop: Promise<void> | undefined;
    const started = (async () => {
      // The services create the stream; a gateway that starts first waits for it.
      for (let attempt = 1; ; attempt++) {
        try {
          jsm ??= await jetstreamManager(deps.nc);
          fed = (await jsm.streams.info(STREAM)).state.last_seq;
          break;
        } catch (err) {
          if (stopped) return;
          if (attempt % 10 === 1) logger.warn({ err }, 'the event feed is waiting for its stream');
          await new Promise((r) => setTimeout(r, Math.min(5_000, 250 * attempt)));
        }
      }
      if (stopped) return;
      const js = jetstream(deps.nc);
      loop = (async () => {
        while (!stopped) {
          try {
            consumer = await js.consumers.get(STREAM, {
              filter_subjects: 'events.>',
              opt_start_seq: fed + 1,
            });
            if (stopped) break;
            const iter = await consumer.consume({ max_messages: 256 });
            messages = iter;
            for await (const msg of iter) {
              fed = msg.seq;
              // Events of organizations with no stream open here are not even read
              // (`events.<org>.<type>`).
              if (!byOrg.has(msg.subject.split('.', 2)[1] ?? '')) continue;
              const item = frameOf(msg);
              if (!item) continue;
              const set = byOrg.get(item.orgId);
              if (set) for (const l of set) l.live(item.frame);
            }
            // The consumer went away without an error (deleted, say): a new one goes on from
            // `fed`.
            if (!stopped) await new Promise((r) => setTimeout(r, 1_000));
          } catch (err) {
            if (stopped) break;
            logger.warn({ err }, 'event feed failed; restarting');
            await new Promise((r) => setTimeout(r, 1_000));
          }
        }
      })();
    })();
    started.catch((err) => logger.error({ err }, 'the event feed did not start'));
    return {
      started,
      async stop() {
        stopped = true;
        await started.catch(() => undefined);
        await messages?.close();
        await loop;
        // The server would keep an ordered consumer for minutes after its last pull.
        await consumer?.delete().catch(() => undefined);
      },
    };
  }

  /** The running feed, started (after one being stopped ends) if none runs. */
  async function runningFeed(): Promise<Feed> {
    while (!feed) {
      if (closed) throw new Error('the event streams are closed');
      if (stopping) {
        await stopping;
        continue;
      }
      feed = startFeed();
    }
    return feed;
  }

  /** Stops the feed: with no stream open here, no event needs reading. */
  function stopFeed(): void {
    const running = feed;
    if (!running) return;
    feed = undefined;
    const done: Promise<void> = running.stop().finally(() => {
      if (stopping === done) stopping = undefined;
    });
    stopping = done;
  }

  let checking: Promise<void> | undefined;
  let checkAgain = false;
  /** Ends the streams whose credential no longer allows them; one pass at a time. */
  const recheck = (): void => {
    if (checking) {
      checkAgain = true;
      return;
    }
    checking = (async () => {
      do {
        checkAgain = false;
        const open = [...byOrg.values()].flatMap((set) => [...set]);
        await Promise.all(
          open.map(async (l) => {
            // A check that cannot be made now (the accounts service restarting) ends nothing.
            if (!l.allowed || (await l.allowed().catch(() => true)) || l.closed) return;
            logger.info(
              { org_id: l.orgId },
              'event stream ended: its key or session no longer allows it',
            );
            l.close();
          }),
        );
      } while (checkAgain && !closed);
    })().finally(() => {
      checking = undefined;
    });
  };

  /** Whether no stream was open at the last keep-alive tick too. */
  let idleTick = false;
  const keepAlive = setInterval(() => {
    for (const set of byOrg.values()) for (const l of set) l.write(KEEP_ALIVE);
    recheck();
    // The feed stops once no stream has been open for a whole keep-alive interval, so that a
    // client reconnecting at once finds it running.
    if (count === 0 && idleTick) stopFeed();
    idleTick = count === 0;
  }, options.keepAliveMs);
  keepAlive.unref();

  const ready = () =>
    new Promise<void>((resolve, reject) => {
      if (closed) {
        reject(new Error('the event streams are closed'));
        return;
      }
      const timer = setTimeout(
        () => reject(new Error('the event feed has not started')),
        options.readyTimeoutMs,
      );
      runningFeed()
        .then((f) => f.started)
        .then(
          () => {
            clearTimeout(timer);
            resolve();
          },
          (err) => {
            clearTimeout(timer);
            reject(err);
          },
        );
    });

  /** The organization's first stored event at or after `seq`, if any. */
  async function nextOf(orgId: string, seq: number): Promise<StoredMsg | null> {
    if (!jsm) throw new Error('the event feed has not started');
    // STREAM.MSG.GET takes `next_by_subj` (nats-server 2.9+), which the client's type omits.
    const query = { seq, next_by_subj: `events.${orgId}.>` } as unknown as MsgRequest;
    return jsm.streams.getMessage(STREAM, query);
  }

  /**
   * Sends the organization's events after `after` that are under a day old, up to `until`, the
   * feed's position when the stream opened; the live feed has held everything after it.
   */
  async function replay(l: Listener, after: number, until: number): Promise<void> {
    if (!jsm) throw new Error('the event feed has not started');
    const cutoff = deps.clock.now().getTime() - RESUME_WINDOW_MS;
    const state = (await jsm.streams.info(STREAM)).state;
    let start: { opt_start_seq: number } | { opt_start_time: string };
    if (after > state.last_seq) {
      // An id from before the stream was recreated: it orders nothing now, so a day is sent.
      l.last = 0;
      start = { opt_start_time: new Date(cutoff).toISOString() };
    } else {
      const at =
        after >= state.first_seq
          ? await jsm.streams
              .getMessage(STREAM, { seq: after })
              .then((m) => m?.time.getTime())
              .catch(() => undefined)
          : undefined;
      start =
        at !== undefined && at >= cutoff
          ? { opt_start_seq: after + 1 }
          : { opt_start_time: new Date(cutoff).toISOString() };
    }
    const info = await jsm.consumers.add(STREAM, {
      filter_subject: `events.${l.orgId}.>`,
      ack_policy: AckPolicy.None,
      mem_storage: true,
      num_replicas: 1,
      inactive_threshold: nanos(60_000),
      ...('opt_start_seq' in start
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start.opt_start_seq }
        : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: start.opt_start_time }),
    });
    try {
      const consumer = await jetstream(deps.nc).consumers.get(STREAM, info.name);
      /** The last sequence the replay read; the live feed sends what comes after `until`. */
      let read = 'opt_start_seq' in start ? start.opt_start_seq - 1 : undefined;
      let more = info.num_pending > 0;
      /** Set when the consumer stops short of what is stored: the rest is read one by one. */
      let byOne = false;
      const deliver = async (msg: StoredEvent, at: number) => {
        read = msg.seq;
        if (at < cutoff) return;
        const item = frameOf(msg);
        if (item && item.orgId === l.orgId && l.wants(item.frame)) {
          l.send(item.frame);
          // A day of events is read no faster than the client takes them.
          if (l.waiting > options.bufferBytes / 2) await l.drained();
        }
      };
      while (!l.closed) {
        if (!more) {
          // The consumer's count of what is left is only a hint: nats-server 2.9 can stop a
          // filtered consumer short of the last stored events. The stream itself settles it.
          if (read === undefined || read >= until) break;
          const next = await nextOf(l.orgId, read + 1);
          if (!next || next.seq > until) break;
          if (byOne) {
            await deliver(next, next.time.getTime());
            continue;
          }
        }
        const batch = await consumer.fetch({ max_messages: 256, expires: 1_000 });
        let got = 0;
        more = false;
        for await (const msg of batch) {
          got++;
          await deliver(msg, msg.time.getTime());
          if (l.closed || msg.seq >= until) break;
          if (msg.info.pending === 0) break;
          if (got === 256) more = true;
        }
        if (got === 0) byOne = true;
      }
    } finally {
      await jsm.consumers.delete(STREAM, info.name).catch(() => undefined);
    }
  }

  return {
    get size() {
      return count;
    },
    ready,
    async open(stream) {
      if (closed) {
        stream.res.end();
        return;
      }
      if (stream.res.destroyed) return;
      // The route waited for the feed; had it stopped since (no stream open for a while), it
      // starts again here, and the stream starts where it does.
      const running = await runningFeed().catch(() => undefined);
      await running?.started;
      if (!running || closed) {
        stream.res.end();
        return;
      }
      if (stream.res.destroyed) return;
      const resuming = stream.lastEventId !== undefined;
      // Everything after this the feed hands to the listener; a replay reads up to it.
      const until = fed;
      const l = new Listener(
        stream.orgId,
        stream.res,
        stream.types,
        options.bufferBytes,
        // A new stream starts with what happens after it opened.
        stream.lastEventId ?? until,
        resuming,
        remove,
        cork,
        stream.allowed,
      );
      let set = byOrg.get(l.orgId);
      if (!set) {
        set = new Set();
        byOrg.set(l.orgId, set);
      }
      set.add(l);
      count++;
      if (!resuming) return;
      try {
        await replay(l, stream.lastEventId as number, until);
        l.goLive();
      } catch (err) {
        logger.warn({ err }, 'could not send the missed events; closing the stream');
        l.close(true);
      }
    },
    recheck,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(keepAlive);
      if (flushing) clearImmediate(flushing);
      flush();
      for (const set of [...byOrg.values()]) for (const l of [...set]) l.close();
      // A feed still waiting for its stream gives up once stopped.
      stopFeed();
      await stopping;
    },
  };
}
