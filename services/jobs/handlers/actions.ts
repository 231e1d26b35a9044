/**
 * The API's and the operator's actions on jobs, through the state machine: CancelJob, RetryJob
 * (which releases a held job too) and FailPrinterJobs (a printer or station deleted: its jobs fail
 * and it leaves its pools).
 */
import { invalid } from '../../../lib/errors.js';
import { requireUuid } from '../../../lib/ids.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';
import { requirePrinterOf } from './printers.js';

export function actionHandlers(
  deps: JobsServerDeps,
): JobsHandlers<'cancelJob' | 'retryJob' | 'failPrinterJobs'> {
  const { store } = deps;
  return {
    async cancelJob(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const { job } = await store.apply(orgId, requireUuid(req.jobId, 'job'), 'cancel', {
        actor: req.actor,
      });
      return { job };
    },

    async retryJob(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      const jobId = requireUuid(req.jobId, 'job');
      const { job: current } = await store.get(orgId, jobId);
      await requirePrinterOf(deps, current, call);
      // A failed test job retried prints again: one more of the day's test prints (spec §8).
      // A held one was counted when it was created.
      const day =
        !current.live && current.status === 'failed'
          ? await store.countTestPrint(orgId)
          : undefined;
      try {
        const { job } = await store.apply(orgId, jobId, 'retry', { actor: req.actor });
        return { job };
      } catch (err) {
        if (day) await store.uncountTestPrint(orgId, day);
        throw err;
      }
    },

    async failPrinterJobs(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      const stationId = requireUuid(req.stationId, 'station');
      if (req.printerIds.length > 10_000) throw invalid('at most 10000 printer ids', 'printer_ids');
      for (const id of req.printerIds) requireUuid(id, 'printer');
      // The printers leave their pools first, so that no pool job is routed to them meanwhile. A
      // station's deletion names none: its printers are asked for (they are not deleted yet).
      const leaving =
        req.printerIds.length > 0
          ? req.printerIds
          : (
              await deps.stations.printersOf(
                { printers: [], stations: [{ orgId, stationId }] },
                { parent: call },
              )
            ).items.map((p) => p.id);
      await store.leavePools(orgId, leaving);
      const failed = await store.failPrinterJobs(orgId, stationId, req.printerIds, {
        actor: req.actor,
        detail: req.detail.slice(0, 500) || 'the printer was deleted',
      });
      return { failed };
    },
  };
}
