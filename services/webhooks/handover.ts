/**
 * A worker's hand-over to the fan-out: the deliveries a fan-out is about to add that the worker
 * has room for are claimed for it in the transaction that adds them (fanout-rows.ts), so they go
 * without a round claiming them.
 */
import { randomUUID } from 'node:crypto';
import type { Admitted } from './admissions.js';
import type { ClaimedDelivery } from './claims.js';
import type { Handover } from './fanout-rows.js';
import type { Ledger } from './ledger.js';
import { addTo, type Target } from './tally.js';

/** A hand-over (none when the worker takes nothing now), and how to settle it. */
export interface HandingOver {
  handover: Handover | undefined;
  /**
   * Called once with what the transaction claimed (nothing, if it failed); gives back the room
   * set aside for the events.
   */
  settle(claimed: readonly ClaimedDelivery[]): void;
}

export interface HandoverOptions {
  now: () => Date;
  leaseMs: number;
  /** The worker takes nothing now (stopped, or due deliveries may be waiting in the database). */
  closed: boolean;
  /** Endpoints whose deliveries go through rounds, in order, for now. */
  isDue(endpointId: string): boolean;
  /** After the ledger is settled: what the transaction claimed, to send. */
  settled(claimed: readonly ClaimedDelivery[]): void;
}

/**
 * A hand-over that picks up to the room `admissions` set aside and any other left (no endpoint
 * or organization past its cap, counting the room set aside for other events), or none when
 * `closed` or when there is no room.
 */
export function handOver(
  ledger: Ledger,
  admissions: readonly Admitted[],
  options: HandoverOptions,
): HandingOver {
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
    for (const [orgId, n] of own) ledger.setAside(orgId, -n);
    ledger.unpromise(picked);
    options.settled(claimed);
  };
  if (options.closed || ledger.room(0) + admitted <= 0) {
    return { handover: undefined, settle };
  }
  const now = options.now();
  const handover: Handover = {
    now,
    leaseUntil: new Date(now.getTime() + options.leaseMs),
    claim: randomUUID(),
    pick: (candidates) => {
      ledger.unpromise(picked);
      picked.length = 0;
      const chosen = ledger.pick(
        candidates.filter((c) => !options.isDue(c.endpointId)),
        ledger.room(0) + admitted,
        own,
      );
      for (const c of chosen) {
        picked.push(c);
        ledger.promise(c);
      }
      return chosen.map((c) => c.id);
    },
  };
  return { handover, settle };
}
