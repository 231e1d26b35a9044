/**
 * The daily limit of test-key prints (DESIGN §4, spec §8): an organization's prints with test
 * keys are counted per UTC day in `test_print_counts`, and refused past {@link DAILY_TEST_LIMIT}
 * until 00:00 UTC. Creations count theirs in their own statement (creation.ts); a retry of a
 * failed test job counts here.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { SpoolError } from '../../lib/errors.js';

/** Test-key jobs an organization may create in a UTC day (DESIGN §4). */
export const DAILY_TEST_LIMIT = 200;

function secondsToMidnightUtc(now: Date): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** The UTC day of `now`, as the test prints of a day are counted: `2026-11-27`. */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** The refusal of a test print past the day's limit, retryable at the next UTC midnight. */
export function testLimitReached(now: Date): SpoolError {
  return new SpoolError(
    'rate_limited',
    `the daily test limit of ${DAILY_TEST_LIMIT} test-key prints for this organization is reached; it resets at 00:00 UTC`,
    { retryAfter: secondsToMidnightUtc(now) },
  );
}

/** Counting the test prints that do not come with a creation. */
export interface TestPrintCounts {
  /**
   * Counts one more test-key print of the organization today (a failed test job retried prints
   * again), refusing it, `429 rate_limited` until 00:00 UTC, when the day's are used up.
   * Answers the day counted, for {@link uncountTestPrint} should the retry not happen.
   */
  countTestPrint(orgId: string): Promise<string>;
  /** Takes back a test-key print counted for a retry that was refused. */
  uncountTestPrint(orgId: string, day: string): Promise<void>;
  /** Refuses, as a creation would, when today's test prints are used up; counts nothing. */
  checkTestPrints(orgId: string): Promise<void>;
}

export function createTestPrintCounts(pool: pg.Pool, clock: Clock): TestPrintCounts {
  return {
    async countTestPrint(orgId) {
      const now = clock.now();
      const day = utcDay(now);
      const { rowCount } = await pool.query(
        `INSERT INTO test_print_counts (org_id, day, n) VALUES ($1, $2, 1)
         ON CONFLICT (org_id, day) DO UPDATE SET n = test_print_counts.n + 1
           WHERE test_print_counts.n < $3
         RETURNING n`,
        [orgId, day, DAILY_TEST_LIMIT],
      );
      if (rowCount === 0) throw testLimitReached(now);
      return day;
    },

    async checkTestPrints(orgId) {
      const now = clock.now();
      const { rows } = await pool.query<{ n: number }>(
        'SELECT n FROM test_print_counts WHERE org_id = $1 AND day = $2',
        [orgId, utcDay(now)],
      );
      if ((rows[0]?.n ?? 0) >= DAILY_TEST_LIMIT) throw testLimitReached(now);
    },

    async uncountTestPrint(orgId, day) {
      await pool.query(
        'UPDATE test_print_counts SET n = n - 1 WHERE org_id = $1 AND day = $2 AND n > 0',
        [orgId, day],
      );
    },
  };
}
