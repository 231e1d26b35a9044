/**
 * The delivery worker: works in rounds, one at a time, each one transaction that records the
 * outcomes of the attempts that finished since the last round (and the next attempt's time) and
 * claims as many due deliveries as there is room for. Attempts are sent outside any transaction.
 * The schedule lives in the database (`next_attempt_at`), so a restart loses nothing, and claims
 * use `FOR UPDATE SKIP LOCKED`, so replicas never send the same attempt. Time comes from the
 * injected clock; tests move a ManualClock and call {@link DeliveryWorker.runDue} instead of
 * waiting for the poll. When to try again and when to give up is the retry policy's (policy.ts);
 * the room and caps are the ledger's (ledger.ts), the fan-out's backpressure and hand-over their
 * own modules' (admissions.ts, handover.ts).
 */
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { Admissions, type Admitted } from './admissions.js';
import { type AttemptDeps, Attempts } from './attempts.js';
import type { ClaimedDelivery } from './claims.js';
import { FAILING_DISABLE_MS } from './defaults.js';
import type { Sender } from './delivery.js';
import { DueDeliveries } from './due.js';
import { type HandingOver, handOver } from './handover.js';
import { Ledger } from './ledger.js';
import { OutcomeQueue } from './outcome-queue.js';
import { attemptsPerRound, type RetryPolicy } from './policy.js';
import type { RoundStore } from './rounds.js';
import type { Target } from './tally.js';

export { ADMISSION_WAIT_MS, type Admitted } from './admissions.js';

/** Outcomes recorded in one transaction at most. */
export const RECORD_BATCH = 256;

export interface WorkerOptions {
  /** Only its rounds: recording outcomes and claiming. */
  store: RoundStore;
  sender: Sender;
  clock: Clock;
  logger: Logger;
  /** Waits between attempts; attempts per round are one more. */
  retryWaitsMs: readonly number[];
  jitter: number;
  /** Attempts in flight at once in this worker. */
  concurrency: number;
  /** Attempts in flight at once to one endpoint in this worker. */
  endpointConcurrency: number;
  /**
   * Attempts in flight at once to one organization's endpoints in this worker, so that one
   * organization's slow receivers cannot take every slot from the others.
   */
  orgConcurrency: number;
  /**
   * How long a claim holds a delivery; a claim whose worker died lapses after it and the attempt
   * is made again. Must outlast twice the send timeout (a claimed attempt may wait for one answer
   * of its endpoint before it goes) and the recording.
   */
  leaseMs: number;
  /** How often to look for due deliveries nobody kicked the worker for. */
  pollMs: number;
  failingDisableMs?: number;
  random?: () => number;
  /** Told when recording an outcome disabled an endpoint of the organization (410, failing). */
  onEndpointsChanged?: (orgId: string) => void;
  /** Told when a round queued events in the outbox (an endpoint disabled or its failing streak changed). */
  onAnnounced?: () => void;
}

export interface WorkerStats {
  /** Attempts this worker sent. */
  attempts: number;
  /** Deliveries the fan-out handed over claimed, which no round had to claim. */
  handedOver: number;
}

export class DeliveryWorker {
  readonly stats: WorkerStats = { attempts: 0, handedOver: 0 };
  readonly #options: WorkerOptions & { random: () => number };
  readonly #policy: RetryPolicy;
  readonly #ledger: Ledger;
  readonly #due = new DueDeliveries();
  readonly #admissions: Admissions;
  readonly #attempts: Attempts;
  #serial: Promise<unknown> = Promise.resolve();
  #kickQueued = false;
  #kickExpectsWork = false;
  /** Outcomes waiting for the next round, which records them together. */
  readonly #toRecord = new OutcomeQueue();
  #settled: Array<() => void> = [];
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: WorkerOptions) {
    this.#options = { random: Math.random, ...options };
    this.#policy = {
      retryWaitsMs: options.retryWaitsMs,
      jitter: options.jitter,
      failingDisableMs: options.failingDisableMs ?? FAILING_DISABLE_MS,
    };
    this.#ledger = new Ledger(options);
    this.#admissions = new Admissions(
      this.#ledger,
      options.clock,
      () => this.#stopped || this.#due.waiting,
    );
    const deps: AttemptDeps = {
      sender: options.sender,
      clock: options.clock,
      logger: options.logger,
      policy: this.#policy,
      random: this.#options.random,
      stats: this.stats,
      // Recorded in the next round, together with the others that finish before it.
      record: (outcome) => {
        const recorded = this.#toRecord.add(outcome);
        this.kick();
        return recorded;
      },
    };
    this.#attempts = new Attempts(this.#ledger, deps, {
      answered: () => {
        this.#admissions.admitWaiting();
        this.kick();
      },
      released: () => this.#noLongerUnrecorded(1),
      finished: () => this.kick(),
    });
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#admissions.admitWaiting();
      this.kick();
    }, this.#options.pollMs);
    this.#timer.unref();
    this.kick();
  }

  /**
   * Asks for rounds now, until one claims less than its room and no outcome waits: after new
   * deliveries (`newWork`: the claim then skips the read that checks whether anything is due; of
   * `endpoints` only, when the caller knows them), when an attempt's answer is in, and when its
   * outcome is ready to record. Once stopped, rounds only record.
   */
  kick(newWork = false, endpoints?: Iterable<Target>): void {
    if (newWork) {
      this.#kickExpectsWork = true;
      this.#due.added(endpoints);
      this.#admissions.admitWaiting();
    }
    if (this.#kickQueued) return;
    this.#kickQueued = true;
    void this.#exclusive(async () => {
      this.#kickQueued = false;
      let expectWork = this.#kickExpectsWork;
      this.#kickExpectsWork = false;
      for (;;) {
        const { claimed, room } = await this.#round(expectWork);
        if (claimed === 0 && this.#toRecord.length === 0) break;
        // A round that filled the room likely left more due: the next one claims without checking.
        expectWork = claimed > 0 && claimed >= room;
      }
    });
  }

  /** The fan-out's backpressure ({@link Admissions.admit}). */
  admit(wanted: number, orgId: string): Promise<number> {
    return this.#admissions.admit(wanted, orgId);
  }

  /** Lets every event waiting in {@link DeliveryWorker.admit}, and any later one, through at once. */
  admitAll(): void {
    this.#admissions.admitAll();
  }

  /**
   * Lets a fan-out claim for this worker the deliveries it is about to add, in the transaction that
   * adds them (store `fanOut`), so they go without a round claiming them. `admitted` is the room
   * {@link DeliveryWorker.admit} set aside for its events. Picks none when stopped or while due
   * deliveries may be waiting in the database (they are older, and go first through rounds).
   */
  handover(admissions: readonly Admitted[] = []): HandingOver {
    return handOver(this.#ledger, admissions, {
      now: () => this.#options.clock.now(),
      leaseMs: this.#options.leaseMs,
      closed: this.#stopped || this.#due.waiting,
      isDue: (endpointId) => this.#due.has(endpointId),
      settled: (claimed) => {
        // Once stopped, their leases lapse and another worker (or this one, restarted) sends them.
        if (!this.#stopped) {
          this.stats.handedOver += claimed.length;
          for (const c of claimed) this.#ledger.readied(c);
          this.#attempts.sendReady();
        }
        this.#admissions.admitWaiting();
      },
    });
  }

  /**
   * The organization's endpoints changed: the attempts waiting here for a slot to an endpoint
   * deleted since (its deliveries with it) are dropped rather than sent. Those already on the wire
   * cannot be called back. `endpointsNow` reads the organization's endpoints.
   */
  async endpointsChanged(
    orgId: string,
    endpointsNow: () => Promise<ReadonlySet<string>>,
  ): Promise<void> {
    const { gone, dropped } = await this.#ledger.dropDeleted(orgId, endpointsNow);
    if (dropped === 0) return;
    this.#options.logger.info(
      { org_id: orgId, endpoints: gone, attempts: dropped },
      'webhook attempts waiting for deleted endpoints dropped',
    );
    this.#noLongerUnrecorded(dropped);
    this.kick();
  }

  /**
   * `n` attempts no longer wait to be recorded (recorded, given up on, or dropped unsent): their
   * room is free, and `runDue` looks again.
   */
  #noLongerUnrecorded(n: number): void {
    this.#ledger.unrecorded -= n;
    for (const resolve of this.#settled.splice(0)) resolve();
    this.#admissions.admitWaiting();
  }

  /**
   * Sends every attempt that is due now, and resolves when a round finds nothing this worker can
   * take and none of its attempts is in flight or unrecorded. Deliveries another replica holds are
   * that replica's to finish. Due rows locked by another replica's claim at that moment count as
   * held, though that claim may take only some of them: the rest go to whichever worker claims
   * next, this one perhaps, on its next poll, after this has resolved.
   */
  async runDue(): Promise<void> {
    for (;;) {
      const { claimed } = await this.#exclusive(() => this.#round());
      if (claimed > 0 || this.#toRecord.length > 0) continue;
      if (this.#ledger.total === 0 && this.#ledger.unrecorded === 0) return;
      await new Promise<void>((resolve) => this.#settled.push(resolve));
    }
  }

  /** Stops claiming and waits for the attempts claimed to be sent and recorded. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#admissions.admitWaiting();
    await this.#serial;
    await this.#attempts.settled();
  }

  /** Rounds run one at a time, so the in-flight counts they read are exact. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#serial.then(fn);
    this.#serial = run.catch(() => undefined);
    return run;
  }

  /**
   * One round: the outcomes waiting (up to RECORD_BATCH, a delivery once) recorded and, unless
   * stopped, due deliveries claimed up to the room left, in one transaction; then the claimed
   * attempts are sent. Answers how many it claimed and the room it had.
   */
  async #round(expectWork = false): Promise<{ claimed: number; room: number }> {
    const o = this.#options;
    const ledger = this.#ledger;
    const batch = this.#toRecord.take(RECORD_BATCH);
    const room = this.#stopped ? 0 : ledger.room(batch.length);
    if (batch.length === 0 && room <= 0) return { claimed: 0, room };
    const full = ledger.full();
    const now = o.clock.now();
    /** Endpoints of candidates the claim left for being past a cap. */
    const skipped = new Set<string>();
    let claimed: ClaimedDelivery[];
    try {
      const round = await o.store.recordAndClaim(
        batch,
        { now, failingDisableMs: this.#policy.failingDisableMs },
        room <= 0
          ? undefined
          : ledger.claimInput(room, full, skipped, {
              now,
              leaseUntil: new Date(now.getTime() + o.leaseMs),
              maxAttempts: attemptsPerRound(this.#policy),
              expectWork,
            }),
      );
      // Released here, before the attempts' own code runs on: the next round's room counts them
      // recorded, where it would otherwise count a whole round's outcomes twice and claim nothing.
      for (const [i, item] of batch.entries()) {
        item.release();
        item.resolve(round.recorded[i] ?? 'lost');
      }
      for (const orgId of round.disabledIn) o.onEndpointsChanged?.(orgId);
      if (round.announced) o.onAnnounced?.();
      claimed = round.claimed;
    } catch (err) {
      for (const item of batch) {
        item.release();
        item.reject(err);
      }
      o.logger.warn({ err }, 'a webhook delivery round failed; will retry');
      return { claimed: 0, room };
    }
    this.#due.roundDone(room, claimed.length, { ...full, skipped });
    for (const c of claimed) ledger.readied(c);
    this.#attempts.sendReady();
    this.#admissions.admitWaiting();
    return { claimed: claimed.length, room };
  }
}
