/**
 * The live feed of a gateway process's event streams: `EVENTS` read once, through one ordered
 * consumer of `events.>`, each event of an organization with a stream open here handed on. The
 * feed runs only while streams are open: the first starts it, and the streams stop it when none
 * is left (event-stream.ts).
 */
import {
  type Consumer,
  type ConsumerMessages,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import type { NatsConnection } from '../lib/bus.js';
import type { Logger } from '../lib/logger.js';
import { type Frame, frameOf } from './event-frames.js';

export const EVENTS_STREAM = 'EVENTS';

/** One run of the feed: `started` resolves once it reads `EVENTS` from `fed` on. */
interface Run {
  started: Promise<void>;
  stop(): Promise<void>;
}

export interface EventFeedDeps {
  nc: NatsConnection;
  logger: Logger;
  /** Whether any stream of the organization is open here; events of others are not even read. */
  wanted(orgId: string): boolean;
  /** Hands an event to the organization's open streams. */
  deliver(orgId: string, frame: Frame): void;
}

export class EventFeed {
  /** The last sequence of `EVENTS` the feed has handed out. */
  fed = 0;
  /** Set once a run has reached the stream; replays read through it. */
  jsm: JetStreamManager | undefined;
  readonly #deps: EventFeedDeps;
  #run: Run | undefined;
  /** A run being stopped, which a new one waits for. */
  #stopping: Promise<void> | undefined;
  #closed = false;

  constructor(deps: EventFeedDeps) {
    this.#deps = deps;
  }

  /** The running feed, started (after one being stopped ends) if none runs. */
  async running(): Promise<Run> {
    while (!this.#run) {
      if (this.#closed) throw new Error('the event streams are closed');
      if (this.#stopping) {
        await this.#stopping;
        continue;
      }
      this.#run = this.#start();
    }
    return this.#run;
  }

  /** Stops the feed: with no stream open here, no event needs reading. */
  stop(): void {
    const run = this.#run;
    if (!run) return;
    this.#run = undefined;
    const done: Promise<void> = run.stop().finally(() => {
      if (this.#stopping === done) this.#stopping = undefined;
    });
    this.#stopping = done;
  }

  /** Stops the feed for good; a feed still waiting for its stream gives up. */
  async close(): Promise<void> {
    this.#closed = true;
    this.stop();
    await this.#stopping;
  }

  /** Starts reading `EVENTS` from its last stored event on, through one ordered consumer. */
  #start(): Run {
    const { nc, logger } = this.#deps;
    let stopped = false;
    let consumer: Consumer | undefined;
    let messages: ConsumerMessages | undefined;
    let loop: Promise<void> | undefined;
    const started = (async () => {
      // The services create the stream; a gateway that starts first waits for it.
      for (let attempt = 1; ; attempt++) {
        try {
          this.jsm ??= await jetstreamManager(nc);
          this.fed = (await this.jsm.streams.info(EVENTS_STREAM)).state.last_seq;
          break;
        } catch (err) {
          if (stopped) return;
          if (attempt % 10 === 1) logger.warn({ err }, 'the event feed is waiting for its stream');
          await new Promise((r) => setTimeout(r, Math.min(5_000, 250 * attempt)));
        }
      }
      if (stopped) return;
      const js = jetstream(nc);
      loop = (async () => {
        while (!stopped) {
          try {
            consumer = await js.consumers.get(EVENTS_STREAM, {
              filter_subjects: 'events.>',
              opt_start_seq: this.fed + 1,
            });
            if (stopped) break;
            const iter = await consumer.consume({ max_messages: 256 });
            messages = iter;
            for await (const msg of iter) {
              this.fed = msg.seq;
              // Events of organizations with no stream open here are not even read
              // (`events.<org>.<type>`).
              if (!this.#deps.wanted(msg.subject.split('.', 2)[1] ?? '')) continue;
              const item = frameOf(msg);
              if (item) this.#deps.deliver(item.orgId, item.frame);
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
}
