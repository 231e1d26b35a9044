/**
 * The delivery worker: works in rounds, one at a time, each one transaction that records the
 * outcomes of the attempts that finished since the last round (and the next attempt's time) and
 * claims as many due deliveries as there is room for. Attempts are sent outside any transaction.
 * The schedule lives in the database (`next_attempt_at`), so a restart loses nothing, and claims
 * use `FOR UPDATE SKIP LOCKED`, so replicas never send the same attempt. Time comes from the
 * injected clock; tests move a ManualClock and call {@link DeliveryWorker.runDue} instead of
 * waiting for the poll.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { spoolMetrics } from '../../lib/metrics.js';
import { contextFrom, inSpan, recordError, type Span, SpanKind } from '../../lib/tracing.js';
import type { AttemptResult, Sender } from './delivery.js';
import type {
  AttemptRecord,
  ClaimCandidate,
  ClaimedDelivery,
  Handover,
  Recorded,
  WebhookStore,
} from './store.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Each wait is lengthened by up to this fraction, at random, so retries do not arrive in step. */
export const RETRY_JITTER = 0.1;

/** The longest `Retry-After` honoured; a larger one counts as this. */
export const MAX_RETRY_AFTER_MS = 7 * DAY;

/** An endpoint that fails every attempt this long is disabled. */
export const FAILING_DISABLE_MS = 5 * DAY;

/** Outcomes recorded in one transaction at most. */
export const RECORD_BATCH = 256;

/**
 * Due rows a claim reads and locks beyond its room, so that it can pass over endpoints at their
 * cap; each row locked costs the database a write, so the margin is small.
 */
const CLAIM_MARGIN = 16;

/**
 * A receiver's `Retry-After` (seconds, or an HTTP date) as milliseconds from `now`; undefined when
 * absent or unreadable.
 */
export function retryAfterMs(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * SECOND, MAX_RETRY_AFTER_MS);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now.getTime()), MAX_RETRY_AFTER_MS);
}

/**
 * The wait after the `roundAttempt`-th attempt of a round failed, with jitter, and never shorter
 * than the receiver's `Retry-After`; undefined when that was the last attempt.
 */
export function retryDelayMs(
  roundAttempt: number,
  waits: readonly number[],
  options: { jitter: number; random: () => number; retryAfterMs?: number | undefined },
): number | undefined {
  const base = waits[roundAttempt - 1];
  if (base === undefined) return undefined;
  const jittered = base + Math.floor(base * options.jitter * options.random());
  return Math.max(jittered, options.retryAfterMs ?? 0);
}

export interface WorkerOptions {
  /** Only its rounds: recording outcomes and claiming. */
  store: Pick<WebhookStore, 'recordAndClaim'>;
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
}

interface PendingRecord {
  claimed: ClaimedDelivery;
  result: AttemptRecord;
  retryAt: Date | undefined;
  /** Frees the attempt's place among those claimed and not yet recorded; once. */
  release(): void;
  resolve(recorded: Recorded): void;
  reject(err: unknown): void;
}

/** Adds `n` (which may be negative) to `key`'s count, forgetting the key at zero. */
function addTo(counts: Map<string, number>, key: string, n: number): void {
  const sum = (counts.get(key) ?? 0) + n;
  if (sum === 0) counts.delete(key);
  else counts.set(key, sum);
}

/** Where an attempt goes: the caps count by endpoint and by organization. */
type Target = Pick<ClaimCandidate, 'orgId' | 'endpointId'>;

/** Attempts counted per endpoint and per organization. */
class Tally {
  readonly endpoints = new Map<string, number>();
  readonly orgs = new Map<string, number>();

  add(t: Target): void {
    addTo(this.endpoints, t.endpointId, 1);
    addTo(this.orgs, t.orgId, 1);
  }

  remove(t: Target): void {
    addTo(this.endpoints, t.endpointId, -1);
    addTo(this.orgs, t.orgId, -1);
  }

  ofEndpoint(endpointId: string): number {
    return this.endpoints.get(endpointId) ?? 0;
  }

  ofOrg(orgId: string): number {
    return this.orgs.get(orgId) ?? 0;
  }
}

/**
 * How long a fan-out event waits for room in its organization before its deliveries are added
 * due, to be claimed in rounds. Each event waiting holds one of the fan-out's places for events in
 * hand; the bound keeps an organization whose receivers are slow from holding them all, and so
 * the other organizations' events in the stream, for longer than this. A burst to receivers that
 * answer waits far less: the places turn over as fast as the attempts do.
 */
export const ADMISSION_WAIT_MS = 2_000;

/** A fan-out event waiting for room for the deliveries it may add. */
interface Admission {
  wanted: number;
  /** When it began to wait, by the worker's clock. */
  since: number;
  resolve(granted: number): void;
}

/** Room an admitted event set aside, in all and in its organization. */
export interface Admitted {
  orgId: string;
  admitted: number;
}

/** What an attempt tells the worker as it goes. */
interface AttemptHooks {
  /** The answer is in (or the request failed): its slot on the wire is free. */
  onSent(): void;
  /** Its outcome is recorded (or could not be): it no longer counts as unrecorded. */
  release(): void;
}

export interface WorkerStats {
  /** Attempts this worker sent. */
  attempts: number;
  /** Deliveries the fan-out handed over claimed, which no round had to claim. */
  handedOver: number;
}

export class DeliveryWorker {
  readonly stats: WorkerStats = { attempts: 0, handedOver: 0 };
  readonly #options: WorkerOptions & { failingDisableMs: number; random: () => number };
  /** Requests on the wire, per endpoint and organization. */
  readonly #inFlight = new Tally();
  /**
   * Attempts claimed and waiting for a slot, oldest first: as a request's answer comes in, the
   * next goes at once, without waiting for a round to claim it.
   */
  #ready: ClaimedDelivery[] = [];
  /** Attempts in `#ready`, per endpoint and organization. */
  readonly #readyOf = new Tally();
  readonly #sends = new Set<Promise<void>>();
  /** Requests on the wire in all. */
  #total = 0;
  /** Attempts sent whose outcome is not recorded yet. */
  #unrecorded = 0;
  #serial: Promise<unknown> = Promise.resolve();
  #kickQueued = false;
  #kickExpectsWork = false;
  /**
   * Due deliveries of any endpoint may be waiting in the database (as the worker starts, or after
   * a resend): those go first, through rounds, so the fan-out hands over nothing meanwhile.
   * Cleared by a round that claimed less than its room.
   */
  #dueWaiting = true;
  /**
   * Endpoints some of whose deliveries a fan-out added due (they were past their cap), each with
   * its organization: theirs go through rounds, in order, until a round that claimed less than
   * its room could take all of theirs, and a hand-over picks none of theirs meanwhile. Every other endpoint's still go
   * handed over, so one slow receiver does not send the whole worker's deliveries through rounds.
   */
  readonly #dueEndpoints = new Map<string, string>();
  /** Deliveries a fan-out picked for this worker whose transaction has not answered yet. */
  #promised = 0;
  /** Those, per endpoint and organization. */
  readonly #promisedOf = new Tally();
  /**
   * Fan-out events waiting for room ({@link DeliveryWorker.admit}), per organization, oldest
   * first; the organizations in the order they began to wait.
   */
  readonly #admissions = new Map<string, Admission[]>();
  /** Room set aside for events let through whose hand-over has not settled. */
  #admitted = 0;
  /** That room, per organization. */
  readonly #admittedOf = new Map<string, number>();
  #admitEverything = false;
  /** Outcomes waiting for the next round, which records them together. */
  #toRecord: PendingRecord[] = [];
  #settled: Array<() => void> = [];
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: WorkerOptions) {
    this.#options = {
      failingDisableMs: FAILING_DISABLE_MS,
      random: Math.random,
      ...options,
    };
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#admitWaiting();
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
      if (endpoints) for (const e of endpoints) this.#dueEndpoints.set(e.endpointId, e.orgId);
      else this.#dueWaiting = true;
      this.#admitWaiting();
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

  /**
   * The fan-out's backpressure: resolves once this worker has room for `wanted` more deliveries
   * of organization `orgId` (its whole room, and the organization's cap, at most), and answers
   * the room it sets aside for them until the hand-over that adds them settles. Events wait their
   * turn in JetStream rather than as due rows in the database, so that their deliveries go claimed
   * as they are added: first come first served within an organization, and an organization at its
   * cap holds back only its own, each event for {@link ADMISSION_WAIT_MS} at most, after which it
   * resolves setting nothing aside. It resolves at once, setting nothing aside, while due deliveries
   * may be waiting in the database (those go first, through rounds, and the event's deliveries
   * join them) and once the fan-out stops ({@link DeliveryWorker.admitAll}).
   */
  admit(wanted: number, orgId: string): Promise<number> {
    return new Promise((resolve) => {
      const admission = { wanted, since: this.#options.clock.now().getTime(), resolve };
      const waiting = this.#admissions.get(orgId);
      if (waiting) waiting.push(admission);
      else this.#admissions.set(orgId, [admission]);
      this.#admitWaiting();
    });
  }

  /** Lets every event waiting in {@link DeliveryWorker.admit}, and any later one, through at once. */
  admitAll(): void {
    this.#admitEverything = true;
    this.#admitWaiting();
  }

  #admitWaiting(): void {
    if (this.#stopped || this.#admitEverything || this.#dueWaiting) {
      for (const waiting of this.#admissions.values()) {
        for (const next of waiting) next.resolve(0);
      }
      this.#admissions.clear();
      return;
    }
    const roomMax = 2 * this.#options.concurrency;
    const orgCap = 2 * this.#options.orgConcurrency;
    // Every organization's events that waited long enough go first, whatever the room.
    const expired = this.#options.clock.now().getTime() - ADMISSION_WAIT_MS;
    for (const [orgId, waiting] of this.#admissions) {
      for (let next = waiting[0]; next && next.since <= expired; next = waiting[0]) {
        waiting.shift();
        next.resolve(0);
      }
      if (waiting.length === 0) this.#admissions.delete(orgId);
    }
    for (const [orgId, waiting] of this.#admissions) {
      for (let next = waiting[0]; next; next = waiting[0]) {
        const grant = Math.min(next.wanted, roomMax, orgCap);
        // An organization at its cap holds back its own events only.
        if (orgCap - this.#heldOfOrg(orgId) < grant) break;
        // Short of room in all, every organization waits, so that a large event is not passed
        // over for ever by smaller ones.
        if (this.#room(0) < grant) return;
        waiting.shift();
        this.#admitted += grant;
        addTo(this.#admittedOf, orgId, grant);
        next.resolve(grant);
      }
      if (waiting.length === 0) this.#admissions.delete(orgId);
    }
  }

  /**
   * Lets a fan-out claim for this worker the deliveries it is about to add, in the transaction that
   * adds them (store `fanOut`), so they go without a round claiming them. `admitted` is the room
   * {@link DeliveryWorker.admit} set aside for its events. Answers the hand-over, which picks up
   * to that room and any other left (no endpoint or organization past its cap, counting the room
   * set aside for other events), or none when stopped or while due
   * deliveries may be waiting in the database (they are older, and go first through rounds); and
   * `settle`, to call once with what the transaction claimed (nothing, if it failed), which also
   * gives back the room set aside.
   */
  handover(admissions: readonly Admitted[] = []): {
    handover: Handover | undefined;
    settle(claimed: readonly ClaimedDelivery[]): void;
  } {
    const own = new Map<string, number>();
    let admitted = 0;
    for (const a of admissions) {
      admitted += a.admitted;
      addTo(own, a.orgId, a.admitted);
    }
    const picked: Target[] = [];
    let settled = false;
    const settle = (claimed: readonly ClaimedDelivery[]) => {
      if (settled) return;
      settled = true;
      this.#admitted -= admitted;
      for (const [orgId, n] of own) addTo(this.#admittedOf, orgId, -n);
      this.#unpromise(picked);
      // Once stopped, their leases lapse and another worker (or this one, restarted) sends them.
      if (!this.#stopped) {
        this.stats.handedOver += claimed.length;
        for (const c of claimed) this.#readied(c);
        this.#sendReady();
      }
      this.#admitWaiting();
    };
    if (this.#stopped || this.#dueWaiting || this.#room(0) + admitted <= 0) {
      return { handover: undefined, settle };
    }
    const now = this.#options.clock.now();
    const handover: Handover = {
      now,
      leaseUntil: new Date(now.getTime() + this.#options.leaseMs),
      claim: randomUUID(),
      pick: (candidates) => {
        this.#unpromise(picked);
        picked.length = 0;
        const chosen = this.#pick(
          candidates.filter((c) => !this.#dueEndpoints.has(c.endpointId)),
          this.#room(0) + admitted,
          own,
        );
        for (const c of chosen) {
          picked.push(c);
          this.#promised++;
          this.#promisedOf.add(c);
        }
        return chosen.map((c) => c.id);
      },
    };
    return { handover, settle };
  }

  /**
   * The organization's endpoints changed: the attempts waiting here for a slot to an endpoint
   * deleted since (its deliveries with it) are dropped rather than sent. Those already on the wire
   * cannot be called back. `endpointsNow` reads the organization's endpoints; an endpoint created
   * while it reads has nothing waiting here, so only endpoints that had are looked for.
   */
  async endpointsChanged(
    orgId: string,
    endpointsNow: () => Promise<ReadonlySet<string>>,
  ): Promise<void> {
    if (this.#readyOf.ofOrg(orgId) === 0) return;
    const waiting = new Set(this.#ready.filter((c) => c.orgId === orgId).map((c) => c.endpointId));
    const current = await endpointsNow();
    const gone = new Set([...waiting].filter((id) => !current.has(id)));
    if (gone.size === 0) return;
    const kept: ClaimedDelivery[] = [];
    let dropped = 0;
    for (const c of this.#ready) {
      if (c.orgId === orgId && gone.has(c.endpointId)) {
        this.#readyOf.remove(c);
        dropped++;
      } else {
        kept.push(c);
      }
    }
    if (dropped === 0) return;
    this.#ready = kept;
    this.#options.logger.info(
      { org_id: orgId, endpoints: [...gone], attempts: dropped },
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
    this.#unrecorded -= n;
    for (const resolve of this.#settled.splice(0)) resolve();
    this.#admitWaiting();
  }

  /** Takes back what a hand-over promised to the endpoints listed (one entry per delivery). */
  #unpromise(targets: readonly Target[]): void {
    for (const t of targets) {
      this.#promised--;
      this.#promisedOf.remove(t);
    }
  }

  /** A delivery claimed for this worker: it waits for a slot, and counts unrecorded. */
  #readied(c: ClaimedDelivery): void {
    this.#unrecorded++;
    this.#ready.push(c);
    this.#readyOf.add(c);
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
      if (this.#total === 0 && this.#unrecorded === 0) return;
      await new Promise<void>((resolve) => this.#settled.push(resolve));
    }
  }

  /** Stops claiming and waits for the attempts claimed to be sent and recorded. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#admitWaiting();
    await this.#serial;
    // Attempts waiting for a slot go as the ones in flight finish.
    while (this.#sends.size > 0) await Promise.allSettled([...this.#sends]);
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
    const batch: PendingRecord[] = [];
    const later: PendingRecord[] = [];
    const ids = new Set<string>();
    for (const item of this.#toRecord) {
      // A second outcome of a delivery (its claim lapsed and this worker claimed it again) waits
      // for the next round.
      if (batch.length < RECORD_BATCH && !ids.has(item.claimed.id)) {
        ids.add(item.claimed.id);
        batch.push(item);
      } else {
        later.push(item);
      }
    }
    this.#toRecord = later;
    const room = this.#stopped ? 0 : this.#room(batch.length);
    if (batch.length === 0 && room <= 0) return { claimed: 0, room };
    const held = [this.#inFlight, this.#readyOf, this.#promisedOf];
    const full = [...new Set(held.flatMap((h) => [...h.endpoints.keys()]))].filter(
      (e) => this.#heldOfEndpoint(e) >= 2 * o.endpointConcurrency,
    );
    const fullOrgs = [...new Set(held.flatMap((h) => [...h.orgs.keys()]))].filter(
      (org) => this.#heldOfOrg(org) >= 2 * o.orgConcurrency,
    );
    const now = o.clock.now();
    /** Endpoints of candidates the claim left for being past a cap. */
    const skipped = new Set<string>();
    let claimed: ClaimedDelivery[];
    try {
      const round = await o.store.recordAndClaim(
        batch,
        { now, failingDisableMs: o.failingDisableMs },
        room <= 0
          ? undefined
          : {
              now,
              leaseUntil: new Date(now.getTime() + o.leaseMs),
              limit: Math.min(room + CLAIM_MARGIN, 1000),
              exclude: full,
              excludeOrgs: fullOrgs,
              maxAttempts: o.retryWaitsMs.length + 1,
              expectWork,
              pick: (candidates) => {
                const chosen = new Set(this.#pick(candidates, room).map((c) => c.id));
                for (const c of candidates) if (!chosen.has(c.id)) skipped.add(c.endpointId);
                return [...chosen];
              },
            },
      );
      // Released here, before the attempts' own code runs on: the next round's room counts them
      // recorded, where it would otherwise count a whole round's outcomes twice and claim nothing.
      for (const [i, item] of batch.entries()) {
        item.release();
        item.resolve(round.recorded[i] ?? 'lost');
      }
      for (const orgId of round.disabledIn) o.onEndpointsChanged?.(orgId);
      claimed = round.claimed;
    } catch (err) {
      for (const item of batch) {
        item.release();
        item.reject(err);
      }
      o.logger.warn({ err }, 'a webhook delivery round failed; will retry');
      return { claimed: 0, room };
    }
    // A round that filled its room likely left more due; one that did not left none it could take:
    // only the endpoints it left out or passed over for their caps may still have some.
    if (room > 0 && claimed.length >= room) {
      this.#dueWaiting = true;
    } else if (room > 0) {
      this.#dueWaiting = false;
      for (const [endpointId, orgId] of this.#dueEndpoints) {
        if (full.includes(endpointId) || fullOrgs.includes(orgId) || skipped.has(endpointId)) {
          continue;
        }
        this.#dueEndpoints.delete(endpointId);
      }
    }
    for (const c of claimed) this.#readied(c);
    this.#sendReady();
    this.#admitWaiting();
    return { claimed: claimed.length, room };
  }

  /** Sends the attempts waiting, oldest first, as far as the slots free allow. */
  #sendReady(): void {
    const o = this.#options;
    for (let i = 0; i < this.#ready.length && this.#total < o.concurrency; ) {
      const c = this.#ready[i] as ClaimedDelivery;
      if (
        this.#inFlight.ofEndpoint(c.endpointId) >= o.endpointConcurrency ||
        this.#inFlight.ofOrg(c.orgId) >= o.orgConcurrency
      ) {
        i++;
        continue;
      }
      this.#ready.splice(i, 1);
      this.#readyOf.remove(c);
      this.#send(c);
    }
  }

  #send(c: ClaimedDelivery): void {
    this.#inFlight.add(c);
    this.#total++;
    let sent = false;
    // The request's slot is free once its answer is in: the next attempt waiting goes at once,
    // and the next round claims while the outcome is recorded (the delivery stays leased until
    // then, so nobody claims it meanwhile).
    const onSent = () => {
      if (sent) return;
      sent = true;
      this.#inFlight.remove(c);
      this.#total--;
      this.#sendReady();
      this.#admitWaiting();
      this.kick();
    };
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#noLongerUnrecorded(1);
    };
    const send = this.#attempt(c, { onSent, release }).finally(() => {
      onSent();
      release();
      this.#sends.delete(send);
      this.kick();
    });
    this.#sends.add(send);
  }

  /** Attempts of an endpoint on the wire, waiting for a slot, or promised by a hand-over. */
  #heldOfEndpoint(endpointId: string): number {
    return (
      this.#inFlight.ofEndpoint(endpointId) +
      this.#readyOf.ofEndpoint(endpointId) +
      this.#promisedOf.ofEndpoint(endpointId)
    );
  }

  /** The same, over an organization's endpoints, and the room set aside for its events. */
  #heldOfOrg(orgId: string): number {
    return (
      this.#inFlight.ofOrg(orgId) +
      this.#readyOf.ofOrg(orgId) +
      this.#promisedOf.ofOrg(orgId) +
      (this.#admittedOf.get(orgId) ?? 0)
    );
  }

  /**
   * Attempts a round may claim, given the outcomes it records: up to `concurrency` on the wire
   * and as many again waiting for a slot, and no more than twice `concurrency` claimed and not
   * yet recorded, so a slow database holds sending back.
   */
  #room(recording: number): number {
    const { concurrency } = this.#options;
    const held = this.#promised + this.#admitted;
    return Math.min(
      2 * concurrency - this.#total - this.#ready.length - held,
      2 * concurrency - (this.#unrecorded - recording) - held,
    );
  }

  /**
   * Up to `room` candidates, no endpoint and no organization past twice its cap (on the wire and
   * waiting): one slow receiver, or one organization's, cannot take every slot, and an attempt
   * waits for at most one answer of its endpoint before it goes. `own` is the room a hand-over's
   * events set aside, per organization, which its picks may take.
   */
  #pick(
    candidates: ClaimCandidate[],
    room: number,
    own: ReadonlyMap<string, number> = new Map(),
  ): ClaimCandidate[] {
    const endpointCap = 2 * this.#options.endpointConcurrency;
    const orgCap = 2 * this.#options.orgConcurrency;
    const taken = new Tally();
    const out: ClaimCandidate[] = [];
    for (const c of candidates) {
      if (out.length >= room) break;
      if (this.#heldOfEndpoint(c.endpointId) + taken.ofEndpoint(c.endpointId) >= endpointCap) {
        continue;
      }
      const heldOfOrg = this.#heldOfOrg(c.orgId) - (own.get(c.orgId) ?? 0);
      if (heldOfOrg + taken.ofOrg(c.orgId) >= orgCap) continue;
      taken.add(c);
      out.push(c);
    }
    return out;
  }

  /** Sends one attempt in a span that joins the trace of the event's cause, and records it. */
  #attempt(c: ClaimedDelivery, hooks: AttemptHooks): Promise<void> {
    const attributes = {
      'spool.org.id': c.orgId,
      'spool.webhook.endpoint_id': c.endpointId,
      'spool.webhook.delivery_id': c.id,
      'spool.webhook.event_type': c.eventType,
      'spool.webhook.attempt': c.attempt,
    };
    return inSpan(
      'deliver webhook',
      { kind: SpanKind.PRODUCER, parent: contextFrom(c.traceContext), attributes },
      (span) => this.#attemptInSpan(c, span, hooks),
    );
  }

  async #attemptInSpan(c: ClaimedDelivery, span: Span, hooks: AttemptHooks): Promise<void> {
    const o = this.#options;
    const result = await o.sender.send({
      url: c.url,
      deliveryId: c.id,
      attempt: c.attempt,
      body: c.body,
      secrets: c.secrets,
      at: c.startedAt,
    });
    this.stats.attempts++;
    hooks.onSent();
    const outcome = attemptOutcome(result);
    spoolMetrics().webhookAttempts.add(1, { 'spool.webhook.outcome': outcome });
    span.setAttributes({ 'spool.webhook.outcome': outcome });
    if (result.statusCode > 0) span.setAttribute('http.response.status_code', result.statusCode);
    if (!result.succeeded) recordError(span, new Error(result.error || outcome));
    const now = o.clock.now();
    const delay = result.succeeded
      ? undefined
      : retryDelayMs(c.roundAttempt, o.retryWaitsMs, {
          jitter: o.jitter,
          random: o.random,
          retryAfterMs: retryAfterMs(result.retryAfter, now),
        });
    try {
      const recorded = await this.#record(
        c,
        result,
        delay === undefined ? undefined : new Date(now.getTime() + delay),
        hooks.release,
      );
      o.logger.debug(
        {
          deliveryId: c.id,
          endpointId: c.endpointId,
          attempt: c.attempt,
          status: result.statusCode,
          recorded,
        },
        'webhook attempt',
      );
    } catch (err) {
      // The claim lapses and the attempt is made again; its row says it was abandoned.
      o.logger.error({ err, deliveryId: c.id }, 'could not record a webhook attempt');
    }
  }

  /** Records an outcome in the next round, together with the others that finish before it. */
  #record(
    claimed: ClaimedDelivery,
    result: AttemptRecord,
    retryAt: Date | undefined,
    release: () => void,
  ) {
    return new Promise<Recorded>((resolve, reject) => {
      this.#toRecord.push({ claimed, result, retryAt, release, resolve, reject });
      this.kick();
    });
  }
}

/** How an attempt ended, for the attempts metric: succeeded, http_error or unreachable. */
function attemptOutcome(result: AttemptResult): string {
  if (result.succeeded) return 'succeeded';
  return result.statusCode > 0 ? 'http_error' : 'unreachable';
}
