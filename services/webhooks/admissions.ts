/**
 * The fan-out's backpressure: fan-out events wait here, unacknowledged in JetStream, until their
 * worker has room for the deliveries they may add (docs/webhooks.md, "Hand-over and
 * backpressure").
 */
import type { Clock } from '../../lib/clock.js';
import type { Ledger } from './ledger.js';

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

export class Admissions {
  /** Events waiting, per organization, oldest first; the organizations in the order they began to wait. */
  readonly #waiting = new Map<string, Admission[]>();
  #everything = false;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  /** Whether events go through at once, setting nothing aside (stopped, or due rows waiting). */
  readonly #bypass: () => boolean;

  constructor(ledger: Ledger, clock: Clock, bypass: () => boolean) {
    this.#ledger = ledger;
    this.#clock = clock;
    this.#bypass = bypass;
  }

  /**
   * Resolves once the worker has room for `wanted` more deliveries of organization `orgId` (its
   * whole room, and the organization's cap, at most), and answers the room it sets aside for them
   * until the hand-over that adds them settles. Events wait their turn in JetStream rather than
   * as due rows in the database, so that their deliveries go claimed as they are added: first
   * come first served within an organization, and an organization at its cap holds back only its
   * own, each event for {@link ADMISSION_WAIT_MS} at most, after which it resolves setting
   * nothing aside. It resolves at once, setting nothing aside, while due deliveries may be
   * waiting in the database (those go first, through rounds, and the event's deliveries join
   * them) and once the fan-out stops ({@link Admissions.admitAll}).
   */
  admit(wanted: number, orgId: string): Promise<number> {
    return new Promise((resolve) => {
      const admission = { wanted, since: this.#clock.now().getTime(), resolve };
      const waiting = this.#waiting.get(orgId);
      if (waiting) waiting.push(admission);
      else this.#waiting.set(orgId, [admission]);
      this.admitWaiting();
    });
  }

  /** Lets every event waiting, and any later one, through at once. */
  admitAll(): void {
    this.#everything = true;
    this.admitWaiting();
  }

  /** Lets through the events that waited too long, then those there is room for. */
  admitWaiting(): void {
    if (this.#bypass() || this.#everything) {
      for (const waiting of this.#waiting.values()) {
        for (const next of waiting) next.resolve(0);
      }
      this.#waiting.clear();
      return;
    }
    const ledger = this.#ledger;
    const roomMax = 2 * ledger.caps.concurrency;
    const orgCap = 2 * ledger.caps.orgConcurrency;
    // Every organization's events that waited long enough go first, whatever the room.
    const expired = this.#clock.now().getTime() - ADMISSION_WAIT_MS;
    for (const [orgId, waiting] of this.#waiting) {
      for (let next = waiting[0]; next && next.since <= expired; next = waiting[0]) {
        waiting.shift();
        next.resolve(0);
      }
      if (waiting.length === 0) this.#waiting.delete(orgId);
    }
    for (const [orgId, waiting] of this.#waiting) {
      for (let next = waiting[0]; next; next = waiting[0]) {
        const grant = Math.min(next.wanted, roomMax, orgCap);
        // An organization at its cap holds back its own events only.
        if (orgCap - ledger.heldOfOrg(orgId) < grant) break;
        // Short of room in all, every organization waits, so that a large event is not passed
        // over for ever by smaller ones.
        if (ledger.room(0) < grant) return;
        waiting.shift();
        ledger.setAside(orgId, grant);
        next.resolve(grant);
      }
      if (waiting.length === 0) this.#waiting.delete(orgId);
    }
  }
}
