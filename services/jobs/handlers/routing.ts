/**
 * Routing a job by hand (`POST …/move`), and a station's claim of a pool job it is about to print
 * (docs/station-link.md): the claim is the acknowledgement after which the job is never moved.
 */
import type { Job } from '../../../gen/spool/v1/jobs.js';
import { PrintOptions } from '../../../gen/spool/v1/stations.js';
import { invalid, type SpoolError } from '../../../lib/errors.js';
import { isUuid, requireUuid } from '../../../lib/ids.js';
import { checkOptionsFor } from '../options.js';
import { waitingDetail } from '../printer-waits.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';
import { printerOf } from './printers.js';

/** Whether `job` is, after a claim, the claiming station's: sent to it, or already reported. */
function claimedBy(job: Job, stationId: string, attempt: number): boolean {
  return (
    job.stationId === stationId &&
    job.attempt === attempt &&
    (job.status === 'sent' || job.status === 'printed' || job.status === 'failed')
  );
}

export function routingHandlers(deps: JobsServerDeps): JobsHandlers<'moveJob' | 'claimJob'> {
  return {
    async moveJob(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      const jobId = requireUuid(req.jobId, 'job');
      if (!isUuid(req.printerId))
        throw invalid('printer_id must be the id of a printer', 'printer_id');
      const { job } = await deps.store.get(orgId, jobId);
      const printer = await printerOf(deps, orgId, req.printerId, call);
      if (!printer) throw invalid('printer_id names no printer of this organization', 'printer_id');
      checkOptionsFor(job.options ?? PrintOptions.fromPartial({}), printer, job.contentType);
      // A pool job moved to a printer outside its pool leaves the pool: the router would
      // otherwise send it back.
      const pool = job.poolId ? await deps.routing.poolOf(orgId, job.poolId) : undefined;
      const leavePool = Boolean(job.poolId) && !pool?.printerIds.includes(printer.id);
      const waiting = waitingDetail(printer);
      const moved = await deps.store.apply(orgId, jobId, 'move', {
        actor: req.actor,
        route: {
          printerId: printer.id,
          stationId: printer.stationId,
          region: printer.region,
          ...(waiting ? { waiting } : {}),
          ...(leavePool ? { leavePool } : {}),
        },
      });
      return { job: moved.job };
    },

    async claimJob(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      try {
        const { job } = await deps.store.apply(orgId, requireUuid(req.jobId, 'job'), 'received', {
          actor: `station:${req.stationId}`,
          attempt: req.attempt,
          stationId: req.stationId,
          ...(req.region ? { region: req.region } : {}),
        });
        return { claimed: claimedBy(job, req.stationId, req.attempt) };
      } catch (err) {
        if ((err as SpoolError).code === 'not_found') return { claimed: false };
        throw err;
      }
    },
  };
}
