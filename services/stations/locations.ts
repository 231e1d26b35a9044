/** An organization's locations: places its stations are in. */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Location } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, notFound } from '../../lib/errors.js';
import { listOldestFirst } from '../../lib/paging.js';
import { LOCATION_COLUMNS, type LocationRow, toLocation } from './station-rows.js';

export interface LocationStore {
  createLocation(loc: {
    orgId: string;
    name: string;
    address: string;
    timezone: string;
  }): Promise<Location>;
  getLocation(orgId: string, id: string): Promise<Location>;
  listLocations(
    orgId: string,
    limit: number,
    cursor: string,
  ): Promise<{ items: Location[]; nextCursor: string }>;
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

export function createLocationStore(pool: pg.Pool, clock: Clock): LocationStore {
  return {
    async createLocation(loc) {
      const { rows } = await pool.query<LocationRow>(
        `INSERT INTO locations (id, org_id, name, address, timezone, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${LOCATION_COLUMNS}`,
        [randomUUID(), loc.orgId, loc.name, loc.address, loc.timezone, clock.now()],
      );
      return toLocation(rows[0] as LocationRow);
    },

    async getLocation(orgId, id) {
      const { rows } = await pool.query<LocationRow>(
        `SELECT ${LOCATION_COLUMNS} FROM locations WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      if (!rows[0]) throw notFound('no such location');
      return toLocation(rows[0]);
    },

    async listLocations(orgId, limit, cursor) {
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
      return { items: items.map(toLocation), nextCursor };
    },

    async updateLocation(orgId, id, changes) {
      const { rows } = await pool.query<LocationRow>(
        `UPDATE locations SET name = COALESCE($3, name), address = COALESCE($4, address),
           timezone = COALESCE($5, timezone)
         WHERE org_id = $1 AND id = $2 RETURNING ${LOCATION_COLUMNS}`,
        [orgId, id, changes.name ?? null, changes.address ?? null, changes.timezone ?? null],
      );
      if (!rows[0]) throw notFound('no such location');
      return toLocation(rows[0]);
    },

    async deleteLocation(orgId, id) {
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
  };
}
