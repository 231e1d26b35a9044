/**
 * What a delivery worker knows of the due deliveries in the database that no hand-over will give
 * it: those go first, through rounds, in order.
 */
import type { Target } from './tally.js';

export class DueDeliveries {
  /**
   * Due deliveries of any endpoint may be waiting in the database (as the worker starts, or after
   * a resend): those go first, through rounds, so the fan-out hands over nothing meanwhile.
   * Cleared by a round that claimed less than its room.
   */
  waiting = true;
  /**
   * Endpoints some of whose deliveries a fan-out added due (they were past their cap), each with
   * its organization: theirs go through rounds, in order, until a round that claimed less than
   * its room could take all of theirs, and a hand-over picks none of theirs meanwhile. Every
   * other endpoint's still go handed over, so one slow receiver does not send the whole worker's
   * deliveries through rounds.
   */
  readonly #endpoints = new Map<string, string>();

  /** New deliveries were added due: of `endpoints` only, when the caller knows them. */
  added(endpoints?: Iterable<Target>): void {
    if (endpoints) for (const e of endpoints) this.#endpoints.set(e.endpointId, e.orgId);
    else this.waiting = true;
  }

  /** Whether the endpoint's deliveries go through rounds for now. */
  has(endpointId: string): boolean {
    return this.#endpoints.has(endpointId);
  }

  /**
   * A round claimed `claimed` with `room`: one that filled its room likely left more due; one
   * that did not left none it could take: only the endpoints it left out (`full`, `fullOrgs`) or
   * passed over for their caps (`skipped`) may still have some.
   */
  roundDone(
    room: number,
    claimed: number,
    left: { endpoints: string[]; orgs: string[]; skipped: ReadonlySet<string> },
  ): void {
    if (room > 0 && claimed >= room) {
      this.waiting = true;
    } else if (room > 0) {
      this.waiting = false;
      for (const [endpointId, orgId] of this.#endpoints) {
        if (
          left.endpoints.includes(endpointId) ||
          left.orgs.includes(orgId) ||
          left.skipped.has(endpointId)
        ) {
          continue;
        }
        this.#endpoints.delete(endpointId);
      }
    }
  }
}
