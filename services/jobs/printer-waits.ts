/**
 * Why a queued or sent job waits, in its `status_detail` (docs/jobs.md): its printer is no longer
 * reported by its station, its station is offline, or the printer is offline, in error, out of
 * paper, jammed or open. A job for a printer offline or in error stays queued (the link offers it
 * nothing); one for a printer that needs someone's hands goes to it and waits there, sent, keeping
 * its detail (transitions.ts keeps a `waiting: ` detail from queued to sent). The jobs service
 * learns of printers only from the stations service: it follows `printer.status`,
 * `station.online` and `station.offline` on the EVENTS stream and asks the stations service for
 * the current state of the printers they concern, so that events handled late or twice leave the
 * right detail. A job created for a printer that already cannot print gets the detail at once.
 *
 * Events are handled in batches, one at a time per process: what arrived while a batch ran goes in
 * the next, with one `PrintersOf` call for all its printers and stations and one statement for all
 * their jobs. A fleet of stations coming online together (after a stations replica restarts) thus
 * costs a few dozen calls and transactions rather than one of each per printer.
 *
 * Only details this module wrote (they start with `waiting: `) are ever replaced or cleared, and
 * only on queued and sent jobs; a job that changes status gets its detail from its transition.
 */
import { DeliverPolicy } from '@nats-io/jetstream';
import type pg from 'pg';
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { Printer, StationsServiceClient } from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import { startDurableConsumer } from '../../lib/consumer.js';
import { withTx } from '../../lib/db.js';
import type { SpoolEvent } from '../../lib/events.js';
import { GroupCommit } from '../../lib/group-commit.js';
import type { AsyncClient } from '../../lib/grpc.js';
import { orgKey } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { whatStopsPrinting } from '../../lib/printer-status.js';

/** The durable consumers (shared by every jobs replica) of printer and station events. */
export const PRINTER_EVENTS_CONSUMER = 'jobs-printer-waits';
export const STATION_EVENTS_CONSUMER = 'jobs-station-waits';

/** How every detail this module writes starts, and the only details it replaces or clears. */
export const WAITING = 'waiting: ';

/**
 * Events one consumer of a process has in hand at once, and the most one batch takes: within
 * the stations service's limit of 1,000 printers and 1,000 stations a call.
 */
const IN_FLIGHT = 256;

/** What a queued or sent job for `printer` waits on, or '' when the printer can take it. */
export function waitingDetail(
  printer: Pick<Printer, 'name' | 'status' | 'detail' | 'stationOnline'>,
): string {
  const name = JSON.stringify(printer.name);
  const because = printer.detail ? ` (${printer.detail})` : '';
  if (printer.status === 'removed')
    return `${WAITING}printer ${name} is no longer reported by its station`;
  if (!printer.stationOnline) return `${WAITING}the station of printer ${name} is offline`;
  const state = whatStopsPrinting(printer.status);
  return state === undefined ? '' : `${WAITING}printer ${name} ${state}${because}`;
}

type PrinterEvent = SpoolEvent<{ printer_id?: string; station_id?: string }>;

export interface PrinterWaits {
  /**
   * Brings the detail of the given printers' queued and sent jobs in line with their state, in one
   * transaction; returns how many jobs changed.
   */
  printersChanged(printers: Printer[]): Promise<number>;
}

export function createPrinterWaits(deps: { pool: pg.Pool }): PrinterWaits {
  const { pool } = deps;
  return {
    async printersChanged(printers) {
      if (printers.length === 0) return 0;
      // The station in the join lets each printer's jobs be found through the (station_id,
      // status) index.
      return withTx(pool, async (tx) => {
        const { rowCount } = await tx.query(
          `UPDATE jobs SET status_detail = v.detail
           FROM unnest($1::UUID[], $2::UUID[], $3::UUID[], $4::TEXT[])
             AS v (org_id, station_id, printer_id, detail)
           WHERE jobs.org_id = v.org_id AND jobs.station_id = v.station_id
             AND jobs.printer_id = v.printer_id AND jobs.status IN ('queued', 'sent')
             AND jobs.status_detail <> v.detail
             AND (jobs.status_detail = '' OR jobs.status_detail LIKE $5)`,
          [
            printers.map((p) => p.orgId),
            printers.map((p) => p.stationId),
            printers.map((p) => p.id),
            printers.map(waitingDetail),
            `${WAITING}%`,
          ],
        );
        return rowCount ?? 0;
      });
    },
  };
}

/** A printer, or every printer of a station, whose jobs' details are to be brought up to date. */
type Concern = { orgId: string; printerId: string } | { orgId: string; stationId: string };

/** What an event concerns, or undefined for an event of no use here. */
function concernOf(e: PrinterEvent): Concern | undefined {
  const { printer_id: printerId, station_id: stationId } = e.data;
  if (e.type === 'printer.status' && printerId) return { orgId: e.org_id, printerId };
  if (e.type.startsWith('station.') && stationId) return { orgId: e.org_id, stationId };
  return undefined;
}

/**
 * Follows `printer.status` and `station.*` events (one durable consumer each, shared by every
 * jobs replica) and refreshes the waiting detail of the printers they concern, read afresh from
 * the stations service, a batch at a time. `requeued` brings the printers of jobs just queued
 * again (released, retried, due) into the same batches, so that a new job's detail is not the
 * only one set without an event; a failure there leaves it to the printer's next event.
 */
export async function startPrinterWaitReader(deps: {
  nc: NatsConnection;
  stations: AsyncClient<StationsServiceClient>;
  waits: PrinterWaits;
  logger: Logger;
  /** Told after each batch of printers brought up to date (the router looks again). */
  changed?: () => void;
}): Promise<{
  requeued(jobs: Array<Pick<Job, 'orgId' | 'printerId'>>): void;
  stop(): Promise<void>;
}> {
  let stopping = false;

  /**
   * Handles a batch: reads the state of every printer it concerns in one call and writes their
   * jobs' details in one transaction. Answers, for each concern, whether its printer still
   * exists (a station always does here).
   */
  async function handle(concerns: Concern[]): Promise<Array<{ ok: boolean }>> {
    // Events left waiting for a batch when the reader stops are redelivered to the next reader
    // instead of being handled during shutdown.
    if (stopping) throw new Error('the printer-waits reader is stopping');
    const printers = new Map<string, { orgId: string; printerId: string }>();
    const stations = new Map<string, { orgId: string; stationId: string }>();
    for (const c of concerns) {
      if ('printerId' in c) printers.set(orgKey(c.orgId, c.printerId), c);
      else stations.set(orgKey(c.orgId, c.stationId), c);
    }
    const { items } = await deps.stations.printersOf({
      printers: [...printers.values()],
      stations: [...stations.values()],
    });
    await deps.waits.printersChanged(items);
    deps.changed?.();
    // Printers are found only within the organization their concern names.
    const found = new Set(items.map((p) => orgKey(p.orgId, p.id)));
    return concerns.map((c) => ({
      ok: !('printerId' in c) || found.has(orgKey(c.orgId, c.printerId)),
    }));
  }

  // One batch at a time for both consumers and the jobs queued again, so that a station's event
  // and one of its printers' never interleave their read and their write.
  const batches = new GroupCommit<Concern, boolean>(handle, IN_FLIGHT);

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
      // An event about a printer that no longer exists, or of no use here, is dropped.
      handle: async (event) => {
        const concern = concernOf(event);
        return concern && (await batches.submit(concern)) ? 'ack' : 'term';
      },
    });
  const consumers = await Promise.all([
    follow(PRINTER_EVENTS_CONSUMER, 'events.*.printer.status'),
    follow(STATION_EVENTS_CONSUMER, 'events.*.station.*'),
  ]);
  return {
    requeued(jobs) {
      // A pool job queued again has no printer until the router gives it one.
      const routed = jobs.filter((j) => j.printerId !== '');
      const printers = new Map(routed.map((j) => [orgKey(j.orgId, j.printerId), j]));
      for (const { orgId, printerId } of printers.values()) {
        batches.submit({ orgId, printerId }).catch((err: unknown) => {
          if (!stopping) {
            deps.logger.warn({ err }, 'could not say why a job queued again waits for its printer');
          }
        });
      }
    },
    async stop() {
      stopping = true;
      await Promise.all(consumers.map((c) => c.stop()));
    },
  };
}
