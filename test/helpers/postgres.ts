/**
 * A private PostgreSQL for tests: `startPostgres()` runs a throwaway cluster in a temporary
 * directory, and `createTestDatabase()` gives each test file a database of its own on the server
 * named by `TEST_DATABASE_URL` (which `test/run.ts` sets) or on a private cluster.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  accessSync,
  closeSync,
  existsSync,
  constants as fsConstants,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './ports.js';

/** Where Debian and Ubuntu install the server binaries, one directory per major version. */
const DEBIAN_PG_ROOT = '/usr/lib/postgresql';

/** How long to wait for a started cluster to accept connections. */
export const POSTGRES_START_TIMEOUT_MS = 30_000;

/** How long `stop()` waits after SIGINT (fast shutdown) before it sends SIGKILL. */
export const POSTGRES_STOP_TIMEOUT_MS = 10_000;

const START_ATTEMPTS = 5;

/**
 * Settings for a disposable cluster: SERIALIZABLE by default because production (CockroachDB)
 * runs every transaction that way, and durability off (unless asked for) because the data dies
 * with the test run.
 */
const SERVER_SETTINGS = [
  'listen_addresses=127.0.0.1',
  'default_transaction_isolation=serializable',
  'max_connections=300',
];
const NOT_DURABLE = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];

/** A running private PostgreSQL cluster. */
export interface PostgresServer {
  /** URL of the `postgres` database as the `postgres` superuser, e.g. `postgres://postgres@127.0.0.1:5432/postgres`. */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** The pid of the current server process; it changes on `resume()`. */
  readonly pid: number;
  /** Shuts the server down (fast shutdown), keeping its data: an outage until `resume()`. */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port and data, and waits until it accepts. */
  resume(): Promise<void>;
  /** Fast shutdown (SIGINT, then SIGKILL after a timeout); removes the data directory. */
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** Directory holding `initdb` and `postgres`; found on PATH or in /usr/lib/postgresql/<version>/bin. */
  binDir?: string;
  /** Defaults to {@link POSTGRES_START_TIMEOUT_MS}. */
  startTimeoutMs?: number;
  /** Keep PostgreSQL's durability (fsync on every commit), as benchmarks need; off by default. */
  durable?: boolean;
  /** More server settings, `name=value` each. */
  settings?: readonly string[];
}

/** A database of its own for one test file. */
export interface TestDatabase {
  /** Connection URL of the new database. */
  readonly url: string;
  /** Its name, `spool_test_<random>`. */
  readonly name: string;
  /** Drops the database, closing any connections still open to it. */
  drop(): Promise<void>;
}

/**
 * Runs `initdb` into a temporary directory and starts `postgres` on a free port, resolving once it
 * accepts connections. Run as root, both run as the `postgres` user (or `nobody`), because
 * PostgreSQL refuses to run as root.
 *
 * @throws Error with an install hint when the binaries are missing, or with the server's log when
 * it does not start.
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  return (await launchPostgres(options)).server;
}

let sharedServerUrl: Promise<string> | undefined;

/**
 * Creates a fresh database `spool_test_<random>` on the server at `TEST_DATABASE_URL` and returns
 * its URL. Without `TEST_DATABASE_URL`, a private cluster is started on first use, shared by the
 * rest of the process and stopped when it exits. The database defaults to SERIALIZABLE whatever
 * the server's own default is.
 *
 * @param env where `TEST_DATABASE_URL` is read from.
 */
export async function createTestDatabase(
  env: NodeJS.ProcessEnv = process.env,
): Promise<TestDatabase> {
  const serverUrl = env.TEST_DATABASE_URL || (await sharedServer());
  const name = `spool_test_${randomBytes(6).toString('hex')}`;
  await withClient(serverUrl, async (client) => {
    await client.query(`CREATE DATABASE ${name}`);
    await client.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'serializable'`);
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    name,
    drop() {
      dropped ??= withClient(serverUrl, async (client) => {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      });
      return dropped;
    },
  };
}

function sharedServer(): Promise<string> {
  sharedServerUrl ??= (async () => {
    const { server, child, stopSync } = await launchPostgres({});
    // The cluster must not keep the test process alive; the exit hook stops it instead.
    child.unref();
    process.once('exit', stopSync);
    return server.url;
  })();
  return sharedServerUrl;
}

async function withClient(url: string, use: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await use(client);
  } finally {
    await client.end();
  }
}

interface Launched {
  server: PostgresServer;
  child: ChildProcess;
  /** Stops the cluster without the event loop, for a `process.on('exit')` hook. */
  stopSync(): void;
}

async function launchPostgres(options: StartPostgresOptions): Promise<Launched> {
  const bins = findPostgresBinaries(options.binDir);
  const user = serverUser();
  const baseDir = await mkdtemp(join(tmpdir(), 'spool-pg-'));
  const dataDir = join(baseDir, 'data');
  const logFile = join(baseDir, 'postgres.log');
  try {
    if (user) await chown(baseDir, user.uid, user.gid);
    await initdb(bins.initdb, dataDir, baseDir, user);

    const deadline = Date.now() + (options.startTimeoutMs ?? POSTGRES_START_TIMEOUT_MS);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const child = spawnPostgres(bins.postgres, dataDir, baseDir, port, logFile, user, options);
      const outcome = await waitUntilReady(child, baseDir, port, deadline);
      if (outcome === 'ready') {
        const respawn = async () => {
          const again = spawnPostgres(
            bins.postgres,
            dataDir,
            baseDir,
            port,
            logFile,
            user,
            options,
          );
          const ready = await waitUntilReady(again, baseDir, port, Date.now() + 30_000);
          if (ready !== 'ready') {
            throw new Error(
              `PostgreSQL did not start again (${ready}); its log:\n${logTail(logFile)}`,
            );
          }
          return again;
        };
        return {
          server: handle(child, port, baseDir, dataDir, respawn),
          child,
          stopSync: () => stopSync(baseDir, dataDir),
        };
      }
      const log = logTail(logFile);
      if (outcome === 'timeout') {
        child.kill('SIGKILL');
        if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
        throw new Error(`PostgreSQL did not accept connections in time; its log:\n${log}`);
      }
      // Another process took the port between our probe and the server's bind.
      if (attempt < START_ATTEMPTS && /could not bind|Address already in use/.test(log)) continue;
      throw new Error(`PostgreSQL exited (${outcome}) while starting; its log:\n${log}`);
    }
  } catch (error) {
    await rm(baseDir, { recursive: true, force: true });
    throw error;
  }
}

function handle(
  first: ChildProcess,
  port: number,
  baseDir: string,
  dataDir: string,
  respawn: () => Promise<ChildProcess>,
): PostgresServer {
  let child = first;
  /** Fast shutdown of the current server process, SIGKILL after a timeout. */
  const shutDown = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), POSTGRES_STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  let stopped: Promise<void> | undefined;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    get pid() {
      return child.pid ?? -1;
    },
    halt: shutDown,
    async resume() {
      child = await respawn();
    },
    stop() {
      stopped ??= (async () => {
        await shutDown();
        await rm(baseDir, { recursive: true, force: true, maxRetries: 3 });
      })();
      return stopped;
    },
  };
}

function stopSync(baseDir: string, dataDir: string): void {
  // postmaster.pid exists while the server runs and is removed as the last step of a shutdown;
  // the child's own state cannot be trusted here, as the event loop no longer reaps it.
  const pidFile = join(dataDir, 'postmaster.pid');
  const pid = readPid(pidFile);
  if (pid !== undefined) {
    signal(pid, 'SIGINT');
    const waiter = new Int32Array(new SharedArrayBuffer(4));
    const deadline = Date.now() + POSTGRES_STOP_TIMEOUT_MS;
    while (existsSync(pidFile) && Date.now() < deadline) Atomics.wait(waiter, 0, 0, 20);
    if (existsSync(pidFile)) signal(pid, 'SIGKILL');
  }
  rmSync(baseDir, { recursive: true, force: true, maxRetries: 3 });
}

function readPid(pidFile: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n', 1)[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

interface RunAs {
  uid: number;
  gid: number;
}

/** PostgreSQL refuses to run as root, so root hands it to the `postgres` user, or `nobody`. */
function serverUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag: string) =>
        Number(
          execFileSync('id', [flag, name], {
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'ignore'],
          }).trim(),
        );
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      // No such user; try the next.
    }
  }
  throw new Error(
    'running as root, but there is neither a postgres nor a nobody user to run PostgreSQL as',
  );
}

/**
 * Finds a directory with both `initdb` and `postgres`: the given one, then PATH, then the newest
 * /usr/lib/postgresql/<version>/bin.
 */
function findPostgresBinaries(binDir?: string): { initdb: string; postgres: string } {
  const dirs = binDir
    ? [binDir]
    : [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...debianBinDirs()];
  for (const dir of dirs) {
    const initdb = join(dir, 'initdb');
    const postgres = join(dir, 'postgres');
    if (isExecutable(initdb) && isExecutable(postgres)) return { initdb, postgres };
  }
  throw new Error(
    `PostgreSQL server binaries (initdb, postgres) not found ${binDir ? `in ${binDir}` : 'on PATH or in /usr/lib/postgresql/*/bin'}: install them with \`apt-get install postgresql\` (Debian/Ubuntu), or set TEST_DATABASE_URL to a server to use`,
  );
}

function debianBinDirs(): string[] {
  let versions: string[];
  try {
    versions = readdirSync(DEBIAN_PG_ROOT);
  } catch {
    return [];
  }
  return versions
    .filter((version) => /^\d+(\.\d+)?$/.test(version))
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => join(DEBIAN_PG_ROOT, version, 'bin'));
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function initdb(
  binary: string,
  dataDir: string,
  cwd: string,
  user: RunAs | undefined,
): Promise<void> {
  // C locale and UTF8 so that the host's LANG, which may name a locale that is not installed,
  // cannot fail or change the cluster.
  const child = spawn(
    binary,
    ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '--encoding=UTF8', '--locale=C'],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' }, ...user },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const code = await new Promise<number | string>((resolveExit, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode, signalName) => resolveExit(exitCode ?? signalName ?? 'unknown'));
  });
  if (code !== 0) throw new Error(`initdb failed (${code}):\n${output.slice(-4096)}`);
}

function spawnPostgres(
  binary: string,
  dataDir: string,
  socketDir: string,
  port: number,
  logFile: string,
  user: RunAs | undefined,
  { durable = false, settings = [] }: Pick<StartPostgresOptions, 'durable' | 'settings'>,
): ChildProcess {
  // Its log goes to a file rather than a pipe: nothing has to drain it, and nothing holds the
  // event loop open when the shared cluster is unref'd. Truncated per attempt, so a retry after a
  // port clash judges only its own log.
  const log = openSync(logFile, 'w');
  try {
    const args = ['-D', dataDir, '-p', String(port), '-k', socketDir];
    for (const setting of [...SERVER_SETTINGS, ...(durable ? [] : NOT_DURABLE), ...settings]) {
      args.push('-c', setting);
    }
    const child = spawn(binary, args, {
      cwd: socketDir,
      stdio: ['ignore', log, log],
      env: { ...process.env, LC_ALL: 'C' },
      ...user,
    });
    child.on('error', () => {
      // Reported by waitUntilReady through the missing exit; keeps 'error' from being unhandled.
    });
    return child;
  } finally {
    closeSync(log);
  }
}

/** Resolves `ready`, `timeout`, or how the server exited. */
async function waitUntilReady(
  child: ChildProcess,
  socketDir: string,
  port: number,
  deadline: number,
): Promise<string> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      return String(child.exitCode ?? child.signalCode);
    if (child.pid === undefined) return 'not started';
    // Through the socket in our own directory, so a server that took the port cannot answer for
    // ours; the TCP listener is up by then, as postgres binds it before its sockets.
    const client = new pg.Client({
      host: socketDir,
      port,
      user: 'postgres',
      database: 'postgres',
      connectionTimeoutMillis: 1_000,
    });
    try {
      await client.connect();
      await client.end();
      return 'ready';
    } catch {
      // Not listening yet, or "the database system is starting up".
    }
    if (Date.now() > deadline) return 'timeout';
    await sleep(50);
  }
}

function logTail(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8').slice(-4096).trim();
  } catch {
    return '(no log)';
  }
}
