/**
 * Reading jobs: GetJob, ListJobs, and the jobs a station should have (PendingJobs,
 * PendingJobsForStations, asked by the stations service when a link opens).
 */
import type { Job } from '../../../gen/spool/v1/jobs.js';
import { invalid } from '../../../lib/errors.js';
import { isUuid, requireUuid } from '../../../lib/ids.js';
import { pageLimit } from '../../../lib/paging.js';
import { isJobStatus, JOB_STATUSES } from '../machine.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

/** Stations one `PendingJobsForStations` call may ask about. */
export const MAX_STATIONS_PER_CALL = 1000;

export function queryHandlers({
  store,
}: Pick<JobsServerDeps, 'store'>): JobsHandlers<
  'getJob' | 'listJobs' | 'pendingJobs' | 'pendingJobsForStations'
> {
  return {
    async getJob(req) {
      return store.get(requireUuid(req.orgId, 'organization'), requireUuid(req.jobId, 'job'));
    },

    async listJobs(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      for (const status of req.statuses) {
        if (!isJobStatus(status)) {
          throw invalid(
            `unknown status ${JSON.stringify(status)}; statuses are ${JOB_STATUSES.join(', ')}`,
            'status',
          );
        }
      }
      for (const [param, value] of [
        ['printer_id', req.printerId],
        ['station_id', req.stationId],
      ] as const) {
        if (value && !isUuid(value)) throw invalid(`${param} must be an id`, param);
      }
      return store.list(orgId, req, pageLimit(req.limit), req.cursor);
    },

    async pendingJobs(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return { items: await store.pending(orgId, requireUuid(req.stationId, 'station')) };
    },

    async pendingJobsForStations(req) {
      // A malformed pair names no station: it is answered with no jobs, not failed with the rest.
      const asked = req.stations.map((s) => ({ orgId: s.orgId, stationId: s.stationId }));
      const valid = asked.filter((s) => isUuid(s.orgId) && isUuid(s.stationId));
      if (valid.length > MAX_STATIONS_PER_CALL) {
        throw invalid(`at most ${MAX_STATIONS_PER_CALL} stations per call`, 'stations');
      }
      const byStation = new Map<string, Job[]>();
      for (const job of await store.pendingForStations(valid)) {
        const key = `${job.orgId}/${job.stationId}`;
        const items = byStation.get(key);
        if (items) items.push(job);
        else byStation.set(key, [job]);
      }
      return {
        stations: asked.map((s) => ({
          ...s,
          items: byStation.get(`${s.orgId}/${s.stationId}`.toLowerCase()) ?? [],
        })),
      };
    },
  };
}
