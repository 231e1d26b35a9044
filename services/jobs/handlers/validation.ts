/**
 * `POST /v1/orgs/{org}/jobs/validate`: a creation's dry run. It checks what CreateJob checks, in
 * the same order, so it answers the same error (the document, the printer or pool and the
 * options, a test key's daily prints), but creates, stores and counts nothing.
 */
import { PrintOptions } from '../../../gen/spool/v1/stations.js';
import { checkRequest, placeOf, resolveContent } from './creation.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

export function validationHandlers(deps: JobsServerDeps): JobsHandlers<'validateJob'> {
  return {
    async validateJob(req, call) {
      const orgId = checkRequest(deps, req);
      const { contentType } = await resolveContent(deps, req, orgId);
      const place = await placeOf(
        deps,
        {
          orgId,
          printerId: req.printerId,
          ...(req.poolId ? { poolId: req.poolId } : {}),
          options: req.options ?? PrintOptions.fromPartial({}),
          contentType,
          hold: req.hold,
          ...(req.scheduleAt ? { scheduleAt: req.scheduleAt } : {}),
        },
        call,
      );
      if (!req.live) await deps.store.checkTestPrints(orgId);
      return req.poolId
        ? { printerId: '', poolId: req.poolId }
        : { printerId: place.printerId, poolId: '' };
    },
  };
}
