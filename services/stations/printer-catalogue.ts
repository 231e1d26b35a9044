/**
 * Printers as the API reads them (with their station's location, presence and region) and as an
 * operator deletes them. Their status comes from the agents (printer-sync.ts).
 */
import type pg from 'pg';
import type { Printer } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { notFound } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { enqueue } from '../../lib/outbox.js';
import { decodeCursor, page } from '../../lib/paging.js';
import { type Committed, OUTBOX_TABLE } from './station-outbox.js';
import { PRINTER_SELECT, type PrinterRow, toPrinter } from './station-rows.js';

export interface PrinterCatalogue {
  listPrinters(
    orgId: string,
    filters: { stationId: string; locationId: string },
    limit: number,
    cursor: string,
  ): Promise<{ items: Printer[]; nextCursor: string }>;
  getPrinter(orgId: string, id: string): Promise<Printer>;
  /**
   * The printers named by (organization, printer) and every printer of the stations named by
   * (organization, station), each once; pairs that name nothing are left out.
   */
  printersOf(
    printers: Array<{ orgId: string; printerId: string }>,
    stations: Array<{ orgId: string; stationId: string }>,
  ): Promise<Printer[]>;
  /** Deletes a printer and queues `printer.deleted` (`{printer_id, station_id}`). */
  deletePrinter(orgId: string, id: string): Promise<Printer>;
}

/** @param committed takes the outbox rows of a deletion once committed. */
export function createPrinterCatalogue(
  pool: pg.Pool,
  clock: Clock,
  committed: Committed,
): PrinterCatalogue {
  return {
    async listPrinters(orgId, filters, limit, cursor) {
      const after = decodeCursor(cursor);
      const { rows } = await pool.query<PrinterRow>(
        `${PRINTER_SELECT}
         WHERE p.org_id = $1 AND ($2 = '' OR p.station_id = $2::UUID)
           AND ($3 = '' OR s.location_id = $3::UUID)
           AND ($4::TIMESTAMPTZ IS NULL OR (p.created_at, p.id) > ($4, $5::UUID))
         ORDER BY p.created_at, p.id LIMIT $6`,
        [
          orgId,
          filters.stationId,
          filters.locationId,
          after?.at ?? null,
          after?.id ?? null,
          limit + 1,
        ],
      );
      const { items, nextCursor } = page(rows, limit, (r) => ({
        at: r.created_at.toISOString(),
        id: r.id,
      }));
      return { items: items.map(toPrinter), nextCursor };
    },

    async getPrinter(orgId, id) {
      const { rows } = await pool.query<PrinterRow>(
        `${PRINTER_SELECT} WHERE p.org_id = $1 AND p.id = $2`,
        [orgId, id],
      );
      if (!rows[0]) throw notFound('no such printer');
      return toPrinter(rows[0]);
    },

    async printersOf(printers, stations) {
      if (printers.length === 0 && stations.length === 0) return [];
      const { rows } = await pool.query<PrinterRow>(
        `WITH wanted AS (
           SELECT p.id FROM unnest($1::UUID[], $2::UUID[]) AS k (org_id, id)
             JOIN printers p ON p.id = k.id AND p.org_id = k.org_id
           UNION
           SELECT p.id FROM unnest($3::UUID[], $4::UUID[]) AS k (org_id, station_id)
             JOIN printers p ON p.station_id = k.station_id AND p.org_id = k.org_id
         )
         ${PRINTER_SELECT} WHERE p.id IN (SELECT id FROM wanted)`,
        [
          printers.map((k) => k.orgId),
          printers.map((k) => k.printerId),
          stations.map((k) => k.orgId),
          stations.map((k) => k.stationId),
        ],
      );
      return rows.map(toPrinter);
    },

    async deletePrinter(orgId, id) {
      const { printer, outbox } = await withTx(pool, async (tx) => {
        const { rows } = await tx.query<PrinterRow>(
          `${PRINTER_SELECT} WHERE p.org_id = $1 AND p.id = $2`,
          [orgId, id],
        );
        if (!rows[0]) throw notFound('no such printer');
        await tx.query('DELETE FROM printers WHERE org_id = $1 AND id = $2', [orgId, id]);
        const printer = toPrinter(rows[0]);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [
          eventMessage(
            orgId,
            'printer.deleted',
            { printer_id: printer.id, station_id: printer.stationId },
            clock.now(),
          ),
        ]);
        return { printer, outbox };
      });
      committed(outbox);
      return printer;
    },
  };
}
