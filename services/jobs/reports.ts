/**
 * The jobs service's reader of station reports: one durable consumer of its region's reports,
 * shared by every jobs replica of the region (JetStream spreads the messages among them). Each report becomes a transition; the
 * transitions ignore reports that no longer apply, so redelivery is harmless.
 */
import { type BusLayout, type NatsConnection, reportsStream } from '../../lib/bus.js';
import { startDurableConsumer } from '../../lib/consumer.js';
import type { StationReport } from '../../lib/contracts/station-report.js';
import type { Logger } from '../../lib/logger.js';
import type { Trigger } from './machine.js';
import type { JobTransitions } from './transitions.js';

export const REPORTS_CONSUMER = 'jobs-reports';

/**
 * Reports a jobs-service process has in hand at once. Their transitions are committed in groups
 * (transitions.ts), so this is also the largest group the reports make.
 */
const REPORTS_IN_FLIGHT = 256;

export function triggerOf(report: StationReport): Trigger {
  if (report.kind === 'received') return 'received';
  return report.printed ? 'printed' : 'failed';
}

export interface ReportReader {
  stop(): Promise<void>;
}

export async function startReportReader(deps: {
  nc: NatsConnection;
  layout: BusLayout;
  store: Pick<JobTransitions, 'apply'>;
  logger: Logger;
}): Promise<ReportReader> {
  return startDurableConsumer<StationReport>({
    nc: deps.nc,
    stream: reportsStream(deps.layout, deps.layout.region),
    durable: REPORTS_CONSUMER,
    // The stream holds only this region's reports (all of them, with one region).
    config: { filter_subject: 'reports.>' },
    logger: deps.logger,
    parse: (msg) => msg.json<StationReport>(),
    // Reports of one job apply in the order they came: each handler hands its transition to the
    // store's group commit as the message arrives, and groups apply their transitions in order,
    // one group after another. A station's `received` and `result` sent together thus commit in
    // one transaction.
    concurrency: REPORTS_IN_FLIGHT,
    async handle(report) {
      const how = {
        actor: `station:${report.station_id}`,
        attempt: report.attempt,
        stationId: report.station_id,
        ...(report.region ? { region: report.region } : {}),
        ...(report.confirmation ? { confirmation: report.confirmation } : {}),
      };
      const apply = (trigger: Trigger, detail?: string) =>
        deps.store.apply(report.org_id, report.job_id, trigger, detail ? { ...how, detail } : how);
      try {
        // Both go to the same group of transitions, in this order.
        await Promise.all([
          report.kind === 'result' && report.received ? apply('received') : undefined,
          apply(triggerOf(report), report.detail),
        ]);
        return 'ack';
      } catch (err) {
        // A report about a job that does not exist can never apply.
        if ((err as { code?: string }).code === 'not_found') return 'term';
        throw err;
      }
    },
  });
}
