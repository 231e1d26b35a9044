/**
 * An organization's locations: places its stations are in. Each change queues its event
 * (`location.created`, `location.updated`, `location.deleted`) in its own transaction.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Location } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, notFound } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { enqueue } from '../../lib/outbox.js';
import { listOldestFirst } from '../../lib/paging.js';
import { locationView } from '../../lib/resource-views.js';
import { type Committed, OUTBOX_TABLE } from './station-outbox.js';
import { LOCATION_COLUMNS, type LocationRow, toLocation } from './station-rows.js';

export interface LocationStore {
  createLocation(loc: {
    orgId: string;
    name: string;
    address: string;
    timezone: string;
  }): Promise<Location>;
  getLocation(orgId: string, id: string): Promise<Location>;
  /** A page of locations; with `countStations`, the stations in each, by its id (none: absent). */
  listLocations(
    orgId: string,
    limit: number,
    cursor: string,
    countStations?: boolean,
  ): Promise<{ items: Location[]; nextCursor: string; stationCounts: Record<string, number> }>;
  /** Changes a location; one whose fields already read so changes nothing and queues no event. */
  updateLocation(
    orgId: string,
    id: string,
    changes: {
      name?: string | undefined;
      address?: string | undefined;
      timezone?: string | undefined;
    },
  ): Promise<Location>;
  /** Deletes an empty location; a conflict while a station is in it. */
  deleteLocation(orgId: string, id: string): Promise<void>;
}

/**
 * A change to a location, for the event stream: `location.created`, `location.updated` or
 * `location.deleted` with `{location}` as the API shows it.
 */
export function locationEvent(
  type: 'location.created' | 'location.updated' | 'location.deleted',
  location: Location,
  at: Date,
) {
  return eventMessage(location.orgId, type, { location: locationView(location) }, at);
}

/** @param committed takes the outbox rows of each change once committed. */
export function createLocationStore(
  pool: pg.Pool,
  clock: Clock,
  committed: Committed,
): LocationStore {
  return {
    async createLocation(loc) {
      const { location, outbox } = await withTx(pool, async (tx) => {
        const now = clock.now();
        const { rows } = await tx.query<LocationRow>(
          `INSERT INTO locations (id, org_id, name, address, timezone, created_at)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${LOCATION_COLUMNS}`,
          [randomUUID(), loc.orgId, loc.name, loc.address, loc.timezone, now],
        );
        const location = toLocation(rows[0] as LocationRow);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [
          locationEvent('location.created', location, now),
        ]);
        return { location, outbox };
      });
      committed(outbox);
      return location;
    },

    async getLocation(orgId, id) {
      const { rows } = await pool.query<LocationRow>(
        `SELECT ${LOCATION_COLUMNS} FROM locations WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      if (!rows[0]) throw notFound('no such location');
      return toLocation(rows[0]);
    },

    async listLocations(orgId, limit, cursor, countStations = false) {
      const { items, nextCursor } = await listOldestFirst<LocationRow>(
        pool,
        {
          select: `SELECT ${LOCATION_COLUMNS} FROM locations`,
          where: 'org_id = $1',
          params: [orgId],
        },
        limit,
        cursor,
      );
      const stationCounts: Record<string, number> = {};
      if (countStations && items.length > 0) {
        const { rows } = await pool.query<{ location_id: string; stations: number }>(
          `SELECT location_id, count(*)::INT AS stations FROM stations
           WHERE org_id = $1 AND location_id = ANY($2::UUID[])
           GROUP BY location_id`,
          [orgId, items.map((row) => row.id)],
        );
        for (const row of rows) stationCounts[row.location_id] = row.stations;
      }
      return { items: items.map(toLocation), nextCursor, stationCounts };
    },

    async updateLocation(orgId, id, changes) {
      const { location, outbox } = await withTx(pool, async (tx) => {
        const before = await tx.query<LocationRow>(
          `SELECT ${LOCATION_COLUMNS} FROM locations WHERE org_id = $1 AND id = $2`,
          [orgId, id],
        );
        const row = before.rows[0];
        if (!row) throw notFound('no such location');
        const next = {
          name: changes.name ?? row.name,
          address: changes.address ?? row.address,
          timezone: changes.timezone ?? row.timezone,
        };
        if (
          next.name === row.name &&
          next.address === row.address &&
          next.timezone === row.timezone
        ) {
          return { location: toLocation(row), outbox: [] };
        }
        const { rows } = await tx.query<LocationRow>(
          `UPDATE locations SET name = $3, address = $4, timezone = $5
           WHERE org_id = $1 AND id = $2 RETURNING ${LOCATION_COLUMNS}`,
          [orgId, id, next.name, next.address, next.timezone],
        );
        const location = toLocation(rows[0] as LocationRow);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [
          locationEvent('location.updated', location, clock.now()),
        ]);
        return { location, outbox };
      });
      committed(outbox);
      return location;
    },

    async deleteLocation(orgId, id) {
      const outbox = await withTx(pool, async (tx) => {
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
        const { rows: deleted } = await tx.query<LocationRow>(
          `DELETE FROM locations WHERE org_id = $1 AND id = $2 RETURNING ${LOCATION_COLUMNS}`,
          [orgId, id],
        );
        if (!deleted[0]) throw notFound('no such location');
        return enqueue(tx, OUTBOX_TABLE, [
          locationEvent('location.deleted', toLocation(deleted[0]), clock.now()),
        ]);
      });
      committed(outbox);
    },
  };
}
