/**
 * Which event types each organization's enabled endpoints want, kept in memory so that the fan-out
 * drops an event nobody wants (most often `job.created` when endpoints chose only `job.printed`)
 * without opening a transaction.
 *
 * When a new endpoint starts receiving events: the specification does not say, so Spool promises
 * that an endpoint receives every event that happens after the answer to its creation (or to the
 * change that enabled it or added the event type) arrived, whichever replica handles the event.
 * That holds without a read per event because:
 *
 * - the replica that made the change publishes `webhooks.<org>.endpoints.changed` after the change
 *   commits and waits for the NATS server to have it (a flush) before it answers; anything the
 *   caller does after the answer, such as creating the job whose event follows, reaches NATS after
 *   the notice, and every replica hears the notice before it pulls that later event from the same
 *   connection; hearing it drops the organization's entry, and any load begun before it;
 * - a replica whose NATS connection was interrupted may have missed a notice, so it drops every
 *   entry when the connection drops and again when it comes back;
 * - an entry is read again from the database after `maxAgeMs` at the latest, which heals a notice
 *   lost any other way (one the changing replica could not publish within a second, say).
 *
 * The index only ever decides that there is nothing to do. When it says an endpoint wants the
 * event, the fan-out's transaction reads the endpoints again and inserts for those enabled then, so
 * a stale entry never makes a delivery for an endpoint that was disabled or deleted.
 */
import { type NatsConnection, onConnectionLost, subjects } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { ALL_EVENTS } from './endpoints.js';

/**
 * The event types an organization's enabled endpoints chose, `*` included, each with how many
 * endpoints chose it.
 */
export type WantedEvents = ReadonlyMap<string, number>;

interface Entry {
  wanted: WantedEvents;
  loadedAt: number;
}

export interface EndpointIndexOptions {
  /** Reads the event types of the organization's enabled endpoints (one query). */
  load(orgId: string): Promise<string[][]>;
  clock: Clock;
  /** How long an entry is trusted without a notice; 30 s by default. */
  maxAgeMs?: number;
  /** Organizations kept at most; the oldest entry makes room. */
  maxEntries?: number;
}

export class EndpointIndex {
  readonly #load: EndpointIndexOptions['load'];
  readonly #clock: Clock;
  readonly #maxAgeMs: number;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, Entry>();
  readonly #loading = new Map<string, Promise<WantedEvents>>();
  /** Bumped by every invalidation; a load begun in an older epoch is not kept. */
  #epoch = 0;

  constructor(options: EndpointIndexOptions) {
    this.#load = options.load;
    this.#clock = options.clock;
    this.#maxAgeMs = options.maxAgeMs ?? 30_000;
    this.#maxEntries = options.maxEntries ?? 100_000;
  }

  /**
   * How many enabled endpoints of the organization want events of this type, as last read: 0
   * means none does; any other count may be stale, and the fan-out's transaction reads again.
   */
  async wanting(orgId: string, type: string): Promise<number> {
    const wanted = await this.#wanted(orgId);
    return (wanted.get(type) ?? 0) + (wanted.get(ALL_EVENTS) ?? 0);
  }

  /** Forgets what the index knows of one organization (its endpoints changed). */
  invalidate(orgId: string): void {
    this.#epoch++;
    this.#entries.delete(orgId);
    // A caller arriving after the notice must not share a load that may have read before it.
    this.#loading.delete(orgId);
  }

  clear(): void {
    this.#epoch++;
    this.#entries.clear();
    this.#loading.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  #wanted(orgId: string): Promise<WantedEvents> {
    const now = this.#clock.now().getTime();
    const hit = this.#entries.get(orgId);
    if (hit && now - hit.loadedAt < this.#maxAgeMs) return Promise.resolve(hit.wanted);
    if (hit) this.#entries.delete(orgId);
    const pending = this.#loading.get(orgId);
    if (pending) return pending;
    const epoch = this.#epoch;
    const load = this.#load(orgId)
      .then((lists) => {
        const wanted = new Map<string, number>();
        for (const events of lists) {
          // An endpoint that lists `*` and a type is one endpoint: `*` alone counts it.
          const types = events.includes(ALL_EVENTS) ? [ALL_EVENTS] : new Set(events);
          for (const type of types) wanted.set(type, (wanted.get(type) ?? 0) + 1);
        }
        if (epoch === this.#epoch) this.#store(orgId, { wanted, loadedAt: now });
        return wanted;
      })
      .finally(() => {
        if (this.#loading.get(orgId) === load) this.#loading.delete(orgId);
      });
    this.#loading.set(orgId, load);
    return load;
  }

  #store(orgId: string, entry: Entry): void {
    if (this.#entries.size >= this.#maxEntries) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(orgId, entry);
  }
}

/** How long a change waits for the NATS server to take its notice before answering anyway. */
const NOTICE_TIMEOUT_MS = 1_000;

/**
 * Keeps an index in step with endpoint changes made through any replica, and returns what to call
 * after a change of this replica commits (it resolves once the notice reached the NATS server, or
 * gave up trying; the change is committed either way, and the index's age bounds the rest).
 */
export function followEndpointChanges(
  nc: NatsConnection,
  index: EndpointIndex,
  logger: Logger,
  /**
   * Told of each organization whose endpoints changed, through any replica; a change made through
   * this one is announced once what it returns has settled.
   */
  onChanged: (orgId: string) => Promise<void> | void = () => {},
): { changed(orgId: string): Promise<void>; stop(): void } {
  // A callback runs as the message is read, before any message read after it is handled.
  const sub = nc.subscribe(subjects.anyWebhookEndpointsChanged, {
    callback: (err, msg) => {
      if (err) {
        logger.warn({ err }, 'endpoint change subscription error; clearing the endpoint index');
        index.clear();
        return;
      }
      const orgId = msg.subject.split('.')[1];
      if (orgId) {
        index.invalidate(orgId);
        void onChanged(orgId);
      } else {
        index.clear();
      }
    },
  });
  const stopWatching = onConnectionLost(nc, () => index.clear());
  return {
    async changed(orgId) {
      index.invalidate(orgId);
      await onChanged(orgId);
      try {
        nc.publish(subjects.webhookEndpointsChanged(orgId));
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          nc.flush(),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error('no answer from NATS in time')),
              NOTICE_TIMEOUT_MS,
            );
          }),
        ]).finally(() => clearTimeout(timer));
      } catch (err) {
        logger.warn(
          { err, orgId },
          'could not announce a webhook endpoint change; other replicas learn of it when their index entry ages out',
        );
      }
    },
    stop() {
      stopWatching();
      sub.unsubscribe();
    },
  };
}
