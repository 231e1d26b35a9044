/**
 * People's accounts as sign-in needs them, and their sessions: opened at sign-in (or on accepting
 * an invitation), looked up by the hash of their credential (the hash is the credential), ended by
 * sign-out, idleness or age.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Membership, Person } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { membershipsOf } from './membership-store.js';
import { announce, sessionsRevoked } from './outbox.js';
import {
  PERSON_COLUMNS,
  type PersonRow,
  type Q,
  type SessionRow,
  toPerson,
} from './people-rows.js';

/** How long a session lives, and how stale its `last_seen_at` may get before a use writes it. */
export interface SessionLimits {
  idleMs: number;
  absoluteMs: number;
  refreshMs: number;
}

export interface SessionStore {
  /** The person with this email, password hash included, for sign-in. */
  findPersonByEmail(email: string): Promise<PersonRow | undefined>;
  /** Opens a session for the person; answers its id. */
  createSession(personId: string, hash: Buffer): Promise<string>;
  /**
   * The session with this credential hash and its person, when it is neither revoked nor past
   * its idle or absolute expiry; refreshes `last_seen_at` when it is older than `refreshMs`.
   */
  authenticateSession(
    hash: Buffer,
    limits: SessionLimits,
  ): Promise<{ session: SessionRow; person: Person; memberships: Membership[] } | undefined>;
  /** Revokes the session with this hash (if any) and tells every gateway. */
  revokeSession(hash: Buffer): Promise<void>;
}

/** Opens a session in `q` (a transaction that also made the person a member, say). */
export async function insertSession(
  q: Q,
  clock: Clock,
  personId: string,
  hash: Buffer,
): Promise<string> {
  const id = randomUUID();
  await q.query(
    `INSERT INTO sessions (id, person_id, credential_hash, created_at, last_seen_at)
     VALUES ($1, $2, $3, $4, $4)`,
    [id, personId, hash, clock.now()],
  );
  return id;
}

/** Whether a session is still good at `now`: not revoked, nor past either expiry. */
function sessionLives(row: SessionRow, limits: SessionLimits, now: number): boolean {
  return (
    row.revoked_at === null &&
    now - row.created_at.getTime() < limits.absoluteMs &&
    now - row.last_seen_at.getTime() < limits.idleMs
  );
}

export function createSessionStore(pool: pg.Pool, clock: Clock): SessionStore {
  return {
    async findPersonByEmail(email) {
      const { rows } = await pool.query<PersonRow>(
        `SELECT ${PERSON_COLUMNS} FROM people WHERE email = $1`,
        [email],
      );
      return rows[0];
    },

    createSession: (personId, hash) => insertSession(pool, clock, personId, hash),

    async authenticateSession(hash, limits) {
      const { rows } = await pool.query<SessionRow & Omit<PersonRow, 'id'>>(
        `SELECT s.id, s.person_id, s.created_at, s.last_seen_at, s.revoked_at,
                p.email, p.display_name, p.password_hash
         FROM sessions s JOIN people p ON p.id = s.person_id WHERE s.credential_hash = $1`,
        [hash],
      );
      const row = rows[0];
      const now = clock.now().getTime();
      if (!row || !sessionLives(row, limits, now)) return undefined;
      const session: SessionRow = {
        id: row.id,
        person_id: row.person_id,
        created_at: row.created_at,
        last_seen_at: row.last_seen_at,
        revoked_at: null,
      };
      if (now - row.last_seen_at.getTime() >= limits.refreshMs) {
        session.last_seen_at = new Date(now);
        // Not in a transaction: a lost race only leaves a slightly older time.
        await pool.query(
          'UPDATE sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2',
          [row.id, session.last_seen_at],
        );
      }
      return {
        session,
        person: toPerson({ ...row, id: row.person_id }),
        memberships: await membershipsOf(pool, row.person_id),
      };
    },

    async revokeSession(hash) {
      await withTx(pool, async (tx) => {
        const { rows } = await tx.query<{ id: string; person_id: string }>(
          `UPDATE sessions SET revoked_at = COALESCE(revoked_at, $2)
           WHERE credential_hash = $1 RETURNING id, person_id`,
          [hash, clock.now()],
        );
        const row = rows[0];
        if (row) await announce(tx, [sessionsRevoked(row.person_id, row.id)]);
      });
    },
  };
}
