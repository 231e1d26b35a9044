/**
 * Starts a private `nats-server` with JetStream as a child process, for `spool dev` (store in
 * `.spool/nats`) and for the tests. The server picks a random port unless told one, and reports
 * the port it bound through its ports file, so two servers never race for a port we guessed.
 *
 * The tests also start servers as nodes of a cluster, and clusters joined by gateways into a
 * supercluster; the route and gateway ports are then fixed by the caller, because every node names
 * its peers' ports before any of them is running.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where `nats-server` is looked for after `PATH`. */
export const NATS_SERVER_PATHS = [
  '/usr/sbin/nats-server',
  '/usr/local/bin/nats-server',
  '/usr/bin/nats-server',
];

/** How long to wait for the ports file before giving up. */
export const NATS_START_TIMEOUT_MS = 15_000;

/** How long `stop()` waits after SIGTERM before it sends SIGKILL. */
export const NATS_STOP_TIMEOUT_MS = 5_000;

const STDERR_TAIL_BYTES = 8 * 1024;

/** The part of a pino logger this module uses; any pino `Logger` fits. */
export interface NatsServerLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface NatsServerOptions {
  /** JetStream store directory; created if missing. Reuse it to keep streams across restarts. */
  storeDir: string;
  /** Client port; `-1` (the default) lets the server pick a free one. */
  port?: number;
  /** Address to listen on; defaults to `127.0.0.1`. */
  host?: string;
  /** Path of the `nats-server` executable; found on `PATH` or in {@link NATS_SERVER_PATHS}. */
  binary?: string;
  /** Receives the server's log lines at debug level and an unexpected exit at warn level. */
  logger?: NatsServerLogger;
  /** Defaults to {@link NATS_START_TIMEOUT_MS}. */
  startTimeoutMs?: number;
  /**
   * The server's name. Required in practice for a cluster or gateway node: without it the server
   * names itself by a random id at every start, and its JetStream peers no longer know it after a
   * restart.
   */
  serverName?: string;
  /** Makes the server a node of a cluster; see {@link NatsClusterOptions}. */
  cluster?: NatsClusterOptions;
  /** Joins the server's cluster to other clusters; see {@link NatsGatewayOptions}. */
  gateway?: NatsGatewayOptions;
}

/**
 * A cluster node's route listener and its peers. The port is fixed by the caller (not `-1`),
 * because the other nodes list it in their `routes` before this node has started.
 */
export interface NatsClusterOptions {
  /** The cluster's name; with a gateway it must equal the gateway's name. */
  name: string;
  /** Port the node accepts routes on, on the server's host. */
  port: number;
  /**
   * The peers' route URLs, e.g. `nats-route://127.0.0.1:6222`. The node's own may be among them
   * (the server skips it), and a one-node cluster must list it: nats-server 2.9 refuses to start
   * JetStream in a cluster that has no routes.
   */
  routes: string[];
}

/**
 * A gateway listener and the clusters it connects to. Gateways can only be configured in a
 * config file, so a server with this option is started with one.
 */
export interface NatsGatewayOptions {
  /** This cluster's gateway name, which other clusters use to address it. */
  name: string;
  /** Port the server accepts gateway connections on, on the server's host. */
  port: number;
  /**
   * `host:port` that other clusters should connect to for this server. Servers gossip their
   * gateway addresses, so one reachable only through something in between (a proxy, NAT) must be
   * advertised, or the other side learns and dials the listener directly.
   */
  advertise?: string;
  /** The other clusters: each gateway's name and the `nats://host:port` URLs of its gateways. */
  gateways: Array<{ name: string; urls: string[] }>;
}

/** A running `nats-server`. */
export interface NatsServer {
  /** Client URL, e.g. `nats://127.0.0.1:4222`. */
  readonly url: string;
  /** The client port the server bound. */
  readonly port: number;
  readonly pid: number;
  readonly storeDir: string;
  /**
   * Stops the server with SIGTERM, sends SIGKILL if it has not exited after
   * {@link NATS_STOP_TIMEOUT_MS}, and resolves once it has exited. Safe to call more than once and
   * after {@link NatsServer.kill}.
   */
  stop(): Promise<void>;
  /**
   * Sends a signal (default SIGKILL) without waiting, to simulate a crash in fault tests. Call
   * `stop()` afterwards to wait for the exit and clean up.
   */
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Starts `nats-server -js` and resolves once it accepts clients.
 *
 * To restart the same server (in fault tests, or after a crash), stop it and call this again with
 * the previous handle's `port` and `storeDir`: clients reconnect to the same URL and JetStream
 * recovers its streams and consumers from the store.
 *
 * @throws Error with an install hint when the binary cannot be found, or with the tail of the
 * server's output when it exits or does not report its port in time.
 */
export async function startNatsServer(options: NatsServerOptions): Promise<NatsServer> {
  const binary = options.binary ?? findNatsServer();
  const host = options.host ?? '127.0.0.1';
  const storeDir = resolve(options.storeDir);
  const logger = options.logger;
  await mkdir(storeDir, { recursive: true });
  // A directory per start for the ports file (its name carries the pid) and the config file;
  // the server writes nothing else there.
  const portsDir = await mkdtemp(join(tmpdir(), 'spool-nats-ports-'));
  let args: string[];
  try {
    args = await serverArgs(options, { host, storeDir, portsDir });
  } catch (error) {
    await rm(portsDir, { recursive: true, force: true });
    throw error;
  }

  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });

  let tail = '';
  let partial = '';
  const onOutput = (chunk: Buffer): void => {
    const text = chunk.toString('utf8');
    tail = (tail + text).slice(-STDERR_TAIL_BYTES);
    if (!logger) return;
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line) logger.debug({ component: 'nats-server', pid: child.pid }, line);
    }
  };
  child.stdout?.on('data', onOutput);
  child.stderr?.on('data', onOutput);

  let stopping = false;
  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolveExit) => {
    child.once('exit', (code, signal) => {
      if (!stopping && logger) {
        logger.warn(
          { component: 'nats-server', pid: child.pid, code, signal },
          'nats-server exited',
        );
      }
      resolveExit();
    });
    // A process that never started (ENOENT, EACCES) has no exit to wait for.
    child.once('error', (error) => {
      spawnError = error;
      if (child.pid === undefined) resolveExit();
    });
  });

  let port: number;
  try {
    port = await waitForPort(
      child,
      portsDir,
      options.startTimeoutMs ?? NATS_START_TIMEOUT_MS,
      () => spawnError,
      () => tail.trim(),
    );
  } catch (error) {
    stopping = true;
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
    }
    await exited;
    await rm(portsDir, { recursive: true, force: true });
    throw error;
  }

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      stopping = true;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), NATS_STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      } else {
        await exited;
      }
      await rm(portsDir, { recursive: true, force: true });
    })();
    return stopped;
  };

  return {
    url: `nats://${urlHost(host)}:${port}`,
    port,
    pid: child.pid ?? -1,
    storeDir,
    stop,
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      stopping = true;
      child.kill(signal);
    },
  };
}

/**
 * The command line. Flags win over the config file, so the client listener, JetStream and the
 * ports file stay on flags exactly as for a single server, and the file holds only what has no
 * flag (gateways) or belongs with it (the cluster).
 */
async function serverArgs(
  options: NatsServerOptions,
  paths: { host: string; storeDir: string; portsDir: string },
): Promise<string[]> {
  const args = [
    '-js',
    '-sd',
    paths.storeDir,
    '-a',
    paths.host,
    '-p',
    String(options.port ?? -1),
    '--ports_file_dir',
    paths.portsDir,
  ];
  if (options.serverName !== undefined) args.push('-n', options.serverName);
  const config = natsConfig(options, paths.host);
  if (config) {
    const file = join(paths.portsDir, 'nats-server.conf');
    await writeFile(file, config);
    args.push('-c', file);
  }
  return args;
}

/**
 * The config file's text for the cluster and gateway blocks, or undefined when there are none.
 * The format is a superset of JSON, so JSON escapes paths and names safely.
 */
function natsConfig(
  options: Pick<NatsServerOptions, 'cluster' | 'gateway'>,
  host = '127.0.0.1',
): string | undefined {
  const { cluster, gateway } = options;
  if (!cluster && !gateway) return undefined;
  const config: Record<string, unknown> = {};
  if (cluster) {
    config.cluster = {
      name: cluster.name,
      listen: listenAddress(host, cluster.port),
      routes: cluster.routes,
    };
  }
  if (gateway) {
    config.gateway = {
      name: gateway.name,
      listen: listenAddress(host, gateway.port),
      ...(gateway.advertise === undefined ? {} : { advertise: gateway.advertise }),
      gateways: gateway.gateways.map(({ name, urls }) => ({ name, urls })),
    };
  }
  return `${JSON.stringify(config, null, 2)}\n`;
}

function listenAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Finds `nats-server` on `path` (default `PATH`), then in `fallbacks` (default
 * {@link NATS_SERVER_PATHS}).
 *
 * @throws Error with a one-line install hint when it is nowhere.
 */
export function findNatsServer(
  path = process.env.PATH ?? '',
  fallbacks: readonly string[] = NATS_SERVER_PATHS,
): string {
  const candidates = [
    ...path
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'nats-server')),
    ...fallbacks,
  ];
  for (const candidate of candidates) {
    if (isExecutable(candidate)) return candidate;
  }
  throw new Error(
    'nats-server not found on PATH or in /usr/sbin, /usr/local/bin, /usr/bin: install it with `apt-get install nats-server` (Debian/Ubuntu) or download it from https://github.com/nats-io/nats-server/releases',
  );
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Polls for `<exe>_<pid>.ports` and reads the client port from it. */
async function waitForPort(
  child: ChildProcess,
  portsDir: string,
  timeoutMs: number,
  failure: () => Error | undefined,
  output: () => string,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  const suffix = `_${child.pid}.ports`;
  for (;;) {
    const spawnError = failure();
    if (spawnError) {
      throw new Error(`could not start nats-server: ${spawnError.message}`, { cause: spawnError });
    }
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `nats-server exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output()}`,
      );
    }
    const name = (await readdir(portsDir)).find((file) => file.endsWith(suffix));
    if (name) {
      const port = parsePortsFile(await readFile(join(portsDir, name), 'utf8'));
      // A file caught half-written does not parse yet; the next poll reads it whole.
      if (port !== undefined) return port;
    }
    if (Date.now() > deadline) {
      throw new Error(`nats-server did not report its port within ${timeoutMs} ms:\n${output()}`);
    }
    await sleep(25);
  }
}

function parsePortsFile(text: string): number | undefined {
  let ports: { nats?: unknown; client?: unknown };
  try {
    ports = JSON.parse(text) as typeof ports;
  } catch {
    return undefined;
  }
  // nats-server 2.x calls the client URLs `nats`; accept `client` too.
  const urls = ports.nats ?? ports.client;
  if (!Array.isArray(urls) || typeof urls[0] !== 'string') return undefined;
  const port = Number(new URL(urls[0]).port);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

function urlHost(host: string): string {
  // A wildcard listener is reachable on loopback; a URL cannot name the wildcard.
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
