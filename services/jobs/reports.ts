/**
 * The jobs service's reader of station reports: one durable consumer of `reports.>` shared by every
 * jobs replica (JetStream spreads the messages among them). Each report becomes a transition; the
 * transitions ignore reports that no longer apply, so redelivery is harmless.
 */
import { AckPolicy, type ConsumerMessages, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '../../lib/bus.js';
import type { Logger } from '../../lib/logger.js';
import type { Trigger } from './machine.js';
import type { Applied, JobStore } from './store.js';

export const REPORTS_CONSUMER = 'jobs-reports';

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
  onApplied?: (applied: Applied) => void;
}): Promise<ReportReader> {
  const jsm = await jetstreamManager(deps.nc);
  await jsm.consumers.add('REPORTS', {
    durable_name: REPORTS_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    filter_subject: 'reports.>',
    max_deliver: -1,
    ack_wait: 30_000_000_000,
  });
  const consumer = await jetstream(deps.nc).consumers.get('REPORTS', REPORTS_CONSUMER);
  let messages: ConsumerMessages | undefined;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        messages = await consumer.consume({ max_messages: 256 });
        for await (const msg of messages) {
          let report: StationReport;
          try {
            report = msg.json<StationReport>();
          } catch {
            deps.logger.error({ subject: msg.subject }, 'dropping a report that is not JSON');
            msg.term();
            continue;
          }
          try {
            const applied = await deps.store.apply(
              report.org_id,
              report.job_id,
              triggerOf(report),
              {
                actor: `station:${report.station_id}`,
                attempt: report.attempt,
                ...(report.detail ? { detail: report.detail } : {}),
              },
            );
            msg.ack();
            deps.onApplied?.(applied);
          } catch (err) {
            if ((err as { code?: string }).code === 'not_found') {
              msg.term();
              continue;
            }
            deps.logger.warn({ err, jobId: report.job_id }, 'report not applied; will retry');
            msg.nak(1_000);
          }
        }
      } catch (err) {
        if (stopped) break;
        deps.logger.warn({ err }, 'report consumer failed; restarting');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await messages?.close();
      await loop;
    },
  };
}
