/**
 * Which errors mean "a dependency is down or busy for now" rather than "this is a bug": a database
 * that refuses connections, restarts or drops one mid-query, a NATS server that is away or slow to
 * answer. A client sees those as `503 unavailable` with `Retry-After` (the same request a moment
 * later may well go through); anything else unexpected stays a `500 internal`.
 */
import { isSpoolError, SpoolError } from './errors.js';

/** Node's socket errors for a peer that is gone, unreachable or not answering. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL / CockroachDB SQLSTATEs of a server that cannot serve now: class 08 (connection
 * exception), 57P01–57P03 (shutting down, crashed, starting up), class 53 (out of resources:
 * too many connections, disk full), 40001/40P01 (a conflict that a retry resolves), and
 * CockroachDB's 58000/58C01 for a range unavailable while a node is down.
 */
function isTransientSqlState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    ['57P01', '57P02', '57P03', '40001', '40P01', '58000', '58C01'].includes(code)
  );
}

/** What the `pg` driver says, without a SQLSTATE, when its connection goes or never comes. */
const PG_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Cannot use a pool after calling end on the pool',
];

/** nats.js errors (by name, as the classes live in several packages) of a server away or slow. */
const NATS_NAMES = new Set([
  'TimeoutError',
  'ClosedConnectionError',
  'DrainingConnectionError',
  'ConnectionError',
  'NoResponders',
  'RequestError',
  'JetStreamNotEnabled',
]);

function isTransientOne(err: object): boolean {
  const { code, name, message, status } = err as {
    code?: unknown;
    name?: unknown;
    message?: unknown;
    status?: unknown;
  };
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || isTransientSqlState(code))) {
    return true;
  }
  if (typeof name === 'string') {
    if (NATS_NAMES.has(name)) return true;
    // A JetStream request the server answered with 503 (no responders) or 408 (timed out).
    if (name === 'JetStreamStatusError') return code === 503 || code === 408;
    // A publish JetStream did not store: no stream reachable, no acknowledgement in time, or a
    // stream without a leader for now (lib/stream-publisher.ts).
    if (name === 'StreamPublishError') {
      return typeof status === 'number' && (status === 408 || status >= 500);
    }
    // A JetStream API error such as "JetStream system temporarily unavailable".
    if (name === 'JetStreamApiError') return typeof status === 'number' && status >= 500;
  }
  return typeof message === 'string' && PG_MESSAGES.some((m) => message.includes(m));
}

/** True when `err`, or an error it wraps, is a transient failure of a dependency. */
export function isTransient(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 5) return false;
  // A call whose service did not answer in time may have been done; the same call again is safe
  // wherever retrying is (work Spool retries is idempotent), so it counts as transient too.
  if (isSpoolError(err)) return err.code === 'unavailable' || err.code === 'timeout';
  if (isTransientOne(err)) return true;
  const { cause, errors } = err as { cause?: unknown; errors?: unknown };
  if (isTransient(cause, depth + 1)) return true;
  // Node reports a refused connection to a name with several addresses as an AggregateError.
  return Array.isArray(errors) && errors.some((e) => isTransient(e, depth + 1));
}

/** The error a client sees for a transient failure: 503 with a hint to retry in a second. */
export function unavailable(cause: unknown): SpoolError {
  return new SpoolError('unavailable', 'a part of Spool is briefly unavailable; try again', {
    retryAfter: 1,
    cause,
  });
}

/**
 * Runs `attempt` until it succeeds or fails for a reason that is not transient, waiting a little
 * longer after each transient failure (with jitter), for at most `timeoutMs` in all. For the
 * setup a process does at start, such as creating streams while a NATS cluster is still electing
 * its leaders.
 */
export async function retryTransient<T>(
  attempt: () => Promise<T>,
  options: {
    timeoutMs?: number;
    /** The longest wait between two tries (default 5 s). */
    maxWaitMs?: number;
    sleep?: (ms: number) => Promise<void>;
  } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const maxWaitMs = options.maxWaitMs ?? 5_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (let failures = 0; ; failures++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isTransient(err) || Date.now() >= deadline) throw err;
      await sleep(Math.min(maxWaitMs, 250 * 2 ** failures) * (0.5 + Math.random() / 2));
    }
  }
}
