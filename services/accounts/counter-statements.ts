/**
 * Statements on counters that many requests move at once (the sign-in limits): each is one
 * statement on a few rows by key, run in a READ COMMITTED transaction of its own. SERIALIZABLE
 * would answer all but one of a burst on the same row with a serialization failure (PostgreSQL's
 * "could not serialize access due to concurrent update"), to be retried one after another until
 * the attempts run out; READ COMMITTED makes each wait for the row's lock and apply itself to the
 * row as the one before left it, which for a single statement on rows named by key is the same
 * result as running them in turn. CockroachDB runs it as READ COMMITTED where that is enabled and
 * as SERIALIZABLE otherwise, retrying a lone transaction sent in one go itself.
 */
import type pg from 'pg';
import { isRetryable } from '../../lib/db.js';

/** Attempts in all where the database still fails the statement to serialize (CockroachDB). */
const ATTEMPTS = 5;
const BASE_DELAY_MS = 5;

/** Runs one statement in a READ COMMITTED transaction of its own, sent with BEGIN and COMMIT. */
export async function counterStatement<R extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await once<R>(pool, text, values);
    } catch (err) {
      if (!isRetryable(err) || attempt >= ATTEMPTS) throw err;
      const cap = BASE_DELAY_MS * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
    }
  }
}

async function once<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  const client = await pool.connect();
  let broken = false;
  try {
    // Pipelined: the three go out without waiting for each other's answers. A COMMIT after a
    // statement that failed ends the transaction as a ROLLBACK would.
    const [begin, result, commit] = await Promise.allSettled([
      client.query('BEGIN ISOLATION LEVEL READ COMMITTED'),
      client.query<R>(text, values),
      client.query('COMMIT'),
    ]);
    for (const settled of [begin, result, commit]) {
      if (settled.status === 'rejected') {
        broken = begin.status === 'rejected';
        throw settled.reason;
      }
    }
    return (result as PromiseFulfilledResult<pg.QueryResult<R>>).value;
  } finally {
    client.release(broken);
  }
}
