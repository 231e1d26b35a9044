/**
 * GetUsage: the figures the usage rollup keeps per organization and UTC day (usage-rollup.ts), for
 * the organizations the caller names, which the gateway has checked are the key's (its own and,
 * when asked, its children).
 */
import { usageRequestProblem } from '../../../lib/contracts/usage.js';
import { invalid } from '../../../lib/errors.js';
import { isUuid } from '../../../lib/ids.js';
import type { UsageStore } from '../usage-store.js';
import type { JobsHandlers } from './deps.js';

export function usageHandlers({ usage }: { usage: UsageStore }): JobsHandlers<'getUsage'> {
  return {
    async getUsage(req) {
      const problem = usageRequestProblem(req);
      if (problem) throw invalid(problem.message, problem.param);
      if (!req.orgIds.every(isUuid)) throw invalid('org_ids must be organization ids', 'org_ids');
      return { items: await usage.usage(req.orgIds, req.from, req.to) };
    },
  };
}
