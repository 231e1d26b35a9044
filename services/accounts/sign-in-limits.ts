/**
 * The record of failed sign-ins (docs/console-api.md), per account and per client address, that
 * the sign-in limits count over a window.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';

/** One subject an attempt counts against (`email:…`, `ip:…`) and the failures it may have. */
export interface AttemptLimit {
  subject: string;
  limit: number;
}

export interface SignInLimits {
  /**
   * Counts a sign-in attempt against each subject before its password is checked, so that
   * attempts sent at once cannot all pass a limit that each alone would see unmet: every one
   * counts first, and the one that sees its subject over `limit` is refused. Answers the rows
   * added, which stay as the attempt's failure unless {@link releaseAttempt} takes them back;
   * or, for a refused attempt (which does not count), the seconds until it may try again.
   */
  reserveAttempt(
    limits: AttemptLimit[],
    windowMs: number,
  ): Promise<{ ids: string[] } | { wait: number }>;
  /** Takes back the rows of an attempt that succeeded. */
  releaseAttempt(ids: string[]): Promise<void>;
  /** Forgets a subject's failures (an account signed in). */
  clearFailures(subject: string): Promise<void>;
}

/** Seconds until one more attempt of the subject may go: when its limit-th newest failure ages out. */
async function waitOf(
  pool: pg.Pool,
  { subject, limit }: AttemptLimit,
  since: Date,
  windowMs: number,
  now: Date,
): Promise<number> {
  const { rows } = await pool.query<{ at: Date }>(
    `SELECT at FROM sign_in_failures WHERE subject = $1 AND at > $2
     ORDER BY at DESC LIMIT $3`,
    [subject, since, limit],
  );
  const oldest = rows.length < limit ? undefined : rows[rows.length - 1];
  return oldest ? Math.ceil((oldest.at.getTime() + windowMs - now.getTime()) / 1000) : 0;
}

export function createSignInLimits(pool: pg.Pool, clock: Clock): SignInLimits {
  return {
    async reserveAttempt(limits, windowMs) {
      const now = clock.now();
      const since = new Date(now.getTime() - windowMs);
      const ids = limits.map(() => randomUUID());
      await pool.query(
        `INSERT INTO sign_in_failures (id, subject, at)
         SELECT v.id, v.subject, $3 FROM unnest($1::UUID[], $2::TEXT[]) AS v (id, subject)`,
        [ids, limits.map((l) => l.subject), now],
      );
      const counts = await Promise.all(
        limits.map(async ({ subject, limit }) => {
          const { rows } = await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM (SELECT 1 FROM sign_in_failures
               WHERE subject = $1 AND at > $2 LIMIT $3) AS recent`,
            [subject, since, limit + 1],
          );
          return Number(rows[0]?.n ?? 0);
        }),
      );
      if (limits.every((l, i) => (counts[i] ?? 0) <= l.limit)) {
        // Failures older than the window count for nothing any more; each attempt clears a few.
        await pool.query(
          `DELETE FROM sign_in_failures WHERE id IN (
             SELECT id FROM sign_in_failures WHERE at <= $1 ORDER BY at LIMIT 100)`,
          [since],
        );
        return { ids };
      }
      await pool.query('DELETE FROM sign_in_failures WHERE id = ANY($1::UUID[])', [ids]);
      const waits = await Promise.all(limits.map((l) => waitOf(pool, l, since, windowMs, now)));
      // Over the limit with attempts still running, whose rows may be gone by now: a second.
      return { wait: Math.max(1, ...waits) };
    },

    async releaseAttempt(ids) {
      await pool.query('DELETE FROM sign_in_failures WHERE id = ANY($1::UUID[])', [ids]);
    },

    async clearFailures(subject) {
      await pool.query('DELETE FROM sign_in_failures WHERE subject = $1', [subject]);
    },
  };
}
