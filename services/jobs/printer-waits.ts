/**
 * Why a queued job waits, in its `status_detail` (docs/jobs.md): its printer is no longer reported
 * by its station, its station is offline, or the printer is offline or in error. The jobs service
 * learns of printers only from the stations service: it follows `printer.status`,
 * `station.online` and `station.offline` on the EVENTS stream and, for each, asks the stations
 * service for the printer's current state, so that events handled late or twice leave the right
 * detail. A job created for a printer that already cannot print gets the detail at once.
 *
 * Only details this module wrote (they start with `waiting: `) are ever replaced or cleared, and
 * only on queued jobs; a job that leaves `queued` gets its detail from its transition.
 */
import { DeliverPolicy } from '@nats-io/jetstream';
import type pg from 'pg';
import type { Printer, StationsServiceClient } from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import { startDurableConsumer } from '../../lib/consumer.js';
import { withTx } from '../../lib/db.js';
import type { SpoolEvent } from '../../lib/events.js';
import type { AsyncClient } from '../../lib/grpc.js';
import type { Logger } from '../../lib/logger.js';

/** The durable consumers (shared by every jobs replica) of printer and station events. */
export const PRINTER_EVENTS_CONSUMER = 'jobs-printer-waits';
export const STATION_EVENTS_CONSUMER = 'jobs-station-waits';

const WAITING = 'waiting: ';

/** Events handled at once by one process; those of one organization one after another. */
const IN_FLIGHT = 8;

/** What a queued job for `printer` waits on, or '' when the printer can take it. */
export function waitingDetail(
  printer: Pick<Printer, 'name' | 'status' | 'detail' | 'stationOnline'>,
): string {
  const name = JSON.stringify(printer.name);
  const because = printer.detail ? ` (${printer.detail})` : '';
  if (printer.status === 'removed')
    return `${WAITING}printer ${name} is no longer reported by its station`;
  if (!printer.stationOnline) return `${WAITING}the station of printer ${name} is offline`;
  if (printer.status === 'offline') return `${WAITING}printer ${name} is offline${because}`;
  if (printer.status === 'error') return `${WAITING}printer ${name} is in error${because}`;
  return '';
}

type PrinterEvent = SpoolEvent<{ printer_id?: string; station_id?: string }>;

export interface PrinterWaits {
  /** Brings the detail of `printer`'s queued jobs in line with its state; returns how many changed. */
  printerChanged(printer: Printer): Promise<number>;
}

export function createPrinterWaits(deps: { pool: pg.Pool }): PrinterWaits {
  const { pool } = deps;
  return {
    async printerChanged(printer) {
      const detail = waitingDetail(printer);
      // The station filter lets the query use the (station_id, status) index.
      return withTx(pool, async (tx) => {
        const { rowCount } = await tx.query(
          `UPDATE jobs SET status_detail = $4
           WHERE org_id = $1 AND station_id = $2 AND printer_id = $3 AND status = 'queued'
             AND status_detail <> $4 AND (status_detail = '' OR status_detail LIKE $5)`,
          [printer.orgId, printer.stationId, printer.id, detail, `${WAITING}%`],
        );
        return rowCount ?? 0;
      });
    },
  };
}

/**
 * Follows `printer.status` and `station.*` events (one durable consumer each, shared by every
 * jobs replica) and refreshes the waiting detail of the printers they concern, read afresh from
 * the stations service.
 */
export async function startPrinterWaitReader(deps: {
  nc: NatsConnection;
  stations: AsyncClient<StationsServiceClient>;
  waits: PrinterWaits;
  logger: Logger;
}): Promise<{ stop(): Promise<void> }> {
  const { stations, waits } = deps;

  async function handle(event: PrinterEvent): Promise<'ack' | 'term'> {
    const orgId = event.org_id;
    if (event.type === 'printer.status' && event.data.printer_id) {
      try {
        const { printer } = await stations.getPrinter({ orgId, printerId: event.data.printer_id });
        if (printer) await waits.printerChanged(printer);
        return 'ack';
      } catch (err) {
        if ((err as { code?: string }).code === 'not_found') return 'term';
        throw err;
      }
    }
    if (event.type.startsWith('station.') && event.data.station_id) {
      let cursor = '';
      do {
        const page = await stations.listPrinters({
          orgId,
          stationId: event.data.station_id,
          locationId: '',
          limit: 100,
          cursor,
        });
        for (const printer of page.items) await waits.printerChanged(printer);
        cursor = page.nextCursor;
      } while (cursor);
      return 'ack';
    }
    return 'term';
  }

  // The two consumers' handlers of one organization also run one at a time, so that a station's
  // event and one of its printers' never interleave their read and their write.
  const running = new Map<string, Promise<unknown>>();
  let stopping = false;
  const oneAtATime = (event: PrinterEvent): Promise<'ack' | 'term'> => {
    const run = (running.get(event.org_id) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        // Events queued behind their organization's when the reader stops are redelivered to
        // the next reader instead of waiting their turn here.
        if (stopping) throw new Error('the printer-waits reader is stopping');
        return handle(event);
      });
    running.set(event.org_id, run);
    const forget = () => {
      if (running.get(event.org_id) === run) running.delete(event.org_id);
    };
    run.then(forget, forget);
    return run;
  };

  const follow = (durable: string, filter: string) =>
    startDurableConsumer<PrinterEvent>({
      nc: deps.nc,
      stream: 'EVENTS',
      durable,
      // A first start does not replay the stream's history; the details follow from then on.
      config: { filter_subject: filter, deliver_policy: DeliverPolicy.New },
      logger: deps.logger,
      parse: (msg) => msg.json<PrinterEvent>(),
      concurrency: IN_FLIGHT,
      handle: oneAtATime,
    });
  const consumers = await Promise.all([
    follow(PRINTER_EVENTS_CONSUMER, 'events.*.printer.status'),
    follow(STATION_EVENTS_CONSUMER, 'events.*.station.*'),
  ]);
  return {
    async stop() {
      stopping = true;
      await Promise.all(consumers.map((c) => c.stop()));
    },
  };
}
