/**
 * Enrollment codes (docs/platforms.md): an organization makes a one-use code for a station it
 * names; the station's agent gives the code back and gets the station, made then, with its device
 * token. Only the code's hash is kept, and found by lookup. Using a code and making its station are
 * one transaction, so that a code makes one station however many redeem it at once.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Enrollment, Station } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { isUniqueViolation, withTx } from '../../lib/db.js';
import { notFound, SpoolError } from '../../lib/errors.js';
import { rfc3339 } from '../../lib/time.js';
import { checkLocation, insertStation } from './station-catalogue.js';
import type { Committed } from './station-outbox.js';

/** How long a used or expired code is kept (and answers 410) before it is forgotten (404). */
export const ENROLLMENT_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

export interface EnrollmentStore {
  /**
   * Records a code for a station of the organization; `code()` makes a code and its hash (asked
   * again in the unlikely case that the hash is taken). Answers the enrollment with its code.
   */
  createEnrollment(e: {
    orgId: string;
    stationName: string;
    locationId: string;
    expiresInMs: number;
    code(): { code: string; hash: Buffer };
  }): Promise<Enrollment>;
  /**
   * Uses the code of hash `codeHash` and makes its station with the token of hash `tokenHash`, in
   * `region`. `not_found` for an unknown code, `gone` for one used or expired.
   */
  redeemEnrollment(
    codeHash: Buffer,
    station: { region: string; tokenHash: Buffer },
  ): Promise<Station>;
}

interface ClaimedRow {
  id: string;
  org_id: string;
  station_name: string;
  location_id: string | null;
}

/** @param committed takes the outbox rows of a station made from a code once committed. */
export function createEnrollmentStore(
  pool: pg.Pool,
  clock: Clock,
  committed: Committed,
): EnrollmentStore {
  return {
    async createEnrollment(e) {
      for (let attempt = 0; ; attempt++) {
        const { code, hash } = e.code();
        try {
          return await withTx(pool, async (tx) => {
            if (e.locationId) await checkLocation(tx, e.orgId, e.locationId);
            const now = clock.now();
            // The organization's codes used or expired long ago go as it makes new ones.
            await tx.query('DELETE FROM enrollments WHERE org_id = $1 AND expires_at < $2', [
              e.orgId,
              new Date(now.getTime() - ENROLLMENT_KEPT_MS),
            ]);
            const id = randomUUID();
            const expiresAt = new Date(now.getTime() + e.expiresInMs);
            await tx.query(
              `INSERT INTO enrollments (id, org_id, code_hash, station_name, location_id,
                 expires_at, created_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7)`,
              [id, e.orgId, hash, e.stationName, e.locationId || null, expiresAt, now],
            );
            return {
              id,
              orgId: e.orgId,
              code,
              stationName: e.stationName,
              locationId: e.locationId,
              expiresAt,
              createdAt: now,
            };
          });
        } catch (err) {
          // Two codes alike in 2^50: draw another.
          if (isUniqueViolation(err) && attempt < 3) continue;
          throw err;
        }
      }
    },

    async redeemEnrollment(codeHash, s) {
      const { station, outbox } = await withTx(pool, async (tx) => {
        const now = clock.now();
        const claimed = await tx.query<ClaimedRow>(
          `UPDATE enrollments SET used_at = $2
           WHERE code_hash = $1 AND used_at IS NULL AND expires_at > $2
           RETURNING id, org_id, station_name, location_id`,
          [codeHash, now],
        );
        const row = claimed.rows[0];
        if (!row) throw await whyNot(tx, codeHash);
        // A location deleted since the code was made: the station is made outside any location.
        let locationId = row.location_id ?? '';
        if (locationId !== '') {
          const loc = await tx.query('SELECT 1 FROM locations WHERE org_id = $1 AND id = $2', [
            row.org_id,
            locationId,
          ]);
          if (loc.rowCount === 0) locationId = '';
        }
        const made = await insertStation(
          tx,
          {
            orgId: row.org_id,
            name: row.station_name,
            locationId,
            region: s.region,
            tokenHash: s.tokenHash,
          },
          now,
        );
        await tx.query('UPDATE enrollments SET station_id = $3 WHERE org_id = $1 AND id = $2', [
          row.org_id,
          row.id,
          made.station.id,
        ]);
        return made;
      });
      committed(outbox);
      return station;
    },
  };
}

/** Why no code of that hash can be used: unknown, used, or expired. */
async function whyNot(tx: pg.PoolClient, codeHash: Buffer): Promise<SpoolError> {
  const { rows } = await tx.query<{ used_at: Date | null; expires_at: Date }>(
    'SELECT used_at, expires_at FROM enrollments WHERE code_hash = $1',
    [codeHash],
  );
  const row = rows[0];
  if (!row) {
    return notFound(
      'no such enrollment code: check it against the one you were given (it looks like ABCD-EFGH-JK)',
    );
  }
  if (row.used_at) {
    return new SpoolError(
      'gone',
      'this enrollment code has been used: each code makes one station; ask for a new one',
    );
  }
  return new SpoolError(
    'gone',
    `this enrollment code expired at ${rfc3339(row.expires_at)}; ask for a new one`,
  );
}
