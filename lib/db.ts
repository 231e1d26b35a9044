/**
 * The database layer every service shares: one `pg` pool per process and one transaction helper.
 * Production runs on CockroachDB, tests on PostgreSQL and `spool dev` on PGlite (DESIGN §3), so every
 * transaction runs SERIALIZABLE and is retried when the database asks for it (SQLSTATE 40001).
 *
 * Connections pipeline (`pg`'s `pipeline` mode): a statement is written without waiting for the
 * answer to the one before, and the server answers in order. A caller that awaits each statement
 * sees no difference; `withTx` uses it to send BEGIN in the same write as the transaction's first
 * statement, and {@link queryThenCommit} to send COMMIT in the same write as its last, so a
 * transaction of n statements takes n round trips rather than n + 2.
 *
 * Statements with parameters are prepared: each connection parses a statement's text once, under
 * a name, and then only binds and runs it. The hot statements are long (a group's CTEs), and
 * parsing them again for every transaction was a good part of the database's CPU per job.
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

/**
 * Distinct statement texts prepared at most, per process: each one prepared costs its memory on
 * every connection that ran it, so a text beyond these (a shape seldom seen) goes unprepared.
 */
export const MAX_PREPARED = 200;

const statementNames = new Map<string, string>();

/** The name a statement's text is prepared under, or undefined once {@link MAX_PREPARED} are. */
export function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined && statementNames.size < MAX_PREPARED) {
    name = `spool_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * A `pg` client whose statements with parameters go by name ({@link statementName}): `pg` sends
 * a name's Parse once per connection (and again after an error, since the server may not have
 * kept it), then Bind and Execute alone.
 */
class PreparingClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's overloads of query() are many; this one passes them through.
  override query(config: any, values?: any, callback?: any): any {
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0) {
      const name = statementName(config);
      if (name !== undefined) return super.query({ name, text: config, values }, callback);
    }
    return super.query(config, values, callback);
  }
}

/**
 * A pool whose lone statements (`pool.query`, outside {@link withTx}) run again when the database
 * fails them to serialize. With SERIALIZABLE as the default, PostgreSQL can fail even a lone read
 * so, under load (CockroachDB retries such a statement itself). A lone statement is a transaction
 * of its own, and one that failed so changed nothing: running it again is safe, writes included.
 */
class RetryingPool extends pg.Pool {
  // biome-ignore lint/suspicious/noExplicitAny: pg's overloads of query() are many; this one passes them through.
  override query(config: any, values?: any, callback?: any): any {
    if (typeof values === 'function' || typeof callback === 'function') {
      return super.query(config, values, callback);
    }
    return retried(() => super.query(config, values));
  }
}

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new RetryingPool({
    Client: PreparingClient,
    connectionString: options.url,
    max: options.max ?? 10,
    pipeline: true,
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
/**
 * Attempts in all, the first included, of a transaction or a lone statement: enough for a burst
 * of writers to the same rows to get through one after another. And the first backoff.
 */
const ATTEMPTS = 24;
const BASE_DELAY_MS = 5;
/** The longest wait between two attempts. */
const MAX_BACKOFF_MS = 250;

/** PostgreSQL's answer to two transactions locking rows in opposite orders (CockroachDB's is 40001). */
const DEADLOCK_DETECTED = '40P01';

export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === SERIALIZATION_FAILURE || code === DEADLOCK_DETECTED;
}

/** A transaction's COMMIT, when {@link queryThenCommit} has already sent it. */
const commits = new WeakMap<pg.PoolClient, Promise<unknown> | null>();

/** The connection's socket, when `pg` exposes it; writes between cork and uncork go out as one. */
function socketOf(client: pg.PoolClient): { cork(): void; uncork(): void } | undefined {
  return (client as unknown as { connection?: { stream?: { cork(): void; uncork(): void } } })
    .connection?.stream;
}

/** Runs `fn`, whose statements are queued on `client`, and writes them to the socket together. */
function inOneWrite<T>(client: pg.PoolClient, fn: () => T): T {
  const socket = socketOf(client);
  socket?.cork();
  try {
    return fn();
  } finally {
    socket?.uncork();
  }
}

/** Keeps a promise awaited later from counting as unhandled if it fails first. */
function awaitedLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/**
 * Runs `fn` in a SERIALIZABLE transaction and commits. When the database reports a serialization
 * failure (at any statement or at COMMIT) the whole function runs again after a jittered backoff,
 * so `fn` must not have effects outside the transaction; use the outbox for those.
 *
 * BEGIN goes out in the same write as the statements `fn` queues before its first await. It fails
 * only when the connection does, and then so do the statements behind it.
 */
export async function withTx<T>(
  pool: pg.Pool,
  fn: (tx: pg.PoolClient) => Promise<T>,
  options: TxOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? ATTEMPTS;
  const baseDelayMs = options.baseDelayMs ?? BASE_DELAY_MS;
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken = false;
    try {
      commits.set(client, null);
      const [begin, running] = inOneWrite(client, () => [
        awaitedLater(client.query('BEGIN ISOLATION LEVEL SERIALIZABLE')),
        fn(client),
      ]);
      const result = await running;
      await begin;
      await (commits.get(client) ?? client.query('COMMIT'));
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
      await backOff(attempt, baseDelayMs);
    } finally {
      commits.delete(client);
      client.release(broken);
    }
  }
}

/** The jittered wait before try `attempt + 1`: up to `baseDelayMs`, doubling to a cap. */
function backOff(attempt: number, baseDelayMs: number): Promise<void> {
  const cap = Math.min(baseDelayMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
  return new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
}

/** Runs `statement` again, after a jittered backoff, while the database fails it to serialize. */
async function retried<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (err) {
      if (!isRetryable(err)) throw err;
      if (attempt >= ATTEMPTS) {
        throw new SpoolError('unavailable', 'the database is too busy; try again', { cause: err });
      }
      await backOff(attempt, BASE_DELAY_MS);
    }
  }
}

/**
 * A transaction's last statement, with its COMMIT written right behind it: one round trip for
 * both. Call it inside {@link withTx}, at most once, and query nothing after it. `withTx` returns
 * once the COMMIT is answered, and runs the whole transaction again if it fails to serialize.
 *
 * The statement's result cannot decide whether to commit, nor may anything after it fail: by the
 * time the result is read, the COMMIT has run. A statement that fails aborts the transaction, so
 * its COMMIT commits nothing.
 */
export function queryThenCommit<R extends pg.QueryResultRow = pg.QueryResultRow>(
  tx: pg.PoolClient,
  text: string,
  values?: unknown[],
): Promise<pg.QueryResult<R>> {
  if (commits.get(tx) !== null) {
    throw new Error('queryThenCommit runs once, inside withTx');
  }
  return inOneWrite(tx, () => {
    const result = tx.query<R>(text, values);
    commits.set(tx, awaitedLater(tx.query('COMMIT')));
    return result;
  });
}

/** True when `err` is a unique-constraint violation (SQLSTATE 23505). */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}
