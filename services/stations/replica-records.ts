/**
 * The stations replicas as the database knows them (`station_replicas`): when each was last heard
 * from and whether it could store reports then, and the links recorded open on those lost.
 */
import type pg from 'pg';
import { type OpenLink, toLinkStation } from './link-station.js';
import { STATION_COLUMNS, type StationRow } from './station-rows.js';

export interface ReplicaRecords {
  /** Records that stations replica `id` is alive at `at`. */
  replicaSeen(id: string, at: Date, takesReports?: boolean): Promise<void>;
  /**
   * Whether a replica other than `self`, heard from since `since`, could store its stations'
   * reports at its last beat.
   */
  anotherReplicaTakesReports(self: string, since: Date): Promise<boolean>;
  /** Forgets the replicas not seen since `before`. */
  forgetReplicas(before: Date): Promise<void>;
  /**
   * Links recorded open on a replica other than `self` that has not said it is alive since
   * `since` (at most `limit` of them), for the live replica of the smallest id only; any other
   * gets none. A link id written before replicas named themselves in
   * it names none, and is never counted. Not scoped by organization: a sweep over every
   * station's link, which changes each only through `linkClosed`.
   */
  linksOfLostReplicas(self: string, since: Date, limit: number): Promise<OpenLink[]>;
}

export function createReplicaRecords(pool: pg.Pool): ReplicaRecords {
  return {
    async replicaSeen(id, at, takesReports = true) {
      await pool.query(
        `INSERT INTO station_replicas (id, seen_at, takes_reports) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at,
           takes_reports = excluded.takes_reports`,
        [id, at, takesReports],
      );
    },

    async anotherReplicaTakesReports(self, since) {
      const { rows } = await pool.query<{ found: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM station_replicas
           WHERE id <> $1 AND seen_at >= $2 AND takes_reports) AS found`,
        [self, since],
      );
      return rows[0]?.found === true;
    },

    async forgetReplicas(before) {
      await pool.query('DELETE FROM station_replicas WHERE seen_at < $1', [before]);
    },

    async linksOfLostReplicas(self, since, limit) {
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
  };
}
