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
import type { NatsConnection } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { EventFeed } from './event-feed.js';
import { KEEP_ALIVE } from './event-frames.js';
import { Listener } from './event-listener.js';
import { replay } from './event-replay.js';

export { eventFrame, parseEventId } from './event-frames.js';
export { RESUME_WINDOW_MS } from './event-replay.js';

export interface EventStreamOptions {
  /** Milliseconds between keep-alive comments (DESIGN §5: 15 seconds). */
  keepAliveMs: number;
  /** Bytes that may wait for one slow client before its stream is closed. */
  bufferBytes: number;
  /** Longest a new stream waits for this process's feed to start before answering 503. */
  readyTimeoutMs: number;
  /**
   * Streams one key or signed-in person (STREAMS_PER_CREDENTIAL), and one organization
   * (STREAMS_PER_ORG), may hold open at once on this replica. A stream holds a connection for as
   * long as the client likes; without a bound, one key could take every file descriptor of a
   * replica, one request a stream.
   */
  streamsPerCredential: number;
  streamsPerOrg: number;
}

export const DEFAULT_EVENT_STREAM_OPTIONS: EventStreamOptions = {
  keepAliveMs: 15_000,
  bufferBytes: 1024 * 1024,
  readyTimeoutMs: 5_000,
  streamsPerCredential: 20,
  streamsPerOrg: 100,
};

/** The bounds on open streams a replica enforces when a stream is asked for. */
export type StreamLimits = Pick<EventStreamOptions, 'streamsPerCredential' | 'streamsPerOrg'>;

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
  /** How many may be open at once, by key or person and by organization. */
  readonly limits: StreamLimits;
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
  const feed = new EventFeed({
    nc: deps.nc,
    logger,
    wanted: (orgId) => byOrg.has(orgId),
    deliver: (orgId, frame) => {
      const set = byOrg.get(orgId);
      if (set) for (const l of set) l.live(frame);
    },
  });

  const add = (l: Listener) => {
    let set = byOrg.get(l.orgId);
    if (!set) {
      set = new Set();
      byOrg.set(l.orgId, set);
    }
    set.add(l);
    count++;
  };

  const remove = (l: Listener) => {
    const set = byOrg.get(l.orgId);
    if (set?.delete(l)) {
      count--;
      if (set.size === 0) byOrg.delete(l.orgId);
    }
  };

  const recheck = rechecker(
    () => [...byOrg.values()].flatMap((set) => [...set]),
    logger,
    () => closed,
  );

  /** Whether no stream was open at the last keep-alive tick too. */
  let idleTick = false;
  const keepAlive = setInterval(() => {
    for (const set of byOrg.values()) for (const l of set) l.write(KEEP_ALIVE);
    recheck();
    // The feed stops once no stream has been open for a whole keep-alive interval, so that a
    // client reconnecting at once finds it running.
    if (count === 0 && idleTick) feed.stop();
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
      feed
        .running()
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

  return {
    get size() {
      return count;
    },
    limits: {
      streamsPerCredential: options.streamsPerCredential,
      streamsPerOrg: options.streamsPerOrg,
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
      const running = await feed.running().catch(() => undefined);
      await running?.started;
      if (!running || closed) {
        stream.res.end();
        return;
      }
      if (stream.res.destroyed) return;
      const resuming = stream.lastEventId !== undefined;
      // Everything after this the feed hands to the listener; a replay reads up to it.
      const until = feed.fed;
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
      add(l);
      if (!resuming) return;
      try {
        const replayDeps = {
          nc: deps.nc,
          clock: deps.clock,
          jsm: feed.jsm,
          bufferBytes: options.bufferBytes,
        };
        await replay(replayDeps, l, stream.lastEventId as number, until);
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
      await feed.close();
    },
  };
}

/**
 * Ends the streams whose credential no longer allows them; one pass at a time, and one more after
 * it when asked again meanwhile.
 */
function rechecker(open: () => Listener[], logger: Logger, closed: () => boolean): () => void {
  let checking: Promise<void> | undefined;
  let checkAgain = false;
  return () => {
    if (checking) {
      checkAgain = true;
      return;
    }
    checking = (async () => {
      do {
        checkAgain = false;
        await Promise.all(
          open().map(async (l) => {
            // A check that cannot be made now (the accounts service restarting) ends nothing.
            if (!l.allowed || (await l.allowed().catch(() => true)) || l.closed) return;
            logger.info(
              { org_id: l.orgId },
              'event stream ended: its key or session no longer allows it',
            );
            l.close();
          }),
        );
      } while (checkAgain && !closed());
    })().finally(() => {
      checking = undefined;
    });
  };
}
