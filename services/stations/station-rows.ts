/**
 * The stations tables' rows as the API shows them: the columns each query selects, the shape of
 * its rows and the mapper to the generated message.
 */
import type {
  Location,
  Printer,
  PrinterCapabilities,
  Station,
} from '../../gen/spool/v1/stations.js';
import { camelRow } from '../../lib/rows.js';

export interface LocationRow {
  id: string;
  org_id: string;
  name: string;
  address: string;
  timezone: string;
  created_at: Date;
}

export interface StationRow {
  id: string;
  org_id: string;
  name: string;
  location_id: string | null;
  online: boolean;
  link_id: string;
  last_seen_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
  agent_version: string;
  region: string;
  platform: string;
  update_state: string;
  update_version: string;
  update_detail: string;
  update_at: Date | null;
}

export interface PrinterRow {
  id: string;
  org_id: string;
  station_id: string;
  name: string;
  status: string;
  detail: string;
  capabilities: PrinterCapabilities;
  created_at: Date;
  updated_at: Date;
  location_id: string | null;
  station_online: boolean;
  region: string;
}

export const STATION_COLUMNS =
  'id, org_id, name, location_id, online, link_id, last_seen_at, revoked_at, created_at, agent_version, region, ' +
  'platform, update_state, update_version, update_detail, update_at';

export const LOCATION_COLUMNS = 'id, org_id, name, address, timezone, created_at';

export const PRINTER_SELECT = `SELECT p.id, p.org_id, p.station_id, p.name, p.status, p.detail,
  p.capabilities, p.created_at, p.updated_at, s.location_id, s.online AS station_online, s.region
  FROM printers p JOIN stations s ON s.id = p.station_id`;

export function toLocation(row: LocationRow): Location {
  return camelRow(row);
}

/**
 * A station as the API shows it, at `now`. An online station is connected now, so it was last seen
 * now; `last_seen_at` in its row is when its link opened, which is not what "last seen" means.
 */
export function toStation(row: StationRow, now: Date): Station {
  const { location_id, last_seen_at, revoked_at, update_at, link_id: _linkId, ...renamed } = row;
  return {
    ...camelRow(renamed),
    locationId: location_id ?? '',
    lastSeenAt: row.online ? now : (last_seen_at ?? undefined),
    tokenRevokedAt: revoked_at ?? undefined,
    updateAt: update_at ?? undefined,
  };
}

export function toPrinter(row: PrinterRow): Printer {
  const { location_id, capabilities, created_at: _createdAt, ...renamed } = row;
  return {
    ...camelRow(renamed),
    locationId: location_id ?? '',
    capabilities: wholeCapabilities(capabilities),
  };
}

/** Capabilities with what a report or an older row left out filled in. */
export function wholeCapabilities(c: Partial<PrinterCapabilities>): PrinterCapabilities {
  return {
    paperSizes: c.paperSizes ?? [],
    duplex: c.duplex ?? false,
    color: c.color ?? false,
    copies: c.copies ?? false,
    pageOptions: c.pageOptions ?? false,
    trays: c.trays ?? [],
    documentFormats: c.documentFormats ?? [],
  };
}

/** Rows by a key of theirs, each list in the rows' order. */
export function groupBy<T>(rows: T[], keyOf: (row: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) {
    const list = out.get(keyOf(row));
    if (list) list.push(row);
    else out.set(keyOf(row), [row]);
  }
  return out;
}
