/**
 * The jobs service's reader of station reports: one durable consumer of `reports.>` shared by every
 * jobs replica (JetStream spreads the messages among them). Each report becomes a transition; the
 * transitions ignore reports that no longer apply, so redelivery is harmless.
 */
import type { NatsConnection } from '../../lib/bus.js';
import { startDurableConsumer } from '../../lib/consumer.js';
import type { Logger } from '../../lib/logger.js';
import type { Trigger } from './machine.js';
import type { JobStore } from './store.js';

export const REPORTS_CONSUMER = 'jobs-reports';

/** Reports a jobs-service process applies at once. */
const REPORTS_IN_FLIGHT = 32;

/** A station's report, as the stations service publishes it to `reports.<org>.<station>`. */
export interface StationReport {
  kind: 'received' | 'result';
  org_id: string;
  station_id: string;
  job_id: string;
  attempt: number;
  printed?: boolean;
  detail?: string;
}

export function triggerOf(report: StationReport): Trigger {
  if (report.kind === 'received') return 'received';
  return report.printed ? 'printed' : 'failed';
}

export interface ReportReader {
  stop(): Promise<void>;
}

export async function startReportReader(deps: {
  nc: NatsConnection;
  store: JobStore;
  logger: Logger;
}): Promise<ReportReader> {
  return startDurableConsumer<StationReport>({
    nc: deps.nc,
    stream: 'REPORTS',
    durable: REPORTS_CONSUMER,
    config: { filter_subject: 'reports.>' },
    logger: deps.logger,
    parse: (msg) => msg.json<StationReport>(),
    // Reports of different jobs are independent; those of one job apply in the order they came.
    concurrency: REPORTS_IN_FLIGHT,
    keyOf: (report) => report.job_id,
    async handle(report) {
      try {
        await deps.store.apply(report.org_id, report.job_id, triggerOf(report), {
          actor: `station:${report.station_id}`,
          attempt: report.attempt,
          ...(report.detail ? { detail: report.detail } : {}),
        });
        return 'ack';
      } catch (err) {
        // A report about a job that does not exist can never apply.
        if ((err as { code?: string }).code === 'not_found') return 'term';
        throw err;
      }
    },
  });
}
