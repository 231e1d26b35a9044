/**
 * Embedded PostgreSQL for `spool dev` (DESIGN §3, §5). Without `DATABASE_URL`, Spool runs PGlite
 * in-process and serves it over the PostgreSQL wire protocol, so the services reach it through
 * the very same `pg` Pool code path as in production.
 *
 * PGlite is one single-user backend. @electric-sql/pglite-socket 0.2 shares it between sockets
 * with a message queue that is not safe for `pg` (each finding was reproduced against 0.2.17):
 *
 * - It hands the backend to another socket between any two protocol messages unless an explicit
 *   transaction is open. When a query's Parse/Bind/Execute/Sync take more than one socket read
 *   (a request over about 64 KiB), another connection's query runs in the middle and replaces
 *   the unnamed statement: Bind then fails ("bind message supplies 2 parameters, but prepared
 *   statement "" requires 1") or, with the same parameter count, silently writes to the other
 *   query's table.
 * - A client that disconnects between Parse and Sync outside a transaction leaves that exchange
 *   open; after an error in it, the backend skips the next client's query up to its Sync, and
 *   that query answers with no rows and no error.
 * - A malformed startup packet from any stray client makes PGlite exit(1) inside the shared
 *   instance and throw; the queue then stays marked busy forever, so every query hangs.
 * - A socket over its limit gets the bare text "Too many connections"; a `pg` Pool replaces a
 *   client after every failed `pool.query` and its new socket can be refused that way, because
 *   the old one still counts for a moment.
 * - Prepared statements are per backend, so a named statement prepared on one connection makes
 *   the same name fail with 42P05 on every other connection, including a Pool's replacement.
 *
 * So this module keeps pglite-socket's per-socket handler (framing, SSL refusal, socket life
 * cycle) and gives it a multiplexer of its own that lends the backend to one connection for a
 * whole protocol exchange (up to Sync or a simple Query) and for a whole explicit transaction,
 * cleans up after a connection that leaves in the middle of either, scopes named statements to
 * their connection, and owns the listening socket.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler } from '@electric-sql/pglite-socket';
import { isProcessAlive } from './processes.js';

/** Where and how to serve the embedded database. */
export interface PgliteServerOptions {
  /** Directory of the database files; created if missing, and kept across restarts. */
  dataDir: string;
  /** Address to listen on (default `127.0.0.1`). */
  host?: string;
  /** Port to listen on (default `0`: any free port). */
  port?: number;
}

/** A running embedded database server. */
export interface PgliteServer {
  /** A `postgresql://` URL for `pg` (Pool or Client). */
  url: string;
  /**
   * The largest `max` to give a `pg.Pool` on this server (for several pools, their sum). PGlite
   * runs one statement at a time whatever this is: connections beyond one only queue inside the
   * server instead of inside the Pool.
   */
  maxConnections: number;
  /** Closes every connection, stops listening and shuts PGlite down cleanly. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The Pool budget: `pg`'s default `max`, so a default Pool is safe too. It stays far below
 * {@link SOCKET_LIMIT} because a Pool opens a replacement before the server has seen the old
 * socket close, and because `spool dev` may run one Pool per service.
 */
const POOL_MAX = 10;

/** Sockets accepted at once; PostgreSQL's default `max_connections`. */
const SOCKET_LIMIT = 100;

/** Names the data directory lock, inside the data directory (PostgreSQL ignores other files). */
const LOCK_FILE = 'spool-pglite.lock';

/** Data directories this process holds, so a restarted container reusing our pid is not "busy". */
const heldDataDirs = new Set<string>();

/**
 * Opens (or creates) the PGlite database in `options.dataDir` and serves it on TCP.
 *
 * @throws when another live process serves the same data directory (PGlite takes no lock of its
 * own, and two writers lose each other's commits), or when the address cannot be bound.
 */
export async function startPgliteServer(options: PgliteServerOptions): Promise<PgliteServer> {
  const dataDir = resolve(options.dataDir);
  const host = options.host ?? '127.0.0.1';
  // PGlite creates only the last path segment itself.
  mkdirSync(dataDir, { recursive: true });
  const releaseLock = lockDataDir(dataDir);
  let db: PGlite | undefined;
  try {
    db = await PGlite.create({ dataDir });
    const multiplexer = new BackendMultiplexer(db);
    const handlers = new Map<number, PGLiteSocketHandler>();
    // Every socket, handled or refused, so that stop() can end them all: a refused client that
    // never closes its side would otherwise keep server.close() waiting forever.
    const sockets = new Set<Socket>();
    let stopping = false;

    const server = createServer((socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      if (stopping || handlers.size >= SOCKET_LIMIT) {
        socket.on('error', () => {});
        socket.end(fatalError('53300', 'sorry, too many clients already'), () => socket.destroy());
        return;
      }
      const handler = new PGLiteSocketHandler({
        queryQueue: multiplexer as unknown as HandlerQueue,
        closeOnDetach: true,
      });
      handlers.set(handler.handlerId, handler);
      const forget = () => handlers.delete(handler.handlerId);
      handler.addEventListener('close', forget);
      handler.addEventListener('error', forget);
      handler.attach(socket).catch(() => {
        forget();
        socket.destroy();
      });
    });
    const port = await listen(server, options.port ?? 0, host);

    let stopped: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopped ??= (async () => {
        stopping = true;
        try {
          const closed = new Promise<void>((done) => server.close(() => done()));
          await Promise.all([...handlers.values()].map((handler) => handler.detach(true)));
          handlers.clear();
          for (const socket of sockets) socket.destroy();
          await closed;
          await multiplexer.settled();
          await db?.close();
        } finally {
          releaseLock();
        }
      })();
      return stopped;
    };

    return {
      url: `postgresql://postgres@${urlHost(host)}:${port}/postgres?sslmode=disable`,
      maxConnections: POOL_MAX,
      stop,
    };
  } catch (error) {
    await db?.close().catch(() => {});
    releaseLock();
    throw error;
  }
}

/** What {@link PGLiteSocketHandler} calls on its queue (its own queue class is not exported). */
type HandlerQueue = ConstructorParameters<typeof PGLiteSocketHandler>[0]['queryQueue'];

/** Frontend message types (first byte); a startup packet starts with its length's zero byte. */
const STARTUP = 0x00;
const BIND = 0x42; // B
const CLOSE = 0x43; // C
const DESCRIBE = 0x44; // D
const FUNCTION_CALL = 0x46; // F
const PARSE = 0x50; // P
const QUERY = 0x51; // Q
const SYNC = 0x53; // S
const TERMINATE = 0x58; // X
const STATEMENT = 0x53; // 'S' as the target kind of Describe and Close

/** Messages after which the backend answers ReadyForQuery, so another connection may go next. */
const EXCHANGE_ENDS = new Set([STARTUP, QUERY, SYNC, FUNCTION_CALL]);

/** Queue entries the multiplexer adds itself; pglite-socket numbers its handlers from 1. */
const HOUSEKEEPING = 0;

interface Pending {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: Error) => void;
}

/**
 * Shares the one PGlite backend between connections. A connection that starts an exchange
 * (Parse, Bind, ...) or opens a transaction owns the backend until the exchange ends with the
 * backend outside any transaction block; the messages of other connections wait in arrival order.
 */
class BackendMultiplexer
  implements Pick<HandlerQueue, 'enqueue' | 'clearQueueForHandler' | 'clearTransactionIfNeeded'>
{
  readonly #db: PGlite;
  #queue: Pending[] = [];
  /** The connection whose exchange or transaction is open in the backend, if any. */
  #owner: number | null = null;
  /** Whether the last message run left an extended-protocol exchange open (no Sync yet). */
  #exchangeOpen = false;
  #draining = false;
  #settledWaiters: Array<() => void> = [];
  /** Named statements each connection prepared, under their scoped names. */
  readonly #statements = new Map<number, Set<string>>();

  constructor(db: PGlite) {
    this.#db = db;
  }

  enqueue(
    handlerId: number,
    message: Uint8Array,
    onData: (data: Uint8Array) => void,
  ): Promise<number> {
    // PGlite ignores Terminate, and waiting for the backend to ignore it only delays others.
    if (message[0] === TERMINATE) return Promise.resolve(0);
    if (message[0] === STARTUP) {
      const problem = startupPacketProblem(message);
      if (problem) {
        // Answer as PostgreSQL would; the rejection makes the handler close the socket.
        onData(fatalError('08P01', problem));
        return Promise.reject(new Error(problem));
      }
    }
    const scoped = this.#scopeStatementName(handlerId, message);
    return new Promise((resolve, reject) => {
      this.#queue.push({ handlerId, message: scoped, onData, resolve, reject });
      void this.#drain();
    });
  }

  clearQueueForHandler(handlerId: number): void {
    const gone = this.#queue.filter((pending) => pending.handlerId === handlerId);
    this.#queue = this.#queue.filter((pending) => pending.handlerId !== handlerId);
    for (const pending of gone) pending.reject(new Error('Handler disconnected'));
  }

  /**
   * Called by the handler when its socket goes away. As PostgreSQL does when a backend's client
   * disconnects, rolls back what the connection left open, and drops its named statements.
   */
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    // The handler does not await its detach, so a rejection here would be unhandled.
    try {
      if (this.#owner === handlerId) {
        await this.#db.runExclusive(async () => {
          // A message of this connection may have finished (and freed the backend) meanwhile.
          if (this.#owner !== handlerId) return;
          if (this.#exchangeOpen) {
            // ROLLBACK through the extended protocol: if the backend is skipping to Sync after
            // an error it skips these too and the Sync ends the failed exchange; otherwise it
            // rolls back the implicit transaction instead of letting Sync commit half a request.
            for (const message of ROLLBACK_EXCHANGE) await this.#discard(message);
            this.#exchangeOpen = false;
          }
          if (this.#db.isInTransaction()) await this.#discard(ROLLBACK_QUERY);
          this.#owner = null;
        });
      }
      this.#closeStatementsOf(handlerId);
    } catch {
      // PGlite is closed or broken; nothing is left to clean up.
      this.#owner = null;
    }
    void this.#drain();
  }

  /** Resolves once nothing is running and nothing runnable is queued. */
  settled(): Promise<void> {
    if (!this.#draining) return Promise.resolve();
    return new Promise((done) => this.#settledWaiters.push(done));
  }

  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (;;) {
        const index =
          this.#owner === null
            ? 0
            : this.#queue.findIndex((pending) => pending.handlerId === this.#owner);
        const next = index < 0 ? undefined : this.#queue[index];
        // Empty, or the owner has sent nothing yet: its next message calls drain again.
        if (!next) break;
        this.#queue.splice(index, 1);
        await this.#run(next);
      }
    } finally {
      this.#draining = false;
      for (const done of this.#settledWaiters.splice(0)) done();
    }
  }

  async #run(pending: Pending): Promise<void> {
    let bytes = 0;
    let failure: Error | undefined;
    try {
      await this.#db.runExclusive(() =>
        this.#db.execProtocolRawStream(pending.message, {
          onRawData: (data) => {
            bytes += data.length;
            pending.onData(data);
          },
        }),
      );
    } catch (error) {
      // Startup packets that make PGlite throw are refused in enqueue; should anything else
      // throw, the handler closes that one socket, and the queue goes on serving the others.
      failure = error instanceof Error ? error : new Error(String(error));
    }
    this.#exchangeOpen = !EXCHANGE_ENDS.has(pending.message[0] ?? STARTUP);
    this.#owner = this.#exchangeOpen || this.#inTransaction() ? pending.handlerId : null;
    if (failure) pending.reject(failure);
    else pending.resolve(bytes);
  }

  #inTransaction(): boolean {
    try {
      return this.#db.isInTransaction();
    } catch {
      return false;
    }
  }

  /** Runs a message of the multiplexer's own; its answer goes nowhere. */
  #discard(message: Uint8Array): Promise<void> {
    // Always stream: a plain execProtocolRaw would reuse the last stream callback, that is, it
    // would write the answer to whichever client ran last.
    return this.#db.execProtocolRawStream(message, { onRawData: () => {} });
  }

  /**
   * Prefixes the statement name of Parse, Bind, Describe and Close with the connection, so that
   * connections (a Pool's replacements too) never see each other's named statements.
   */
  #scopeStatementName(handlerId: number, message: Uint8Array): Uint8Array {
    let at: number;
    switch (message[0]) {
      case PARSE:
        at = 5;
        break;
      case BIND:
        // The statement name follows the portal name.
        at = message.indexOf(0, 5) + 1;
        break;
      case DESCRIBE:
      case CLOSE:
        if (message[5] !== STATEMENT) return message;
        at = 6;
        break;
      default:
        return message;
    }
    const end = message.indexOf(0, at);
    // Unnamed statement, or a malformed message that PGlite should reject as it is.
    if (at <= 0 || end <= at) return message;
    const name = `c${handlerId}:${decoder.decode(message.subarray(at, end))}`;
    if (message[0] === PARSE) {
      let names = this.#statements.get(handlerId);
      if (!names) {
        names = new Set();
        this.#statements.set(handlerId, names);
      }
      names.add(name);
    } else if (message[0] === CLOSE) {
      this.#statements.get(handlerId)?.delete(name);
    }
    const encoded = encoder.encode(name);
    const scoped = new Uint8Array(message.length - (end - at) + encoded.length);
    scoped.set(message.subarray(0, at));
    scoped.set(encoded, at);
    scoped.set(message.subarray(end), at + encoded.length);
    new DataView(scoped.buffer).setInt32(1, scoped.length - 1);
    return scoped;
  }

  /** Queues Close for a departed connection's statements, to run when the backend is free. */
  #closeStatementsOf(handlerId: number): void {
    const names = this.#statements.get(handlerId);
    this.#statements.delete(handlerId);
    if (!names || names.size === 0) return;
    // Closing a statement that does not exist is no error, so a failed Parse needs no care.
    const messages = [...names].map((name) => closeStatement(name));
    for (const message of [...messages, SYNC_MESSAGE]) {
      this.#queue.push({
        handlerId: HOUSEKEEPING,
        message,
        onData: () => {},
        resolve: () => {},
        reject: () => {},
      });
    }
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const PROTOCOL_3_0 = 196608;
const FALSE_WORDS = new Set(['false', 'off', 'no', '0']);

/**
 * Why PGlite must not see this startup packet, if it must not. A startup packet that PostgreSQL
 * rejects with FATAL (bad layout, no user, a bad `replication` value) makes PGlite exit(1) inside
 * the shared instance, which breaks every later connection ("null function or function signature
 * mismatch"), so such packets are answered here. PGlite ignores the other startup parameters.
 */
function startupPacketProblem(message: Uint8Array): string | undefined {
  const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
  if (message.length < 9 || view.getInt32(0) !== message.length) {
    return 'invalid length of startup packet';
  }
  if (view.getInt32(4) !== PROTOCOL_3_0) return 'unsupported frontend protocol';
  if (message[message.length - 1] !== 0) {
    return 'invalid startup packet layout: expected terminator as last byte';
  }
  // Name and value pairs, each NUL-terminated, before the final NUL.
  const fields = decoder.decode(message.subarray(8, message.length - 1)).split('\0');
  if (fields.pop() !== '' || fields.length % 2 !== 0) {
    return 'invalid startup packet layout: expected terminator as last byte';
  }
  const parameters = new Map<string, string>();
  for (let i = 0; i < fields.length; i += 2) parameters.set(fields[i] ?? '', fields[i + 1] ?? '');
  if (!parameters.get('user')) return 'no PostgreSQL user name specified in startup packet';
  const replication = parameters.get('replication');
  if (replication !== undefined && !FALSE_WORDS.has(replication.toLowerCase())) {
    return 'replication connections are not supported by PGlite';
  }
  return undefined;
}

/** One frontend message: type byte, length, body. */
function frontendMessage(type: string, ...parts: Array<string | number[]>): Uint8Array {
  const body = parts.map((part) =>
    typeof part === 'string' ? encoder.encode(`${part}\0`) : Uint8Array.from(part),
  );
  const length = 4 + body.reduce((sum, part) => sum + part.length, 0);
  const message = new Uint8Array(1 + length);
  message[0] = type.charCodeAt(0);
  new DataView(message.buffer).setInt32(1, length);
  let offset = 5;
  for (const part of body) {
    message.set(part, offset);
    offset += part.length;
  }
  return message;
}

const SYNC_MESSAGE = frontendMessage('S');
const ROLLBACK_QUERY = frontendMessage('Q', 'ROLLBACK');
/** Parse, Bind and Execute an unnamed `ROLLBACK`, then Sync. */
const ROLLBACK_EXCHANGE = [
  frontendMessage('P', '', 'ROLLBACK', [0, 0]),
  frontendMessage('B', '', '', [0, 0, 0, 0, 0, 0]),
  frontendMessage('E', '', [0, 0, 0, 0]),
  SYNC_MESSAGE,
];

function closeStatement(name: string): Uint8Array {
  return frontendMessage('C', [STATEMENT], name);
}

/** A FATAL ErrorResponse, for a socket refused before it reaches PGlite. */
function fatalError(code: string, text: string): Uint8Array {
  return frontendMessage('E', 'SFATAL', 'VFATAL', `C${code}`, `M${text}`, [0]);
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolvePort((server.address() as AddressInfo).port);
    });
  });
}

/** The host to put in the URL: a wildcard bind is reached on loopback; IPv6 needs brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Takes the data directory for this process, or throws if a live process has it. Returns the
 * release function; a lock whose process is gone is stale and taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const lockPath = join(dataDir, LOCK_FILE);
  if (heldDataDirs.has(dataDir)) {
    throw new Error(`PGlite data directory ${dataDir} is already served by this process`);
  }
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(lockPath, `${process.pid}\n`, { flag: 'wx' });
      heldDataDirs.add(dataDir);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        heldDataDirs.delete(dataDir);
        rmSync(lockPath, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = lockHolder(lockPath);
    // Our own pid in the file is a previous life of this container, not a live holder.
    if (holder > 0 && holder !== process.pid && isProcessAlive(holder)) {
      throw new Error(
        `PGlite data directory ${dataDir} is in use by process ${holder}; stop it, or delete ${lockPath} if that process is not Spool`,
      );
    }
    rmSync(lockPath, { force: true });
  }
  throw new Error(`Could not lock PGlite data directory ${dataDir}`);
}

/** The pid written in a lock file; 0 if the file vanished or holds no pid. */
function lockHolder(lockPath: string): number {
  try {
    return Number.parseInt(readFileSync(lockPath, 'utf8'), 10) || 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
}
