/**
 * The database layer every service shares: one `pg` pool per process and one transaction helper.
 * Production runs on CockroachDB, tests on PostgreSQL and `spool dev` on PGlite (DESIGN §3), so every
 * transaction runs SERIALIZABLE and is retried when the database asks for it (SQLSTATE 40001).
 */
import pg from 'pg';
import { SpoolError } from './errors.js';
import type { Logger } from './logger.js';

export type Pool = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;
export type TxClient = pg.PoolClient;

export interface PoolOptions {
  url: string;
  /** Connections at most; PGlite serves one at a time. */
  max?: number;
  applicationName?: string;
}

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'spool',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
  });
  // An idle client that loses its connection emits here; without a listener the process would die.
  pool.on('error', () => {});
  // So does a client checked out when its connection drops (the database restarts mid-query):
  // the pool listens only while a client is idle, so each client gets its own listener. The query
  // in flight fails on its own, and the broken client is discarded when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return pool;
}

export interface TxOptions {
  /** Attempts in all, the first included. */
  attempts?: number;
  /** First backoff in milliseconds; doubles each retry, with full jitter. */
  baseDelayMs?: number;
  logger?: Logger;
}

const SERIALIZATION_FAILURE = '40001';
/** The longest wait between two attempts. */
const MAX_BACKOFF_MS = 250;

/** PostgreSQL's answer to two transactions locking rows in opposite orders (CockroachDB's is 40001). */
const DEADLOCK_DETECTED = '40P01';

export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === SERIALIZATION_FAILURE || code === DEADLOCK_DETECTED;
}

/**
 * Runs `fn` in a SERIALIZABLE transaction and commits. When the database reports a serialization
 * failure (at any statement or at COMMIT) the whole function runs again after a jittered backoff,
 * so `fn` must not have effects outside the transaction; use the outbox for those.
 */
export async function withTx<T>(
  pool: pg.Pool,
  fn: (tx: pg.PoolClient) => Promise<T>,
  options: TxOptions = {},
): Promise<T> {
  // Enough for a burst of writers to the same rows to get through one after another.
  const attempts = options.attempts ?? 24;
  const baseDelayMs = options.baseDelayMs ?? 5;
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      if (!isRetryable(err)) throw err;
      if (attempt >= attempts) {
        throw new SpoolError('unavailable', 'the database is too busy; try again', { cause: err });
      }
      options.logger?.debug({ attempt }, 'serialization failure, retrying transaction');
      const cap = Math.min(baseDelayMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
    } finally {
      client.release(broken);
    }
  }
}

/** True when `err` is a unique-constraint violation (SQLSTATE 23505). */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}
