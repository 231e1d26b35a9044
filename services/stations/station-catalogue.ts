/**
 * An organization's stations as the API manages them: created with a device token (its SHA-256
 * only), renamed, moved, their token revoked or replaced, deleted with their printers.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Station } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { invalid, notFound } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { enqueue, type OutboxRow } from '../../lib/outbox.js';
import { listOldestFirst } from '../../lib/paging.js';
import { stationView } from '../../lib/resource-views.js';
import { stationBucket } from './releases.js';
import { type Committed, OUTBOX_TABLE } from './station-outbox.js';
import { STATION_COLUMNS, type StationRow, toStation } from './station-rows.js';

/** A page of stations. */
export interface StationPage {
  items: Station[];
  nextCursor: string;
}

export interface StationCatalogue {
  listStations(orgId: string, limit: number, cursor: string): Promise<StationPage>;
  /** Every organization's stations, oldest first; only the offline ones with `offline`. */
  listAllStations(offline: boolean, limit: number, cursor: string): Promise<StationPage>;
  createStation(s: NewStation): Promise<Station>;
  /** Revokes the station's token; with `newHash`, replaces it instead. */
  replaceToken(orgId: string, stationId: string, newHash: Buffer | null): Promise<Station>;
  getStation(orgId: string, id: string): Promise<Station>;
  /**
   * Renames a station, moves it to another location (`locationId` '' takes it out of its
   * location) or to another home region.
   */
  updateStation(
    orgId: string,
    id: string,
    changes: {
      name?: string | undefined;
      locationId?: string | undefined;
      region?: string | undefined;
    },
  ): Promise<Station>;
  /**
   * Deletes a station and its printers in one transaction, and queues `station.offline` when it
   * was online, then `station.deleted`. Returns the station as it was and the ids of its printers.
   */
  deleteStation(orgId: string, id: string): Promise<{ station: Station; printerIds: string[] }>;
  /**
   * A batch of the organization's stations deleted with their printers, for the deletion of the
   * organization (its enrollment codes first, so that none makes another station meanwhile); once
   * none is left, its locations too (`done`). Answers the stations deleted, whose links the
   * caller cuts.
   */
  purgeOrg(
    orgId: string,
    limit: number,
  ): Promise<{ deleted: number; stationIds: string[]; done: boolean }>;
}

/** A station to insert: its token as its SHA-256 only. */
export interface NewStation {
  orgId: string;
  name: string;
  locationId: string;
  region: string;
  tokenHash: Buffer;
}

/**
 * A change to a station, for the event stream: `station.created`, `station.updated` or
 * `station.deleted` with `{station}` as the API shows it (never its token).
 */
export function stationEvent(
  type: 'station.created' | 'station.updated' | 'station.deleted',
  station: Station,
  at: Date,
) {
  return eventMessage(station.orgId, type, { station: stationView(station) }, at);
}

/**
 * Inserts a station in the caller's transaction, after checking its location, and queues
 * `station.created`: the one way a station is made, whether by the API or from an enrollment
 * code. Answers the station and the outbox rows to hand on once committed.
 */
export async function insertStation(
  tx: pg.PoolClient,
  s: NewStation,
  now: Date,
): Promise<{ station: Station; outbox: OutboxRow[] }> {
  if (s.locationId) await checkLocation(tx, s.orgId, s.locationId);
  const id = randomUUID();
  const { rows } = await tx.query<StationRow>(
    `INSERT INTO stations (id, org_id, name, location_id, token_hash, region, created_at,
       rollout_bucket)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${STATION_COLUMNS}`,
    [id, s.orgId, s.name, s.locationId || null, s.tokenHash, s.region, now, stationBucket(id)],
  );
  const station = toStation(rows[0] as StationRow, now);
  const outbox = await enqueue(tx, OUTBOX_TABLE, [stationEvent('station.created', station, now)]);
  return { station, outbox };
}

/** Refuses a location id that names no location of the organization. */
export async function checkLocation(
  tx: pg.PoolClient,
  orgId: string,
  locationId: string,
): Promise<void> {
  const loc = await tx.query('SELECT 1 FROM locations WHERE org_id = $1 AND id = $2', [
    orgId,
    locationId,
  ]);
  if (loc.rowCount === 0)
    throw invalid('location_id names no location of this organization', 'location_id');
}

/** @param committed takes the outbox rows of a deletion once committed. */
export function createStationCatalogue(
  pool: pg.Pool,
  clock: Clock,
  committed: Committed,
): StationCatalogue {
  async function listWhere(
    where: string,
    params: unknown[],
    limit: number,
    cursor: string,
  ): Promise<StationPage> {
    const { items, nextCursor } = await listOldestFirst<StationRow>(
      pool,
      { select: `SELECT ${STATION_COLUMNS} FROM stations`, where, params },
      limit,
      cursor,
    );
    const now = clock.now();
    return { items: items.map((row) => toStation(row, now)), nextCursor };
  }

  return {
    listStations(orgId, limit, cursor) {
      return listWhere('org_id = $1', [orgId], limit, cursor);
    },

    listAllStations(offline, limit, cursor) {
      return listWhere('(NOT $1::BOOL OR NOT online)', [offline], limit, cursor);
    },

    async createStation(s) {
      const { station, outbox } = await withTx(pool, (tx) => insertStation(tx, s, clock.now()));
      committed(outbox);
      return station;
    },

    async replaceToken(orgId, stationId, newHash) {
      const { station, outbox } = await withTx(pool, async (tx) => {
        const now = clock.now();
        const { rows } = await tx.query<StationRow>(
          newHash
            ? `UPDATE stations SET token_hash = $3, revoked_at = NULL
               WHERE org_id = $1 AND id = $2 RETURNING ${STATION_COLUMNS}`
            : `UPDATE stations SET revoked_at = COALESCE(revoked_at, $3)
               WHERE org_id = $1 AND id = $2 RETURNING ${STATION_COLUMNS}`,
          [orgId, stationId, newHash ?? now],
        );
        if (!rows[0]) throw notFound('no such station');
        const station = toStation(rows[0], now);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [
          stationEvent('station.updated', station, now),
        ]);
        return { station, outbox };
      });
      committed(outbox);
      return station;
    },

    async getStation(orgId, id) {
      const { rows } = await pool.query<StationRow>(
        `SELECT ${STATION_COLUMNS} FROM stations WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      if (!rows[0]) throw notFound('no such station');
      return toStation(rows[0], clock.now());
    },

    async updateStation(orgId, id, changes) {
      const { station, outbox } = await withTx(pool, async (tx) => {
        if (changes.locationId) await checkLocation(tx, orgId, changes.locationId);
        const { rows } = await tx.query<StationRow>(
          `UPDATE stations SET name = COALESCE($3, name),
             location_id = CASE WHEN $4::TEXT IS NULL THEN location_id
                                WHEN $4::TEXT = '' THEN NULL ELSE $4::TEXT::UUID END,
             region = COALESCE($5, region)
           WHERE org_id = $1 AND id = $2 RETURNING ${STATION_COLUMNS}`,
          [orgId, id, changes.name ?? null, changes.locationId ?? null, changes.region ?? null],
        );
        if (!rows[0]) throw notFound('no such station');
        const now = clock.now();
        const station = toStation(rows[0], now);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [
          stationEvent('station.updated', station, now),
        ]);
        return { station, outbox };
      });
      committed(outbox);
      return station;
    },

    async deleteStation(orgId, id) {
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
        const now = clock.now();
        const station = toStation(row, now);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [
          ...(row.online ? [eventMessage(orgId, 'station.offline', { station_id: id }, now)] : []),
          stationEvent('station.deleted', station, now),
        ]);
        return {
          deleted: {
            station,
            printerIds: printers.rows.map((r) => r.id),
          },
          outbox,
        };
      });
      // Published now, not at the relay's next poll a few seconds later.
      committed(outbox);
      return deleted;
    },

    async purgeOrg(orgId, limit) {
      return withTx(pool, async (tx) => {
        const codes = await tx.query('DELETE FROM enrollments WHERE org_id = $1', [orgId]);
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
        let deleted = (codes.rowCount ?? 0) + stationIds.length + (printers.rowCount ?? 0);
        const done = stationIds.length < limit;
        if (done) {
          const rest = await tx.query('DELETE FROM printers WHERE org_id = $1', [orgId]);
          const locations = await tx.query('DELETE FROM locations WHERE org_id = $1', [orgId]);
          deleted += (rest.rowCount ?? 0) + (locations.rowCount ?? 0);
        }
        return { deleted, stationIds, done };
      });
    },
  };
}
