/**
 * The count of sign-in attempts (docs/console-api.md), per account and per client address, that
 * the sign-in limits hold to a window. One row per subject: a window opens at the subject's first
 * failure and lasts the failure window, and every attempt is one upsert that counts it in the open
 * window or opens the next (sign_in_counts, migration 011). The upserts run READ COMMITTED
 * (counter-statements.ts), so a burst of attempts on one subject waits for the row in turn rather
 * than failing to serialize.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { counterStatement } from './counter-statements.js';

/** One subject an attempt counts against (`email:…`, `ip:…`) and the failures it may have. */
export interface AttemptLimit {
  subject: string;
  limit: number;
}

/** The counts one attempt added: each subject's, in the window it went into. */
export interface CountedAttempt {
  subjects: string[];
  windowIds: string[];
}

/** A subject's count after an attempt was added to it. */
export interface SubjectCount {
  subject: string;
  windowStart: Date;
  attempts: number;
}

export interface SignInLimits {
  /**
   * Counts a sign-in attempt against each subject before its password is checked, so that
   * attempts sent at once cannot all pass a limit that each alone would see unmet: every one
   * counts first, and the one that sees its subject over `limit` is refused. Answers the counts
   * added, which stay as the attempt's failure unless {@link releaseAttempt} takes them back;
   * or, for a refused attempt (which does not count), the seconds until it may try again.
   */
  reserveAttempt(
    limits: AttemptLimit[],
    windowMs: number,
  ): Promise<{ counted: CountedAttempt } | { wait: number }>;
  /** Takes back the counts of an attempt that succeeded, or whose password was not checked. */
  releaseAttempt(counted: CountedAttempt): Promise<void>;
  /** Forgets a subject's failures (an account signed in). */
  clearFailures(subject: string): Promise<void>;
}

/**
 * Whether an attempt counted as `counts` may go on: when no subject is over its limit. Else the
 * seconds until the last of the full windows ends (at least one: attempts still running may take
 * their counts back sooner).
 */
export function attemptVerdict(
  limits: AttemptLimit[],
  counts: SubjectCount[],
  now: Date,
  windowMs: number,
): { allowed: true } | { allowed: false; wait: number } {
  const over = counts.filter(
    (c) => c.attempts > (limits.find((l) => l.subject === c.subject)?.limit ?? 0),
  );
  if (over.length === 0) return { allowed: true };
  const ends = over.map((c) => c.windowStart.getTime() + windowMs - now.getTime());
  return { allowed: false, wait: Math.max(1, ...ends.map((ms) => Math.ceil(ms / 1000))) };
}

/**
 * Counts the attempt in each subject's window, or opens a new one where the window has ended or
 * holds nothing (its attempts all taken back). Rows are taken in the order of their subjects, so
 * that two attempts never wait for each other's rows.
 */
const COUNT_ATTEMPT = `
  INSERT INTO sign_in_counts AS c (subject, window_id, window_start, attempts)
  SELECT s.subject, s.window_id, $3::TIMESTAMPTZ, 1
    FROM unnest($1::TEXT[], $2::UUID[]) AS s (subject, window_id)
   ORDER BY s.subject
  ON CONFLICT (subject) DO UPDATE SET
    window_id = CASE WHEN c.window_start <= $4::TIMESTAMPTZ OR c.attempts <= 0
                     THEN excluded.window_id ELSE c.window_id END,
    window_start = CASE WHEN c.window_start <= $4::TIMESTAMPTZ OR c.attempts <= 0
                        THEN excluded.window_start ELSE c.window_start END,
    attempts = CASE WHEN c.window_start <= $4::TIMESTAMPTZ OR c.attempts <= 0
                    THEN 1 ELSE c.attempts + 1 END
  RETURNING subject, window_id, window_start, attempts`;

/** Takes one attempt back from each window it was counted in, if that window is still open. */
const TAKE_BACK = `
  UPDATE sign_in_counts SET attempts = attempts - 1
   WHERE subject = ANY($1::TEXT[]) AND window_id = ANY($2::UUID[]) AND attempts > 0`;

/** Windows that have ended count for nothing; deleted a few at a time. */
const SWEEP = `
  DELETE FROM sign_in_counts
   WHERE subject IN (SELECT subject FROM sign_in_counts WHERE window_start <= $1
                      ORDER BY window_start LIMIT 100)
     AND window_start <= $1`;

export function createSignInLimits(pool: pg.Pool, clock: Clock): SignInLimits {
  const takeBack = async ({ subjects, windowIds }: CountedAttempt) => {
    await counterStatement(pool, TAKE_BACK, [subjects, windowIds]);
  };

  return {
    async reserveAttempt(limits, windowMs) {
      const now = clock.now();
      const since = new Date(now.getTime() - windowMs);
      const { rows } = await counterStatement<{
        subject: string;
        window_id: string;
        window_start: Date;
        attempts: number;
      }>(pool, COUNT_ATTEMPT, [
        limits.map((l) => l.subject),
        limits.map(() => randomUUID()),
        now,
        since,
      ]);
      const counted = {
        subjects: rows.map((r) => r.subject),
        windowIds: rows.map((r) => r.window_id),
      };
      const counts = rows.map((r) => ({
        subject: r.subject,
        windowStart: r.window_start,
        attempts: Number(r.attempts),
      }));
      const verdict = attemptVerdict(limits, counts, now, windowMs);
      if (!verdict.allowed) {
        await takeBack(counted);
        return { wait: verdict.wait };
      }
      if (counts.some((c) => c.attempts === 1)) {
        // A window opened: an ended one goes for each, so that rows do not pile up. Best effort:
        // an ended window left behind counts for nothing, and the next sweep takes it.
        await counterStatement(pool, SWEEP, [since]).catch(() => {});
      }
      return { counted };
    },

    releaseAttempt: takeBack,

    async clearFailures(subject) {
      await counterStatement(pool, 'DELETE FROM sign_in_counts WHERE subject = $1', [subject]);
    },
  };
}
