/**
 * The stations tables: locations, stations (device tokens as SHA-256 only) and printers. Every
 * query on tenant data is scoped by organization, except the lookup by token hash that the link
 * needs to learn which station (and organization) is calling.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type {
  Location,
  Printer,
  PrinterCapabilities,
  PrinterReport,
  Station,
} from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { queryThenCommit, withTx } from '../../lib/db.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { GroupCommit, type Outcome } from '../../lib/group-commit.js';
import { addToOutbox, enqueue, type OutboxMessage, type OutboxRow } from '../../lib/outbox.js';
import { decodeCursor, listOldestFirst, page } from '../../lib/paging.js';
import { columns, WriteBatch } from '../../lib/sql.js';
import { type TraceCarrier, traceCarrier } from '../../lib/tracing.js';

export const OUTBOX_TABLE = 'stations_outbox';

/** The most link opens one transaction records, and the most link closes. */
const MAX_OPENS = 250;

/** A printer as a link open or a printer sync compares it with what the agent reports. */
interface PrinterState {
  id: string;
  name: string;
  status: string;
  detail: string;
}

/** A station and, when it has any, one of its printers, as a link open reads them. */
interface LinkStationRow {
  station_id: string;
  station_name: string;
  org_id: string;
  region: string;
  revoked_at: Date | null;
  token_hash: Buffer;
  /** Whether the station read online before this open. */
  station_online: boolean;
  id: string | null;
  name: string | null;
  status: string | null;
  detail: string | null;
}

/** A link opened: its station, and the ids of the printers its agent reported, by name. */
export interface OpenedLink {
  station: LinkStation;
  printerIds: Record<string, string>;
}

function toLinkStation(
  id: string,
  name: string,
  row: { org_id: string; revoked_at: Date | null; region: string },
): LinkStation {
  return { id, name, orgId: row.org_id, revoked: row.revoked_at !== null, region: row.region };
}

function groupBy<T>(rows: T[], keyOf: (row: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) {
    const list = out.get(keyOf(row));
    if (list) list.push(row);
    else out.set(keyOf(row), [row]);
  }
  return out;
}

/** The status of a printer its station's agent no longer reports. */
export const REMOVED = 'removed';

interface LocationRow {
  id: string;
  org_id: string;
  name: string;
  address: string;
  timezone: string;
  created_at: Date;
}

interface StationRow {
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
}

interface PrinterRow {
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

const STATION_COLUMNS =
  'id, org_id, name, location_id, online, link_id, last_seen_at, revoked_at, created_at, agent_version, region';

const LOCATION_COLUMNS = 'id, org_id, name, address, timezone, created_at';

const PRINTER_SELECT = `SELECT p.id, p.org_id, p.station_id, p.name, p.status, p.detail,
  p.capabilities, p.created_at, p.updated_at, s.location_id, s.online AS station_online, s.region
  FROM printers p JOIN stations s ON s.id = p.station_id`;

function toLocation(row: LocationRow): Location {
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    address: row.address,
    timezone: row.timezone,
    createdAt: row.created_at,
  };
}

/**
 * A station as the API shows it, at `now`. An online station is connected now, so it was last seen
 * now; `last_seen_at` in its row is when its link opened, which is not what "last seen" means.
 */
function toStation(row: StationRow, now: Date): Station {
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    locationId: row.location_id ?? '',
    online: row.online,
    lastSeenAt: row.online ? now : (row.last_seen_at ?? undefined),
    createdAt: row.created_at,
    agentVersion: row.agent_version,
    region: row.region,
    tokenRevokedAt: row.revoked_at ?? undefined,
  };
}

function toPrinter(row: PrinterRow): Printer {
  return {
    id: row.id,
    orgId: row.org_id,
    stationId: row.station_id,
    locationId: row.location_id ?? '',
    name: row.name,
    status: row.status,
    detail: row.detail,
    capabilities: {
      paperSizes: row.capabilities.paperSizes ?? [],
      duplex: row.capabilities.duplex ?? false,
      color: row.capabilities.color ?? false,
      copies: row.capabilities.copies ?? false,
      pageOptions: row.capabilities.pageOptions ?? false,
    },
    stationOnline: row.station_online,
    updatedAt: row.updated_at,
    region: row.region,
  };
}

/** The station a device token belongs to, as the link needs it. */
export interface LinkStation {
  id: string;
  name: string;
  orgId: string;
  revoked: boolean;
  /** Its home region. */
  region: string;
}

/** A station as a link's re-read finds it: with the link the database records it on. */
export interface HeldStation extends LinkStation {
  online: boolean;
  linkId: string;
}

/** A link recorded open: its station and its id. */
export interface OpenLink {
  station: LinkStation;
  linkId: string;
}

/**
 * @param committed takes the outbox rows of every write once they are committed (a link opened
 *   or closed, its printers reported, an online station deleted), for the relay to publish at
 *   once; the relay's poll is only for rows a process that died left behind.
 */
export function createStationStore(
  pool: pg.Pool,
  clock: Clock,
  committed: (rows: OutboxRow[]) => void = () => {},
) {
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
   * Brings stations' printers in line with what their agents report, inside `tx`: reads them in
   * one query, marks those no longer reported `removed`, and adds to `batch` one upsert of every
   * printer reported (written when the caller sends the batch). Returns each station's printer ids
   * by name and queues `printer.status` for each printer added or whose status changed, with the
   * trace of the station's own request. A station appears at most once in `syncs`.
   */
  async function syncPrinters(
    tx: pg.PoolClient,
    batch: WriteBatch,
    syncs: Array<{
      station: { id: string; orgId: string };
      reports: PrinterReport[];
      trace?: TraceCarrier;
    }>,
    now: Date,
    messages: OutboxMessage[],
    /** The stations' printers, when the caller read them already, by station id. */
    read?: Map<string, PrinterState[]>,
  ): Promise<Array<Record<string, string>>> {
    let byStation = read;
    if (!byStation) {
      const { rows } = await tx.query<PrinterState & { station_id: string }>(
        `SELECT id, station_id, name, status, detail FROM printers
         WHERE org_id = ANY($1::UUID[]) AND station_id = ANY($2::UUID[])`,
        [[...new Set(syncs.map((s) => s.station.orgId))], syncs.map((s) => s.station.id)],
      );
      byStation = groupBy(rows, (r) => r.station_id);
    }
    const upserts: Array<{ id: string; orgId: string; stationId: string; report: PrinterReport }> =
      [];
    const gone: Array<{ orgId: string; id: string; trace: TraceCarrier | undefined }> = [];
    const ids = syncs.map(({ station, reports, trace }) => {
      const headers = trace ? { headers: trace as Record<string, string> } : {};
      const current = byStation.get(station.id) ?? [];
      const byName = new Map(current.map((r) => [r.name, r]));
      // A name reported twice is one printer, as the last report of it says.
      const reported = new Map(reports.map((r) => [r.name, r]));
      const ids: Record<string, string> = {};
      if (reported.size > 0) {
        for (const report of reported.values()) {
          const existing = byName.get(report.name);
          // A new printer's id is chosen here: were the name inserted by another transaction
          // meanwhile, SERIALIZABLE fails this one (and `withTx` runs it again) rather than let
          // the upsert update a row this transaction did not read.
          const id = existing?.id ?? randomUUID();
          ids[report.name] = id;
          upserts.push({ id, orgId: station.orgId, stationId: station.id, report });
          if (!existing || existing.status !== report.status || existing.detail !== report.detail)
            messages.push({
              ...printerStatusEvent(station.orgId, { id, ...report }, now),
              ...headers,
            });
        }
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
        JSON.stringify(u.report.capabilities ?? {}),
      ]);
      const at = batch.param(now);
      batch.add(
        `INSERT INTO printers (id, org_id, station_id, name, status, detail, capabilities, created_at, updated_at)
         SELECT *, ${at}::TIMESTAMPTZ, ${at}::TIMESTAMPTZ
         FROM (${batch.rows(rows, ['UUID', 'UUID', 'UUID', 'TEXT', 'TEXT', 'TEXT', 'JSONB'])}) AS r
         ON CONFLICT (station_id, name) DO UPDATE SET status = excluded.status,
           detail = excluded.detail, capabilities = excluded.capabilities,
           updated_at = CASE WHEN printers.status <> excluded.status
             OR printers.detail <> excluded.detail THEN excluded.updated_at
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

  interface LinkOpen {
    tokenHash: Buffer;
    linkId: string;
    printers: PrinterReport[];
    agentVersion: string;
    trace: TraceCarrier;
  }

  /**
   * Records links opened together in one transaction: one read of the stations their tokens name
   * with those stations' printers, and one statement for the stations' rows, every printer
   * reported and the outbox rows. A token no station has, or a revoked one, opens nothing and is
   * answered undefined. A token that opened twice in the group has its later open committed after
   * the earlier, in a transaction of its own, as they came.
   */
  async function commitOpens(group: LinkOpen[]): Promise<Outcome<OpenedLink | undefined>[]> {
    const outcomes = new Map<LinkOpen, Outcome<OpenedLink | undefined>>();
    let left = group;
    while (left.length > 0) {
      const seen = new Set<string>();
      const first: LinkOpen[] = [];
      const later: LinkOpen[] = [];
      for (const open of left) {
        const key = open.tokenHash.toString('hex');
        if (seen.has(key)) later.push(open);
        else {
          seen.add(key);
          first.push(open);
        }
      }
      const { opened, outbox } = await withTx(pool, async (tx) => {
        const at = clock.now();
        const { rows } = await tx.query<LinkStationRow>(
          `SELECT s.id AS station_id, s.name AS station_name, s.org_id, s.region, s.revoked_at,
             s.token_hash, s.online AS station_online,
             p.id, p.name, p.status, p.detail
           FROM stations s LEFT JOIN printers p ON p.org_id = s.org_id AND p.station_id = s.id
           WHERE s.token_hash = ANY($1::BYTEA[])`,
          [first.map((o) => o.tokenHash)],
        );
        const byToken = new Map(
          rows.map((r) => [
            r.token_hash.toString('hex'),
            toLinkStation(r.station_id, r.station_name, r),
          ]),
        );
        const printers = groupBy(
          rows.filter((r): r is LinkStationRow & PrinterState => r.id !== null),
          (r) => r.station_id,
        );
        // Each open with its station, found once; an unknown or revoked token opens nothing.
        const valid = first.flatMap((open) => {
          const station = byToken.get(open.tokenHash.toString('hex'));
          return station && !station.revoked ? [{ open, station }] : [];
        });
        const opened = new Map<LinkOpen, OpenedLink>();
        if (valid.length === 0) return { opened, outbox: [] };
        const batch = new WriteBatch();
        const stations = columns(valid, ({ open, station }) => [
          station.orgId,
          station.id,
          open.linkId,
          open.agentVersion.slice(0, 100),
        ]);
        batch.add(
          `UPDATE stations SET online = true, link_id = v.link_id, last_seen_at = ${batch.param(at)},
             agent_version = v.agent_version
           FROM (${batch.rows(stations, ['UUID', 'UUID', 'TEXT', 'TEXT'])})
             AS v (org_id, id, link_id, agent_version)
           WHERE stations.org_id = v.org_id AND stations.id = v.id`,
        );
        // A link that replaces another (the agent reconnected before its old link was seen to
        // end) leaves the station online: `station.online` is for a station that was offline.
        const wasOnline = new Set(rows.filter((r) => r.station_online).map((r) => r.station_id));
        const messages: OutboxMessage[] = valid
          .filter(({ station }) => !wasOnline.has(station.id))
          .map(({ open, station }) => ({
            ...eventMessage(station.orgId, 'station.online', { station_id: station.id }, at),
            headers: open.trace as Record<string, string>,
          }));
        const ids = await syncPrinters(
          tx,
          batch,
          valid.map(({ open, station }) => ({
            station,
            reports: open.printers,
            trace: open.trace,
          })),
          at,
          messages,
          printers,
        );
        const outbox = addToOutbox(batch, OUTBOX_TABLE, messages);
        await queryThenCommit(tx, batch.text(), batch.values);
        valid.forEach(({ open, station }, i) => {
          opened.set(open, { station, printerIds: ids[i] ?? {} });
        });
        return { opened, outbox };
      });
      committed(outbox);
      for (const o of first) outcomes.set(o, { ok: opened.get(o) });
      left = later;
    }
    return group.map((o) => outcomes.get(o) as Outcome<OpenedLink | undefined>);
  }
  const opens = new GroupCommit(commitOpens, MAX_OPENS);

  /**
   * Records the stations of `links` online (or offline) in one transaction, each only while the
   * link is still its current one and it reads the other way, and queues `station.online` (or
   * `station.offline`) for each that changed; answers their ids. A link that was no longer its
   * station's current one (the agent reconnected meanwhile) changes nothing, and neither does one
   * recorded so already (two replicas closing a lost replica's links).
   */
  async function recordLinks(
    links: readonly OpenLink[],
    online: boolean,
    alive: readonly string[] = [],
  ): Promise<Set<string>> {
    const { changed, outbox } = await withTx(pool, async (tx) => {
      const now = clock.now();
      if (alive.length > 0) {
        await tx.query(
          `INSERT INTO station_replicas (id, seen_at) SELECT r, $2 FROM unnest($1::TEXT[]) AS r
           ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`,
          [alive, now],
        );
      }
      const { rows } = await tx.query<{ id: string; org_id: string }>(
        `UPDATE stations SET online = $5, last_seen_at = $4
         FROM unnest($1::UUID[], $2::UUID[], $3::TEXT[]) AS v (org_id, id, link_id)
         WHERE stations.org_id = v.org_id AND stations.id = v.id
           AND stations.link_id = v.link_id AND stations.online <> $5
         RETURNING stations.id, stations.org_id`,
        [
          links.map((l) => l.station.orgId),
          links.map((l) => l.station.id),
          links.map((l) => l.linkId),
          now,
          online,
        ],
      );
      const type = online ? 'station.online' : 'station.offline';
      const batch = new WriteBatch();
      const outbox = addToOutbox(
        batch,
        OUTBOX_TABLE,
        rows.map((r) => eventMessage(r.org_id, type, { station_id: r.id }, now)),
      );
      if (outbox.length > 0) await queryThenCommit(tx, batch.text(), batch.values);
      return { changed: new Set(rows.map((r) => r.id)), outbox };
    });
    committed(outbox);
    return changed;
  }

  /** Links closed together go offline in one transaction ({@link recordLinks}). */
  async function commitCloses(group: OpenLink[]): Promise<Outcome<boolean>[]> {
    const offline = await recordLinks(group, false);
    return group.map((c) => ({ ok: offline.has(c.station.id) }));
  }
  const closes = new GroupCommit(commitCloses, MAX_OPENS);

  /**
   * The stations many device tokens belong to, by the token hash in hex; a token no station has
   * (replaced, or its station deleted) is absent. Not scoped by organization: the hashes are what
   * the links know.
   */
  async function stationsByTokenHashes(hashes: Buffer[]): Promise<Map<string, HeldStation>> {
    const found = new Map<string, HeldStation>();
    if (hashes.length === 0) return found;
    const { rows } = await pool.query<StationRow & { token_hash: Buffer }>(
      `SELECT ${STATION_COLUMNS}, token_hash FROM stations WHERE token_hash = ANY($1::BYTEA[])`,
      [hashes],
    );
    for (const row of rows) {
      found.set(row.token_hash.toString('hex'), {
        ...toLinkStation(row.id, row.name, row),
        online: row.online,
        linkId: row.link_id,
      });
    }
    return found;
  }

  return {
    async createLocation(loc: { orgId: string; name: string; address: string; timezone: string }) {
      const { rows } = await pool.query<LocationRow>(
        `INSERT INTO locations (id, org_id, name, address, timezone, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, org_id, name, address, timezone, created_at`,
        [randomUUID(), loc.orgId, loc.name, loc.address, loc.timezone, clock.now()],
      );
      return toLocation(rows[0] as LocationRow);
    },

    async getLocation(orgId: string, id: string): Promise<Location> {
      const { rows } = await pool.query<LocationRow>(
        'SELECT id, org_id, name, address, timezone, created_at FROM locations WHERE org_id = $1 AND id = $2',
        [orgId, id],
      );
      if (!rows[0]) throw notFound('no such location');
      return toLocation(rows[0]);
    },

    async listLocations(orgId: string, limit: number, cursor: string) {
      const { items, nextCursor } = await listOldestFirst<LocationRow>(
        pool,
        {
          select: 'SELECT id, org_id, name, address, timezone, created_at FROM locations',
          where: 'org_id = $1',
          params: [orgId],
        },
        limit,
        cursor,
      );
      return { items: items.map(toLocation), nextCursor };
    },

    async listStations(orgId: string, limit: number, cursor: string) {
      const { items, nextCursor } = await listOldestFirst<StationRow>(
        pool,
        {
          select: `SELECT ${STATION_COLUMNS} FROM stations`,
          where: 'org_id = $1',
          params: [orgId],
        },
        limit,
        cursor,
      );
      const now = clock.now();
      return { items: items.map((row) => toStation(row, now)), nextCursor };
    },

    /** Every organization's stations, oldest first; only the offline ones with `offline`. */
    async listAllStations(offline: boolean, limit: number, cursor: string) {
      const { items, nextCursor } = await listOldestFirst<StationRow>(
        pool,
        {
          select: `SELECT ${STATION_COLUMNS} FROM stations`,
          where: '(NOT $1::BOOL OR NOT online)',
          params: [offline],
        },
        limit,
        cursor,
      );
      const now = clock.now();
      return { items: items.map((row) => toStation(row, now)), nextCursor };
    },

    async createStation(s: {
      orgId: string;
      name: string;
      locationId: string;
      region: string;
      tokenHash: Buffer;
    }) {
      return withTx(pool, async (tx) => {
        if (s.locationId) {
          const loc = await tx.query('SELECT 1 FROM locations WHERE org_id = $1 AND id = $2', [
            s.orgId,
            s.locationId,
          ]);
          if (loc.rowCount === 0)
            throw invalid('location_id names no location of this organization', 'location_id');
        }
        const { rows } = await tx.query<StationRow>(
          `INSERT INTO stations (id, org_id, name, location_id, token_hash, region, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${STATION_COLUMNS}`,
          [randomUUID(), s.orgId, s.name, s.locationId || null, s.tokenHash, s.region, clock.now()],
        );
        return toStation(rows[0] as StationRow, clock.now());
      });
    },

    /** Revokes the station's token; with `newHash`, replaces it instead. */
    async replaceToken(orgId: string, stationId: string, newHash: Buffer | null): Promise<Station> {
      const { rows } = await pool.query<StationRow>(
        newHash
          ? `UPDATE stations SET token_hash = $3, revoked_at = NULL
             WHERE org_id = $1 AND id = $2 RETURNING ${STATION_COLUMNS}`
          : `UPDATE stations SET revoked_at = COALESCE(revoked_at, $3)
             WHERE org_id = $1 AND id = $2 RETURNING ${STATION_COLUMNS}`,
        [orgId, stationId, newHash ?? clock.now()],
      );
      if (!rows[0]) throw notFound('no such station');
      return toStation(rows[0], clock.now());
    },

    async getStation(orgId: string, id: string): Promise<Station> {
      const { rows } = await pool.query<StationRow>(
        `SELECT ${STATION_COLUMNS} FROM stations WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      if (!rows[0]) throw notFound('no such station');
      return toStation(rows[0], clock.now());
    },

    /**
     * Renames a station, moves it to another location (`locationId` '' takes it out of its
     * location) or to another home region.
     */
    async updateStation(
      orgId: string,
      id: string,
      changes: {
        name?: string | undefined;
        locationId?: string | undefined;
        region?: string | undefined;
      },
    ): Promise<Station> {
      return withTx(pool, async (tx) => {
        if (changes.locationId) {
          const loc = await tx.query('SELECT 1 FROM locations WHERE org_id = $1 AND id = $2', [
            orgId,
            changes.locationId,
          ]);
          if (loc.rowCount === 0)
            throw invalid('location_id names no location of this organization', 'location_id');
        }
        const { rows } = await tx.query<StationRow>(
          `UPDATE stations SET name = COALESCE($3, name),
             location_id = CASE WHEN $4::TEXT IS NULL THEN location_id
                                WHEN $4::TEXT = '' THEN NULL ELSE $4::TEXT::UUID END,
             region = COALESCE($5, region)
           WHERE org_id = $1 AND id = $2 RETURNING ${STATION_COLUMNS}`,
          [orgId, id, changes.name ?? null, changes.locationId ?? null, changes.region ?? null],
        );
        if (!rows[0]) throw notFound('no such station');
        return toStation(rows[0], clock.now());
      });
    },

    /**
     * Deletes a station and its printers in one transaction, and queues `station.offline` when it
     * was online. Returns the station as it was and the ids of its printers.
     */
    async deleteStation(
      orgId: string,
      id: string,
    ): Promise<{ station: Station; printerIds: string[] }> {
      const { deleted, outbox } = await withTx(pool, async (tx) => {
        const { rows } = await tx.query<StationRow>(
          `DELETE FROM stations WHERE org_id = $1 AND id = $2 RETURNING ${STATION_COLUMNS}`,
          [orgId, id],
        );
        const row = rows[0];
        if (!row) throw notFound('no such station');
        const printers = await tx.query<{ id: string }>(
          'DELETE FROM printers WHERE org_id = $1 AND station_id = $2 RETURNING id',
          [orgId, id],
        );
        const outbox = row.online
          ? await enqueue(tx, OUTBOX_TABLE, [
              eventMessage(orgId, 'station.offline', { station_id: id }, clock.now()),
            ])
          : [];
        return {
          deleted: {
            station: toStation(row, clock.now()),
            printerIds: printers.rows.map((r) => r.id),
          },
          outbox,
        };
      });
      // Published now, not at the relay's next poll a few seconds later.
      committed(outbox);
      return deleted;
    },

    /**
     * A batch of the organization's stations deleted with their printers, for the deletion of the
     * organization; once none is left, its locations too (`done`). Answers the stations deleted,
     * whose links the caller cuts.
     */
    async purgeOrg(
      orgId: string,
      limit: number,
    ): Promise<{ deleted: number; stationIds: string[]; done: boolean }> {
      return withTx(pool, async (tx) => {
        const stations = await tx.query<{ id: string }>(
          `DELETE FROM stations WHERE org_id = $1
             AND id IN (SELECT id FROM stations WHERE org_id = $1 LIMIT $2)
           RETURNING id`,
          [orgId, limit],
        );
        const stationIds = stations.rows.map((r) => r.id);
        const printers = await tx.query(
          'DELETE FROM printers WHERE org_id = $1 AND station_id = ANY($2::UUID[])',
          [orgId, stationIds],
        );
        let deleted = stationIds.length + (printers.rowCount ?? 0);
        const done = stationIds.length < limit;
        if (done) {
          const rest = await tx.query('DELETE FROM printers WHERE org_id = $1', [orgId]);
          const locations = await tx.query('DELETE FROM locations WHERE org_id = $1', [orgId]);
          deleted += (rest.rowCount ?? 0) + (locations.rowCount ?? 0);
        }
        return { deleted, stationIds, done };
      });
    },

    async deletePrinter(orgId: string, id: string): Promise<Printer> {
      return withTx(pool, async (tx) => {
        const { rows } = await tx.query<PrinterRow>(
          `${PRINTER_SELECT} WHERE p.org_id = $1 AND p.id = $2`,
          [orgId, id],
        );
        if (!rows[0]) throw notFound('no such printer');
        await tx.query('DELETE FROM printers WHERE org_id = $1 AND id = $2', [orgId, id]);
        return toPrinter(rows[0]);
      });
    },

    async updateLocation(
      orgId: string,
      id: string,
      changes: {
        name?: string | undefined;
        address?: string | undefined;
        timezone?: string | undefined;
      },
    ): Promise<Location> {
      const { rows } = await pool.query<LocationRow>(
        `UPDATE locations SET name = COALESCE($3, name), address = COALESCE($4, address),
           timezone = COALESCE($5, timezone)
         WHERE org_id = $1 AND id = $2 RETURNING ${LOCATION_COLUMNS}`,
        [orgId, id, changes.name ?? null, changes.address ?? null, changes.timezone ?? null],
      );
      if (!rows[0]) throw notFound('no such location');
      return toLocation(rows[0]);
    },

    /** Deletes an empty location; a conflict while a station is in it. */
    async deleteLocation(orgId: string, id: string): Promise<void> {
      await withTx(pool, async (tx) => {
        const { rows } = await tx.query<{ name: string; n: string }>(
          `SELECT name, count(*) OVER () AS n FROM stations WHERE org_id = $1 AND location_id = $2
           ORDER BY name LIMIT 3`,
          [orgId, id],
        );
        const n = Number(rows[0]?.n ?? 0);
        if (n > 0) {
          // Named, so that the operator knows which to move (the first three, by name).
          const names = rows.map((r) => JSON.stringify(r.name)).join(', ');
          throw conflict(
            `${n} station${n === 1 ? ' is' : 's are'} in this location (${names}${n > rows.length ? ', …' : ''}): move or delete ${n === 1 ? 'it' : 'them'} first`,
          );
        }
        const res = await tx.query('DELETE FROM locations WHERE org_id = $1 AND id = $2', [
          orgId,
          id,
        ]);
        if (res.rowCount === 0) throw notFound('no such location');
      });
    },

    /**
     * The station a device token belongs to, by the token's hash: the one lookup not scoped by
     * organization, since the hash is all a link knows. Links opening at once look their tokens up
     * together, in one query for all that wait.
     */

    stationsByTokenHashes,

    /** Records that stations replica `id` is alive at `at`. */
    async replicaSeen(id: string, at: Date, takesReports = true): Promise<void> {
      await pool.query(
        `INSERT INTO station_replicas (id, seen_at, takes_reports) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at,
           takes_reports = excluded.takes_reports`,
        [id, at, takesReports],
      );
    },

    /**
     * Whether a replica other than `self`, heard from since `since`, could store its stations'
     * reports at its last beat.
     */
    async anotherReplicaTakesReports(self: string, since: Date): Promise<boolean> {
      const { rows } = await pool.query<{ found: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM station_replicas
           WHERE id <> $1 AND seen_at >= $2 AND takes_reports) AS found`,
        [self, since],
      );
      return rows[0]?.found === true;
    },

    /** Forgets the replicas not seen since `before`. */
    async forgetReplicas(before: Date): Promise<void> {
      await pool.query('DELETE FROM station_replicas WHERE seen_at < $1', [before]);
    },

    /**
     * Links recorded open on a replica other than `self` that has not said it is alive since
     * `since` (at most `limit` of them), for the live replica of the smallest id only; any other
     * gets none. A link id written before replicas named themselves in
     * it names none, and is never counted. Not scoped by organization: a sweep over every
     * station's link, which changes each only through `linkClosed`.
     */
    async linksOfLostReplicas(self: string, since: Date, limit: number): Promise<OpenLink[]> {
      // The replicas first, a small table: most of the time none is lost, and the stations are
      // not read at all. A replica never heard from (no row) is not taken for lost.
      const { rows: others } = await pool.query<{ id: string; lost: boolean }>(
        'SELECT id, seen_at < $2 AS lost FROM station_replicas WHERE id <> $1',
        [self, since],
      );
      const lost = others.filter((r) => r.lost);
      // One replica sweeps, the live one of the smallest id, rather than every live one closing
      // the same links at once and failing each other's transactions. Should it be unable to,
      // it is taken for lost in its turn, and the next one sweeps for both.
      if (lost.length === 0 || others.some((r) => !r.lost && r.id < self)) return [];
      const { rows } = await pool.query<StationRow>(
        `SELECT ${STATION_COLUMNS} FROM stations
         WHERE online AND split_part(link_id, ':', 1) = ANY($1::TEXT[])
         LIMIT $2`,
        [lost.map((r) => r.id), limit],
      );
      return rows.map((row) => ({
        station: toLinkStation(row.id, row.name, row),
        linkId: row.link_id,
      }));
    },

    /**
     * Records online again the stations whose current link is one of `links` and that read
     * offline (a replica took this one's for lost), and queues `station.online` for each; answers
     * how many.
     */
    async linksStillOpen(links: OpenLink[]): Promise<number> {
      if (links.length === 0) return 0;
      // The replica holding them says it is alive in the same transaction, so that no other
      // replica takes them for lost again before its next beat.
      const replicas = [
        ...new Set(links.flatMap((l) => (l.linkId.includes(':') ? [l.linkId.split(':')[0]] : []))),
      ] as string[];
      return (await recordLinks(links, true, replicas)).size;
    },

    async listPrinters(
      orgId: string,
      filters: { stationId: string; locationId: string },
      limit: number,
      cursor: string,
    ) {
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

    async getPrinter(orgId: string, id: string): Promise<Printer> {
      const { rows } = await pool.query<PrinterRow>(
        `${PRINTER_SELECT} WHERE p.org_id = $1 AND p.id = $2`,
        [orgId, id],
      );
      if (!rows[0]) throw notFound('no such printer');
      return toPrinter(rows[0]);
    },

    /**
     * The printers named by (organization, printer) and every printer of the stations named by
     * (organization, station), each once; pairs that name nothing are left out.
     */
    async printersOf(
      printers: Array<{ orgId: string; printerId: string }>,
      stations: Array<{ orgId: string; stationId: string }>,
    ): Promise<Printer[]> {
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

    /**
     * Records a new link as the current one of the station whose device token hashes to
     * `tokenHash`, and syncs its printers; queues `station.online`. Undefined when no station has
     * the token or it is revoked. Links that open while a group of opens commits go together in
     * the next (group commit).
     */
    linkOpened(
      tokenHash: Buffer,
      linkId: string,
      printers: PrinterReport[],
      agentVersion = '',
    ): Promise<OpenedLink | undefined> {
      return opens.submit({ tokenHash, linkId, printers, agentVersion, trace: traceCarrier() });
    },

    async printersChanged(
      station: LinkStation,
      printers: PrinterReport[],
    ): Promise<Record<string, string>> {
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

    /**
     * Records the station offline if `linkId` is still its current link, and queues
     * `station.offline`; resolves to whether it was. Links that close while a group of closes
     * commits go together in the next (group commit).
     */
    linkClosed(station: LinkStation, linkId: string): Promise<boolean> {
      return closes.submit({ station, linkId });
    },
  };
}

export type StationStore = ReturnType<typeof createStationStore>;
