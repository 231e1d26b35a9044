/**
 * Stations whose links died with their replica. A replica that ends cleanly records each of its
 * links closed; one that is killed (or loses its node) records nothing, and its stations would
 * read online until their agents linked again, for ever if they never did. So every replica says
 * it is alive in `station_replicas` each {@link REPLICA_BEAT_MS}, names itself in the link ids it
 * writes, and at each beat the live replica of the smallest id records closed, as their own
 * replica would have, the links of replicas not heard from for {@link REPLICA_LOST_MS}: the
 * stations go offline and `station.offline` is sent. A link that opened again meanwhile,
 * anywhere, is left alone (the close is conditional on the link id). A replica that was alive all
 * along but could not reach the database for that long finds its stations recorded offline at its
 * links' next re-read, and records them online again (`linksStillOpen`), saying it is alive in
 * the same transaction. A replica never heard from is not taken for lost. Should the sweeping
 * replica keep saying it is alive while its sweeps fail, nobody else sweeps until it stops. Times
 * come from the injected clock; tests call {@link ReplicaWatch.beat}.
 *
 * Each beat also says whether the replica can store its stations' reports in NATS now
 * ({@link ReportsHealth}). A link whose report cannot be stored for a while ends, so that its agent
 * links again, to a replica that can, only while another replica says it can: in a NATS outage
 * that every replica shares, ending links would take stations offline and back for nothing.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { type NatsConnection, natsConnected, onConnectionLost } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { OpenLink } from './link-station.js';
import type { LinkPresence } from './presence.js';
import type { ReplicaRecords } from './replica-records.js';

/** How often a replica says it is alive, and looks for lost ones. */
export const REPLICA_BEAT_MS = 15_000;

/**
 * A replica not heard from for this long is taken for lost. Four beats: a replica is not taken
 * for lost over a slow beat or two, nor over clocks apart by less than the difference.
 */
export const REPLICA_LOST_MS = 4 * REPLICA_BEAT_MS;

/** How long one read of whether another replica takes reports answers every link that asks. */
const REPORTS_ANSWER_MS = 5_000;

/** Replicas not heard from for this long are forgotten. */
const REPLICA_FORGET_MS = 24 * 60 * 60 * 1000;

/** Links of lost replicas recorded closed per beat at most; the next beat takes the rest. */
const SWEEP_LIMIT = 1000;

export interface ReplicaWatchOptions {
  store: ReplicaRecords & Pick<LinkPresence, 'linkClosed'>;
  /** Whether this replica can store its stations' reports now; yes unless given. */
  takesReports?: () => boolean;
  clock: Clock;
  logger: Logger;
  /** Defaults to {@link REPLICA_BEAT_MS}; tests that call `beat` themselves make it long. */
  beatMs?: number;
}

export class ReplicaWatch {
  /** This replica's id, the first part of each link id it writes. */
  readonly id = randomUUID();
  readonly #options: ReplicaWatchOptions;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<number> | undefined;
  /** When the beat under way began (`performance.now()`). */
  #beganAt = 0;
  /** The last answer of {@link ReplicaWatch.anotherTakesReports}, and when (by the clock). */
  #takesReports: { at: number; answer: Promise<boolean> } | undefined;

  constructor(options: ReplicaWatchOptions) {
    this.#options = options;
  }

  /**
   * Whether another replica, alive, could store its stations' reports at its last beat: a link
   * whose reports this one cannot store then ends, for its agent to link again.
   */
  anotherTakesReports(): Promise<boolean> {
    // Every link with a report waiting asks at the end of its window: in an outage, thousands
    // within seconds. One read answers them all for a while; the beats it reads are 15 s apart.
    const { store, clock } = this.#options;
    const now = clock.now().getTime();
    if (this.#takesReports && now - this.#takesReports.at < REPORTS_ANSWER_MS) {
      return this.#takesReports.answer;
    }
    const since = new Date(now - REPLICA_LOST_MS);
    const answer = store.anotherReplicaTakesReports(this.id, since);
    this.#takesReports = { at: now, answer };
    answer.catch(() => {
      if (this.#takesReports?.answer === answer) this.#takesReports = undefined;
    });
    return answer;
  }

  /** A new link id of this replica's. */
  linkId(): string {
    return `${this.id}:${randomUUID()}`;
  }

  start(): void {
    void this.beat();
    this.#timer = setInterval(() => void this.beat(), this.#options.beatMs ?? REPLICA_BEAT_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /**
   * Says this replica is alive, then records closed the links of the replicas lost; resolves to
   * how many stations that took offline. A beat under way is joined, not doubled, unless it has
   * taken longer than a beat's period (a query on a connection that died without a word): the
   * replica must not fall silent, and be taken for lost, behind it.
   */
  beat(): Promise<number> {
    const period = this.#options.beatMs ?? REPLICA_BEAT_MS;
    if (this.#beating && performance.now() - this.#beganAt < period) return this.#beating;
    this.#beganAt = performance.now();
    const beating = this.#beat().finally(() => {
      if (this.#beating === beating) this.#beating = undefined;
    });
    this.#beating = beating;
    return beating;
  }

  async #beat(): Promise<number> {
    const { store, clock, logger } = this.#options;
    const now = clock.now();
    try {
      await store.replicaSeen(this.id, now, this.#options.takesReports?.() ?? true);
      await store.forgetReplicas(new Date(now.getTime() - REPLICA_FORGET_MS));
      const lost = await store.linksOfLostReplicas(
        this.id,
        new Date(now.getTime() - REPLICA_LOST_MS),
        SWEEP_LIMIT,
      );
      if (lost.length === 0) return 0;
      const closed = await Promise.all(lost.map((l) => store.linkClosed(l.station, l.linkId)));
      const offline = closed.filter(Boolean).length;
      logger.warn(
        { stations: offline, replicas: replicasOf(lost) },
        'recorded offline the stations of stations replicas not heard from for a minute',
      );
      return offline;
    } catch (err) {
      logger.warn({ err }, 'could not say this stations replica is alive; will try again');
      return 0;
    }
  }
}

/** The replicas the links were on. */
function replicasOf(links: OpenLink[]): string[] {
  return [...new Set(links.map((l) => l.linkId.split(':')[0] as string))];
}

/**
 * Whether this replica can store its stations' reports in NATS now: its connection is up, and the
 * last report it tried to publish was stored (or the connection came back since it was not).
 */
export class ReportsHealth {
  readonly #nc: NatsConnection;
  #refused = false;
  readonly #unwatch: () => void;

  constructor(nc: NatsConnection) {
    this.#nc = nc;
    this.#unwatch = onConnectionLost(nc, (back) => {
      if (back) this.#refused = false;
    });
  }

  get ok(): boolean {
    return natsConnected(this.#nc) && !this.#refused;
  }

  stored(): void {
    this.#refused = false;
  }

  refused(): void {
    this.#refused = true;
  }

  stop(): void {
    this.#unwatch();
  }
}
