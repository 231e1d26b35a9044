/**
 * What a delivery worker holds, per endpoint and organization: attempts on the wire, attempts
 * claimed and waiting for a slot, deliveries a fan-out's hand-over promised it, room set aside
 * for fan-out events, and attempts not yet recorded. From these come the room a round may claim
 * and which candidates it may take, within the caps.
 */
import type { ClaimCandidate, ClaimedDelivery, ClaimInput } from './claims.js';
import { addTo, Tally, type Target } from './tally.js';

/**
 * Due rows a claim reads and locks beyond its room, so that it can pass over endpoints at their
 * cap; each row locked costs the database a write, so the margin is small.
 */
const CLAIM_MARGIN = 16;

/** The worker's caps on attempts in flight. */
export interface Caps {
  /** Attempts in flight at once in this worker. */
  concurrency: number;
  /** Attempts in flight at once to one endpoint in this worker. */
  endpointConcurrency: number;
  /** Attempts in flight at once to one organization's endpoints in this worker. */
  orgConcurrency: number;
}

export class Ledger {
  /** Requests on the wire, per endpoint and organization. */
  readonly inFlight = new Tally();
  /** Requests on the wire in all. */
  total = 0;
  /**
   * Attempts claimed and waiting for a slot, oldest first: as a request's answer comes in, the
   * next goes at once, without waiting for a round to claim it.
   */
  ready: ClaimedDelivery[] = [];
  /** Attempts in `ready`, per endpoint and organization. */
  readonly readyOf = new Tally();
  /** Attempts sent whose outcome is not recorded yet. */
  unrecorded = 0;
  /** Deliveries a fan-out picked for this worker whose transaction has not answered yet. */
  promised = 0;
  /** Those, per endpoint and organization. */
  readonly promisedOf = new Tally();
  /** Room set aside for fan-out events let through whose hand-over has not settled. */
  admitted = 0;
  /** That room, per organization. */
  readonly admittedOf = new Map<string, number>();

  constructor(readonly caps: Caps) {}

  /** A delivery claimed for this worker: it waits for a slot, and counts unrecorded. */
  readied(c: ClaimedDelivery): void {
    this.unrecorded++;
    this.ready.push(c);
    this.readyOf.add(c);
  }

  /**
   * Takes the attempts waiting that may go now, oldest first, as far as the slots free allow,
   * and counts them on the wire.
   */
  takeSendable(): ClaimedDelivery[] {
    const { concurrency, endpointConcurrency, orgConcurrency } = this.caps;
    const out: ClaimedDelivery[] = [];
    for (let i = 0; i < this.ready.length && this.total < concurrency; ) {
      const c = this.ready[i] as ClaimedDelivery;
      if (
        this.inFlight.ofEndpoint(c.endpointId) >= endpointConcurrency ||
        this.inFlight.ofOrg(c.orgId) >= orgConcurrency
      ) {
        i++;
        continue;
      }
      this.ready.splice(i, 1);
      this.readyOf.remove(c);
      this.inFlight.add(c);
      this.total++;
      out.push(c);
    }
    return out;
  }

  /** The attempt's answer is in: its slot on the wire is free. */
  answered(c: ClaimedDelivery): void {
    this.inFlight.remove(c);
    this.total--;
  }

  /** A hand-over promised this delivery. */
  promise(t: Target): void {
    this.promised++;
    this.promisedOf.add(t);
  }

  /** Takes back what a hand-over promised to the endpoints listed (one entry per delivery). */
  unpromise(targets: readonly Target[]): void {
    for (const t of targets) {
      this.promised--;
      this.promisedOf.remove(t);
    }
  }

  /** Sets `n` aside for an organization's event (negative: gives it back). */
  setAside(orgId: string, n: number): void {
    this.admitted += n;
    addTo(this.admittedOf, orgId, n);
  }

  /**
   * Drops the attempts waiting for a slot to the organization's endpoints that `endpointsNow`
   * no longer lists; an endpoint created while it reads has nothing waiting here, so only
   * endpoints that had are looked for. Answers those endpoints and how many attempts went.
   */
  async dropDeleted(
    orgId: string,
    endpointsNow: () => Promise<ReadonlySet<string>>,
  ): Promise<{ gone: string[]; dropped: number }> {
    if (this.readyOf.ofOrg(orgId) === 0) return { gone: [], dropped: 0 };
    const waiting = new Set(this.ready.filter((c) => c.orgId === orgId).map((c) => c.endpointId));
    const current = await endpointsNow();
    const gone = new Set([...waiting].filter((id) => !current.has(id)));
    if (gone.size === 0) return { gone: [], dropped: 0 };
    const kept: ClaimedDelivery[] = [];
    let dropped = 0;
    for (const c of this.ready) {
      if (c.orgId === orgId && gone.has(c.endpointId)) {
        this.readyOf.remove(c);
        dropped++;
      } else {
        kept.push(c);
      }
    }
    if (dropped > 0) this.ready = kept;
    return { gone: [...gone], dropped };
  }

  /** Attempts of an endpoint on the wire, waiting for a slot, or promised by a hand-over. */
  heldOfEndpoint(endpointId: string): number {
    return (
      this.inFlight.ofEndpoint(endpointId) +
      this.readyOf.ofEndpoint(endpointId) +
      this.promisedOf.ofEndpoint(endpointId)
    );
  }

  /** The same, over an organization's endpoints, and the room set aside for its events. */
  heldOfOrg(orgId: string): number {
    return (
      this.inFlight.ofOrg(orgId) +
      this.readyOf.ofOrg(orgId) +
      this.promisedOf.ofOrg(orgId) +
      (this.admittedOf.get(orgId) ?? 0)
    );
  }

  /** Endpoints and organizations at twice their cap, which a claim leaves out. */
  full(): { endpoints: string[]; orgs: string[] } {
    const held = [this.inFlight, this.readyOf, this.promisedOf];
    const endpoints = [...new Set(held.flatMap((h) => [...h.endpoints.keys()]))].filter(
      (e) => this.heldOfEndpoint(e) >= 2 * this.caps.endpointConcurrency,
    );
    const orgs = [...new Set(held.flatMap((h) => [...h.orgs.keys()]))].filter(
      (org) => this.heldOfOrg(org) >= 2 * this.caps.orgConcurrency,
    );
    return { endpoints, orgs };
  }

  /**
   * Attempts a round may claim, given the outcomes it records: up to `concurrency` on the wire
   * and as many again waiting for a slot, and no more than twice `concurrency` claimed and not
   * yet recorded, so a slow database holds sending back.
   */
  room(recording: number): number {
    const { concurrency } = this.caps;
    const held = this.promised + this.admitted;
    return Math.min(
      2 * concurrency - this.total - this.ready.length - held,
      2 * concurrency - (this.unrecorded - recording) - held,
    );
  }

  /**
   * Up to `room` candidates, no endpoint and no organization past twice its cap (on the wire and
   * waiting): one slow receiver, or one organization's, cannot take every slot, and an attempt
   * waits for at most one answer of its endpoint before it goes. `own` is the room a hand-over's
   * events set aside, per organization, which its picks may take.
   */
  pick(
    candidates: ClaimCandidate[],
    room: number,
    own: ReadonlyMap<string, number> = new Map(),
  ): ClaimCandidate[] {
    const endpointCap = 2 * this.caps.endpointConcurrency;
    const orgCap = 2 * this.caps.orgConcurrency;
    const taken = new Tally();
    const out: ClaimCandidate[] = [];
    for (const c of candidates) {
      if (out.length >= room) break;
      if (this.heldOfEndpoint(c.endpointId) + taken.ofEndpoint(c.endpointId) >= endpointCap) {
        continue;
      }
      const heldOfOrg = this.heldOfOrg(c.orgId) - (own.get(c.orgId) ?? 0);
      if (heldOfOrg + taken.ofOrg(c.orgId) >= orgCap) continue;
      taken.add(c);
      out.push(c);
    }
    return out;
  }

  /**
   * A round's claim of up to `room` due deliveries, leaving out the endpoints and organizations
   * `full` lists and passing over candidates past a cap; the endpoints of those it passes over
   * are added to `skipped`.
   */
  claimInput(
    room: number,
    full: { endpoints: string[]; orgs: string[] },
    skipped: Set<string>,
    input: Pick<ClaimInput, 'now' | 'leaseUntil' | 'maxAttempts' | 'expectWork'>,
  ): ClaimInput {
    return {
      ...input,
      limit: Math.min(room + CLAIM_MARGIN, 1000),
      exclude: full.endpoints,
      excludeOrgs: full.orgs,
      pick: (candidates) => {
        const chosen = new Set(this.pick(candidates, room).map((c) => c.id));
        for (const c of candidates) if (!chosen.has(c.id)) skipped.add(c.endpointId);
        return [...chosen];
      },
    };
  }
}
