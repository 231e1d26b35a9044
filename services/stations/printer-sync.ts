/**
 * Printers as their station's agent reports them: each one reported is added or updated, one no
 * longer reported is `removed`, and `printer.status` is queued for every change of status; a
 * printer added queues `printer.created` before it, and one whose capabilities changed
 * `printer.updated`.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';
import type { PrinterCapabilities, PrinterReport } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { eventMessage } from '../../lib/events.js';
import { addToOutbox, type OutboxMessage } from '../../lib/outbox.js';
import { printerView } from '../../lib/resource-views.js';
import { columns, WriteBatch } from '../../lib/sql.js';
import type { TraceCarrier } from '../../lib/tracing.js';
import type { LinkStation } from './link-station.js';
import { type Committed, OUTBOX_TABLE } from './station-outbox.js';
import { groupBy, toPrinter, wholeCapabilities } from './station-rows.js';

/** The status of a printer its station's agent no longer reports. */
export const REMOVED = 'removed';

/** A printer as a link open or a printer sync compares it with what the agent reports. */
export interface PrinterState {
  id: string;
  name: string;
  status: string;
  detail: string;
  /** As the row keeps them: a row older than a capability lacks it. */
  capabilities: Partial<PrinterCapabilities> | null;
}

/** What a printer's API shape tells of its station: its location, home region and presence. */
export interface StationPlace {
  locationId: string | null;
  region: string;
  online: boolean;
}

/** One station's printers as its agent reports them, with the trace of the agent's request. */
export interface StationPrinters {
  station: { id: string; orgId: string };
  reports: PrinterReport[];
  trace?: TraceCarrier;
  /** Where the station is, when the caller knows; else read, only if a printer is new. */
  place?: StationPlace;
}

export interface PrinterSync {
  /**
   * Brings the station's printers in line with what its agent reports now, in a transaction of
   * its own; answers their ids by name.
   */
  printersChanged(station: LinkStation, printers: PrinterReport[]): Promise<Record<string, string>>;
}

function printerStatusEvent(
  orgId: string,
  p: { id: string; status: string; detail: string },
  at: Date,
) {
  return eventMessage(
    orgId,
    'printer.status',
    { printer_id: p.id, status: p.status, detail: p.detail },
    at,
  );
}

/**
 * A printer reported for the first time (`printer.created`) or with other capabilities
 * (`printer.updated`), for the event stream: `{printer}` as the API lists it, as the upsert writes
 * it at `at`.
 */
function printerEvent(
  type: 'printer.created' | 'printer.updated',
  station: { id: string; orgId: string },
  id: string,
  report: PrinterReport,
  capabilities: PrinterCapabilities,
  place: StationPlace,
  at: Date,
) {
  const printer = toPrinter({
    id,
    org_id: station.orgId,
    station_id: station.id,
    name: report.name,
    status: report.status,
    detail: report.detail,
    capabilities,
    created_at: at,
    updated_at: at,
    location_id: place.locationId,
    station_online: place.online,
    region: place.region,
  });
  return eventMessage(station.orgId, type, { printer: printerView(printer) }, at);
}

/**
 * The event a printer reported now needs beside its status: `printer.created` when it has no row,
 * `printer.updated` when it can do other things than its row says, else none.
 */
function changeOf(
  existing: PrinterState | undefined,
  capabilities: PrinterCapabilities,
): 'printer.created' | 'printer.updated' | undefined {
  if (!existing) return 'printer.created';
  const same = isDeepStrictEqual(wholeCapabilities(existing.capabilities ?? {}), capabilities);
  return same ? undefined : 'printer.updated';
}

/** Where each of `stations` is, by station id. */
async function placesOf(
  tx: pg.PoolClient,
  stations: Array<{ id: string; orgId: string }>,
): Promise<Map<string, StationPlace>> {
  if (stations.length === 0) return new Map();
  const { rows } = await tx.query<{
    id: string;
    location_id: string | null;
    region: string;
    online: boolean;
  }>(
    `SELECT id, location_id, region, online FROM stations
     WHERE org_id = ANY($1::UUID[]) AND id = ANY($2::UUID[])`,
    [[...new Set(stations.map((s) => s.orgId))], stations.map((s) => s.id)],
  );
  return new Map(
    rows.map((r) => [r.id, { locationId: r.location_id, region: r.region, online: r.online }]),
  );
}

/**
 * Brings stations' printers in line with what their agents report, inside `tx`: reads them in
 * one query, marks those no longer reported `removed`, and adds to `batch` one upsert of every
 * printer reported (written when the caller sends the batch). Returns each station's printer ids
 * by name and queues `printer.status` for each printer added or whose status changed, with the
 * trace of the station's own request, after `printer.created` for each printer added. A station
 * appears at most once in `syncs`.
 */
export async function syncPrinters(
  tx: pg.PoolClient,
  batch: WriteBatch,
  syncs: StationPrinters[],
  now: Date,
  messages: OutboxMessage[],
  /** The stations' printers, when the caller read them already, by station id. */
  read?: Map<string, PrinterState[]>,
): Promise<Array<Record<string, string>>> {
  let byStation = read;
  if (!byStation) {
    const { rows } = await tx.query<PrinterState & { station_id: string }>(
      `SELECT id, station_id, name, status, detail, capabilities FROM printers
       WHERE org_id = ANY($1::UUID[]) AND station_id = ANY($2::UUID[])`,
      [[...new Set(syncs.map((s) => s.station.orgId))], syncs.map((s) => s.station.id)],
    );
    byStation = groupBy(rows, (r) => r.station_id);
  }
  // Each station's reports beside its printers' rows, matched by name; a name reported twice is
  // one printer, as the last report of it says.
  const plans = syncs.map((sync) => {
    const current = byStation.get(sync.station.id) ?? [];
    const byName = new Map(current.map((r) => [r.name, r]));
    const reported = new Map(sync.reports.map((r) => [r.name, r]));
    const printers = [...reported.values()].map((report) => {
      const existing = byName.get(report.name);
      const capabilities = wholeCapabilities(report.capabilities ?? {});
      return { report, capabilities, existing, change: changeOf(existing, capabilities) };
    });
    return { sync, current, reported, printers };
  });
  // A new or changed printer's event needs its station's place: read once, only when the caller
  // had none.
  const places = await placesOf(
    tx,
    plans
      .filter((p) => !p.sync.place && p.printers.some((x) => x.change !== undefined))
      .map((p) => p.sync.station),
  );
  const upserts: Array<{
    id: string;
    orgId: string;
    stationId: string;
    report: PrinterReport;
    capabilities: PrinterCapabilities;
  }> = [];
  const gone: Array<{ orgId: string; id: string; trace: TraceCarrier | undefined }> = [];
  const ids = plans.map(({ sync, current, reported, printers }) => {
    const { station, trace, place } = sync;
    const headers = trace ? { headers: trace as Record<string, string> } : {};
    const ids: Record<string, string> = {};
    for (const { report, capabilities, existing, change } of printers) {
      // A new printer's id is chosen here: were the name inserted by another transaction
      // meanwhile, SERIALIZABLE fails this one (and `withTx` runs it again) rather than let the
      // upsert update a row this transaction did not read.
      const id = existing?.id ?? randomUUID();
      ids[report.name] = id;
      upserts.push({ id, orgId: station.orgId, stationId: station.id, report, capabilities });
      const where = place ?? places.get(station.id);
      if (change && where) {
        messages.push({
          ...printerEvent(change, station, id, report, capabilities, where, now),
          ...headers,
        });
      }
      if (!existing || existing.status !== report.status || existing.detail !== report.detail)
        messages.push({
          ...printerStatusEvent(station.orgId, { id, ...report }, now),
          ...headers,
        });
    }
    // A printer the agent no longer reports cannot print: it is `removed` (its jobs wait, and
    // say why) rather than forgotten, and comes back with its id if the agent reports it again.
    for (const r of current) {
      if (!reported.has(r.name) && r.status !== REMOVED)
        gone.push({ orgId: station.orgId, id: r.id, trace });
    }
    return ids;
  });
  if (upserts.length > 0) {
    const rows = columns(upserts, (u) => [
      u.id,
      u.orgId,
      u.stationId,
      u.report.name,
      u.report.status,
      u.report.detail,
      JSON.stringify(u.capabilities),
    ]);
    const at = batch.param(now);
    batch.add(
      `INSERT INTO printers (id, org_id, station_id, name, status, detail, capabilities, created_at, updated_at)
       SELECT *, ${at}::TIMESTAMPTZ, ${at}::TIMESTAMPTZ
       FROM (${batch.rows(rows, ['UUID', 'UUID', 'UUID', 'TEXT', 'TEXT', 'TEXT', 'JSONB'])}) AS r
       ON CONFLICT (station_id, name) DO UPDATE SET status = excluded.status,
         detail = excluded.detail, capabilities = excluded.capabilities,
         updated_at = CASE WHEN printers.status <> excluded.status
           OR printers.detail <> excluded.detail
           OR printers.capabilities <> excluded.capabilities THEN excluded.updated_at
           ELSE printers.updated_at END
       WHERE printers.org_id = excluded.org_id`,
    );
  }
  // A statement of its own (rarely needed): CockroachDB writes a table once per statement.
  if (gone.length > 0) {
    const detail = 'the station no longer reports this printer';
    await tx.query(
      `UPDATE printers SET status = $3, detail = $4, updated_at = $5
       WHERE org_id = ANY($1::UUID[]) AND id = ANY($2::UUID[])`,
      [[...new Set(gone.map((g) => g.orgId))], gone.map((g) => g.id), REMOVED, detail, now],
    );
    for (const g of gone) {
      messages.push({
        ...printerStatusEvent(g.orgId, { id: g.id, status: REMOVED, detail }, now),
        ...(g.trace ? { headers: g.trace as Record<string, string> } : {}),
      });
    }
  }
  return ids;
}

export function createPrinterSync(pool: pg.Pool, clock: Clock, committed: Committed): PrinterSync {
  return {
    async printersChanged(station, printers) {
      const { ids, outbox } = await withTx(pool, async (tx) => {
        const batch = new WriteBatch();
        const messages: OutboxMessage[] = [];
        const [ids = {}] = await syncPrinters(
          tx,
          batch,
          [{ station, reports: printers }],
          clock.now(),
          messages,
        );
        const outbox = addToOutbox(batch, OUTBOX_TABLE, messages);
        if (batch.values.length > 0) await tx.query(batch.text(), batch.values);
        return { ids, outbox };
      });
      committed(outbox);
      return ids;
    },
  };
}
