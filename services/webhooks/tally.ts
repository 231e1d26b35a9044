/** Counts of a worker's attempts per endpoint and per organization, for its caps. */
import type { ClaimCandidate } from './claims.js';

/** Adds `n` (which may be negative) to `key`'s count, forgetting the key at zero. */
export function addTo(counts: Map<string, number>, key: string, n: number): void {
  const sum = (counts.get(key) ?? 0) + n;
  if (sum === 0) counts.delete(key);
  else counts.set(key, sum);
}

/** Where an attempt goes: the caps count by endpoint and by organization. */
export type Target = Pick<ClaimCandidate, 'orgId' | 'endpointId'>;

/** Attempts counted per endpoint and per organization. */
export class Tally {
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
