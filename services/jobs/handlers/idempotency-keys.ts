/**
 * The records of Idempotency-Keys (idempotency.ts), kept for the gateway: a request claims its
 * key, and completes or releases the claim once answered.
 */
import { requireUuid } from '../../../lib/ids.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

export function idempotencyHandlers({
  idempotency,
}: Pick<JobsServerDeps, 'idempotency'>): JobsHandlers<
  'claimIdempotencyKey' | 'completeIdempotencyKey' | 'releaseIdempotencyKey'
> {
  return {
    async claimIdempotencyKey(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return idempotency.claim(orgId, req.key, req.fingerprint);
    },

    async completeIdempotencyKey(req) {
      await idempotency.complete(
        requireUuid(req.orgId, 'organization'),
        { key: req.key, claim: requireUuid(req.claim, 'claim') },
        req.status,
        Buffer.from(req.body),
      );
      return {};
    },

    async releaseIdempotencyKey(req) {
      await idempotency.release(requireUuid(req.orgId, 'organization'), {
        key: req.key,
        claim: requireUuid(req.claim, 'claim'),
      });
      return {};
    },
  };
}
