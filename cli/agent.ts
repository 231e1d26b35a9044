/**
 * `spool agent`: the station agent and its everyday commands. `spool agent run` (or plain
 * `spool agent`) holds the station's link to Spool, reports its printers and prints the jobs it is
 * sent (docs/station-link.md); `status`, `printers`, `test-print` and `install-service` are for the
 * person looking after the station (docs/agent.md). The packaged agent (`spool-agent`) is these
 * same commands.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { messageOf, type PrinterStatus } from '../agent/backends/backend.js';
import {
  AgentConfigError,
  type AgentFileConfig,
  DEFAULT_CONFIG_PATH,
  defaultStateDir,
  type LogLevel,
  loadAgentConfig,
  problemList,
  TOKEN_CREDENTIAL,
} from '../agent/config.js';
import type { Agent } from '../agent/index.js';
import { JOURNAL_FILE } from '../agent/journal.js';
import { serverProblems } from '../agent/link.js';
import { prettyDestination } from '../agent/log-format.js';
import { ALL_CUPS_QUEUES, type PrinterSpec, parsePrinterSpec } from '../agent/printer-spec.js';
import { PrinterSet } from '../agent/printers.js';
import { DEFAULT_UNIT_PATH, systemdUnit } from '../agent/service.js';
import { type AgentStatus, readStatus, STATUS_HEARTBEAT_MS } from '../agent/status.js';
import { type Env, LOG_LEVELS, optionalStr, port, readConfig, str } from '../lib/config.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { whatStopsPrinting } from '../lib/printer-status.js';
import { isProcessAlive } from '../lib/processes.js';
import { spoolVersion } from '../lib/version.js';

const agentEnv = {
  token: optionalStr('SPOOL_DEVICE_TOKEN', 'the station device token (svc_dev_…)'),
  config: optionalStr('SPOOL_AGENT_CONFIG', `the configuration file (${DEFAULT_CONFIG_PATH})`),
  logLevel: optionalStr('LOG_LEVEL', `one of ${LOG_LEVELS.join(', ')}`),
  logFormat: optionalStr('LOG_FORMAT', 'json or pretty (default: pretty on a terminal)'),
  cupsServer: optionalStr(
    'CUPS_SERVER',
    'the CUPS server cups: printers use (default: the local one)',
  ),
  stateDir: optionalStr('SPOOL_AGENT_STATE_DIR', 'where the agent keeps its journal and status'),
  metricsHost: optionalStr('METRICS_HOST', 'address the agent serves GET /metrics on'),
  metricsPort: optionalStr('METRICS_PORT', 'port the agent serves GET /metrics on; 0: not served'),
  credentialsDir: optionalStr('CREDENTIALS_DIRECTORY', "systemd's credentials folder"),
};

const metricsEnv = {
  host: str('METRICS_HOST', { description: 'address for GET /metrics', default: '127.0.0.1' }),
  port: port('METRICS_PORT', { description: 'port for GET /metrics; 0: not served', default: 0 }),
};

/** What every `spool agent` command may be given. */
export interface AgentCommonFlags {
  config?: string;
  stateDir?: string;
  printer?: string[];
}

export interface AgentFlags extends AgentCommonFlags {
  server?: string;
  token?: string;
  /** Speak TLS to the server (a load balancer that terminates TLS), trusting the system's CAs. */
  tls?: boolean;
  /** A PEM file of CA certificates to trust instead; implies TLS. */
  ca?: string;
}

/** The settings of one command: flags over the environment over the file over the defaults. */
interface Settings {
  env: ReturnType<typeof readEnv>;
  file: AgentFileConfig | undefined;
  stateDir: string;
  printers: PrinterSpec[];
  logLevel: LogLevel;
  cupsServer: string | undefined;
}

function readEnv(env: Env) {
  return readConfig(env, agentEnv);
}

/**
 * The configuration file to read: `--config`, else SPOOL_AGENT_CONFIG (both must exist), else
 * /etc/spool/agent.toml when there is one.
 */
function configPath(flags: AgentCommonFlags, env: ReturnType<typeof readEnv>): string | undefined {
  if (flags.config) return flags.config;
  if (env.config) return env.config;
  return existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : undefined;
}

async function settings(flags: AgentCommonFlags, rawEnv: Env): Promise<Settings> {
  const env = readEnv(rawEnv);
  const path = configPath(flags, env);
  const file = path === undefined ? undefined : await loadAgentConfig(path);
  let logLevel: LogLevel = file?.logLevel ?? 'info';
  if (env.logLevel !== undefined) {
    if (!LOG_LEVELS.includes(env.logLevel as LogLevel)) {
      throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
    }
    logLevel = env.logLevel as LogLevel;
  }
  const flagPrinters = flags.printer ?? [];
  return {
    env,
    file,
    stateDir: resolve(flags.stateDir ?? env.stateDir ?? file?.stateDir ?? defaultStateDir(rawEnv)),
    printers:
      flagPrinters.length > 0
        ? flagPrinters.map((spec) => parsePrinterSpec(spec))
        : (file?.printers ?? []),
    logLevel,
    cupsServer: env.cupsServer ?? file?.cupsServer,
  };
}

/**
 * The device token, from (in turn) `--token`, SPOOL_DEVICE_TOKEN, the systemd credential
 * `device-token`, the file's `token` or its `token_file`; `source` says which, for the error that
 * says the server refused it.
 */
async function deviceToken(
  flags: AgentFlags,
  s: Settings,
  logger: Logger,
): Promise<{ token: string; source: string } | undefined> {
  if (flags.token) {
    logger.warn(
      '--token puts the device token where every user of this machine can read it (ps, /proc); ' +
        'use token_file in the configuration file or SPOOL_DEVICE_TOKEN instead',
    );
    return { token: flags.token, source: '--token' };
  }
  if (s.env.token) return { token: s.env.token.trim(), source: 'SPOOL_DEVICE_TOKEN' };
  if (s.env.credentialsDir) {
    const credential = join(s.env.credentialsDir, TOKEN_CREDENTIAL);
    if (existsSync(credential)) {
      const token = (await readFile(credential, 'utf8')).trim();
      return { token, source: `the systemd credential ${TOKEN_CREDENTIAL}` };
    }
  }
  if (s.file?.token) return { token: s.file.token, source: `token in ${s.file.path}` };
  if (s.file?.tokenFile) {
    try {
      const token = (await readFile(s.file.tokenFile, 'utf8')).trim();
      if (((await stat(s.file.tokenFile)).mode & 0o077) !== 0) {
        logger.warn(
          { token_file: s.file.tokenFile },
          'the token file can be read by other users; chmod 600 it',
        );
      }
      return { token, source: `token_file ${s.file.tokenFile}` };
    } catch (error) {
      throw new AgentConfigError(s.file.path, [
        `token_file ${s.file.tokenFile} cannot be read: ${messageOf(error)}`,
      ]);
    }
  }
  return undefined;
}

function agentLogger(s: Settings): Logger {
  const pretty =
    s.env.logFormat === 'pretty' || (s.env.logFormat !== 'json' && process.stdout.isTTY === true);
  return createLogger(
    { name: 'agent', level: s.logLevel },
    pretty ? prettyDestination(process.stdout) : undefined,
  );
}

/** `spool agent run`: the agent itself, until SIGTERM. */
export async function runAgentCommand(flags: AgentFlags, env: Env): Promise<void> {
  const s = await settings(flags, env);
  const logger = agentLogger(s);
  await refuseOldStateDir(flags, s);
  // What is missing or wrong is said all at once, not one problem a start.
  const problems: string[] = [];
  const server = flags.server ?? s.file?.server;
  if (!server) {
    problems.push(
      'give the server address: server = "HOST:PORT" in the configuration file, or --server',
    );
  } else if (flags.server !== undefined) {
    // The file's own server was checked with the rest of the file.
    problems.push(...serverProblems(flags.server));
  }
  const device = await deviceToken(flags, s, logger);
  if (!device) {
    problems.push(
      'give the station token: token_file (or token) in the configuration file, or SPOOL_DEVICE_TOKEN',
    );
  }
  if (s.printers.length === 0) {
    problems.push(
      'give at least one printer: a [printers] table in the configuration file, or --printer NAME=BACKEND',
    );
  }
  if (!server || !device || problems.length > 0) {
    throw new Error(problemList('the agent cannot start', problems));
  }
  const tls = flags.tls || flags.ca !== undefined || s.file?.tls?.enabled === true;
  const caFile = flags.ca ?? s.file?.tls?.ca;
  const ca = caFile === undefined ? undefined : await readFile(caFile);
  // The agent, gRPC and telemetry load here, not when `spool` starts: every other command of
  // `spool` builds this one's options without them.
  const [{ runAgent }, { credentials }, { serveMetrics, telemetry }] = await Promise.all([
    import('../agent/index.js'),
    import('@grpc/grpc-js'),
    import('../lib/telemetry.js'),
  ]);
  const metricsConfig = readConfig(
    {
      METRICS_HOST: s.env.metricsHost ?? s.file?.metrics?.host,
      METRICS_PORT: s.env.metricsPort ?? s.file?.metrics?.port?.toString(),
    },
    metricsEnv,
  );
  const metrics = await serveMetrics(metricsConfig.host, metricsConfig.port);
  if (metrics) logger.info({ port: metrics.port }, 'agent metrics served on GET /metrics');
  // In place before the agent starts, so that a SIGTERM while it starts (once it has logged that
  // it started, say) waits for the start and then stops it cleanly, rather than killing it.
  let starting: Promise<Agent> | undefined;
  onSignal(logger, async () => {
    const started = await starting?.catch(() => undefined);
    await started?.stop();
    metrics?.server.close();
    await telemetry().shutdown();
  });
  starting = runAgent({
    server,
    token: device.token,
    tokenSource: device.source,
    printers: s.printers,
    stateDir: s.stateDir,
    logger,
    agentVersion: spoolVersion(),
    cups: { env, ...(s.cupsServer ? { server: s.cupsServer } : {}) },
    ...(tls ? { credentials: credentials.createSsl(ca ?? null) } : {}),
    ...(s.file ? { describe: { config: s.file.path } } : {}),
  });
  let agent: Agent;
  try {
    agent = await starting;
  } catch (err) {
    metrics?.server.close();
    throw err;
  }
  // Resolves after SIGTERM; rejects when the server refuses the token, which retrying cannot fix.
  await agent.done;
}

/**
 * The state directory used to default to `.spool-agent` in the folder the agent started from. An
 * agent upgraded in place would start with an empty journal beside its old one and could print a
 * job twice, so it refuses until the old journal is moved or named.
 */
async function refuseOldStateDir(flags: AgentCommonFlags, s: Settings): Promise<void> {
  const chosen = flags.stateDir ?? s.env.stateDir ?? s.file?.stateDir;
  if (chosen !== undefined) return;
  const old = resolve(OLD_STATE_DIR);
  if (old === s.stateDir || !existsSync(join(old, JOURNAL_FILE))) return;
  if (existsSync(join(s.stateDir, JOURNAL_FILE))) return;
  throw new Error(
    `${old} holds a journal from an agent that kept its state there (the old default); move it to ` +
      `the state directory (mkdir -p ${s.stateDir} && mv ${join(old, '*')} ${s.stateDir}/) or ` +
      `give --state-dir ${OLD_STATE_DIR}, so that no job prints twice`,
  );
}

const OLD_STATE_DIR = '.spool-agent';

/** Stops cleanly on SIGTERM, SIGINT or SIGHUP, then exits. */
function onSignal(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  // The terminal it ran in closed: stop as cleanly as on SIGTERM, rather than die mid-job.
  process.on('SIGHUP', handler);
}

/** What `status` found: the file, and whether its agent still runs. */
export interface StatusReport {
  state_dir: string;
  running: boolean;
  /** A running agent that has not rewritten its status for three heartbeats. */
  stale: boolean;
  status: AgentStatus | null;
}

/** Exit codes of `spool agent status`, as systemctl's: 0 connected, 2 running without link, 3 not running. */
export const STATUS_EXIT = { connected: 0, disconnected: 2, notRunning: 3 } as const;

/**
 * The exit code of a report. An agent whose status has gone stale (it stopped writing it: stuck)
 * says nothing current about its link, so it does not count as connected, whatever it last wrote:
 * a monitor that checks the exit code must not miss it.
 */
export function statusExit(report: StatusReport): number {
  if (!report.running) return STATUS_EXIT.notRunning;
  return report.status?.link.connected && !report.stale
    ? STATUS_EXIT.connected
    : STATUS_EXIT.disconnected;
}

export async function agentStatus(flags: AgentCommonFlags, env: Env): Promise<StatusReport> {
  const s = await settings(flags, env);
  const status = (await readStatus(s.stateDir)) ?? null;
  const running = status !== null && status.stopped_at === undefined && isProcessAlive(status.pid);
  const stale =
    running &&
    status !== null &&
    Date.now() - Date.parse(status.updated_at) > 3 * STATUS_HEARTBEAT_MS;
  return { state_dir: s.stateDir, running, stale, status };
}

function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} days ago`;
}

function when(iso: string): string {
  return `${iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')} (${ago(iso)})`;
}

/** The status as a person reads it. */
export function formatStatus(report: StatusReport): string {
  const { status } = report;
  if (!status) {
    return `not running: no agent has run with the state directory ${report.state_dir} (an agent with another: give its --config or --state-dir)\n`;
  }
  const out: string[] = [];
  if (status.stopped_at) {
    out.push(`not running: stopped ${when(status.stopped_at)}`);
  } else if (!report.running) {
    out.push(
      `not running: pid ${status.pid} is gone; it ended without stopping cleanly, last seen ${when(status.updated_at)}`,
    );
  } else {
    out.push(
      `running: pid ${status.pid}, version ${status.agent_version}, since ${when(status.started_at)}`,
    );
    if (report.stale) {
      out.push(
        `warning: the status was last written ${when(status.updated_at)}; the agent may be stuck`,
      );
    }
  }
  const link = status.link;
  // The name its owner gave it, and the id the API and the console show beside it.
  const stationOf = (l: typeof link) =>
    l.station_id === undefined
      ? ''
      : l.station_name
        ? `, station "${l.station_name}" (${l.station_id})`
        : `, station ${l.station_id}`;
  if (report.running) {
    out.push(
      link.connected
        ? `link: ${report.stale ? 'last known ' : ''}connected to ${link.server ?? status.server} since ${when(link.since)}${stationOf(link)}${link.wrong_region ? ` (region ${link.wrong_region.server}; the station's home region is ${link.wrong_region.home})` : ''}`
        : `link: not connected (to ${status.server}) since ${when(link.since)}`,
    );
  }
  out.push(`state directory: ${report.state_dir}`);
  out.push(report.running ? 'printers:' : 'printers (when it last ran):');
  const width = Math.max(4, ...status.printers.map((p) => p.name.length));
  for (const p of status.printers) {
    // An agent of an earlier version wrote no count.
    const waiting = p.jobs_waiting ?? 0;
    const jobs = waiting === 0 ? '' : `  (${waiting} job${waiting === 1 ? '' : 's'} waiting)`;
    out.push(
      `  ${p.name.padEnd(width)}  ${p.detail ? `${p.status.padEnd(12)}  ${p.detail}` : p.status}${jobs}`,
    );
  }
  if (status.printers.length === 0) out.push('  (none)');
  out.push(
    `jobs today (${status.jobs_today.date}): ${status.jobs_today.printed} printed, ${status.jobs_today.failed} failed`,
  );
  out.push(
    status.last_error
      ? `last error: ${when(status.last_error.at)}: ${status.last_error.message.trim()}`
      : 'last error: none',
  );
  return `${out.join('\n')}\n`;
}

/** One printer as `spool agent printers` shows it. */
export interface PrinterListing {
  name: string;
  backend: string;
  /** The configured printer it came from, for a queue `cups:*` found. */
  discovered_by?: string;
  status: PrinterStatus['status'];
  detail: string;
  capabilities: {
    copies: boolean;
    paper_sizes: string[];
    duplex: boolean;
    color: boolean;
    page_options: boolean;
  };
}

function backendLabel(spec: PrinterSpec['backend']): string {
  switch (spec.kind) {
    case 'file':
      return `file:${spec.dir}`;
    case 'cups':
      return `cups:${spec.queue}`;
    case 'raw':
      return `raw:${spec.host.includes(':') ? `[${spec.host}]` : spec.host}:${spec.port}`;
  }
}

function printerSet(s: Settings, logger: Logger): PrinterSet {
  if (s.printers.length === 0) {
    throw new Error(
      'no printers configured: add a [printers] table to the configuration file, or give --printer NAME=BACKEND',
    );
  }
  return new PrinterSet({
    specs: s.printers,
    logger,
    cups: { ...(s.cupsServer ? { server: s.cupsServer } : {}) },
  });
}

/** `spool agent printers`: every printer the configuration gives, CUPS queues found included. */
export async function listPrinters(flags: AgentCommonFlags, env: Env): Promise<PrinterListing[]> {
  const s = await settings(flags, env);
  const logger = createLogger({ name: 'agent', level: 'silent' });
  const set = printerSet(s, logger);
  await set.refresh();
  const byName = new Map(s.printers.map((p) => [p.name, p]));
  const wildcards = s.printers.filter(
    (p) => p.backend.kind === 'cups' && p.backend.queue === ALL_CUPS_QUEUES,
  );
  const found = set.reports().map((r) => {
    const spec = byName.get(r.name);
    const listing: PrinterListing = {
      name: r.name,
      backend: '',
      status: r.status as PrinterStatus['status'],
      detail: r.detail,
      capabilities: {
        copies: r.capabilities?.copies ?? false,
        paper_sizes: r.capabilities?.paperSizes ?? [],
        duplex: r.capabilities?.duplex ?? false,
        color: r.capabilities?.color ?? false,
        page_options: r.capabilities?.pageOptions ?? false,
      },
    };
    if (spec && !(spec.backend.kind === 'cups' && spec.backend.queue === ALL_CUPS_QUEUES)) {
      listing.backend = backendLabel(spec.backend);
    } else {
      const from =
        wildcards.find((w) => w.name !== '*' && r.name.startsWith(`${w.name}/`)) ??
        wildcards.find((w) => w.name === '*');
      const queue = from && from.name !== '*' ? r.name.slice(from.name.length + 1) : r.name;
      listing.backend = `cups:${queue}`;
      if (from) listing.discovered_by = `${from.name}=cups:*`;
    }
    return listing;
  });
  await set.stop();
  // A cups:* that found nothing says why, rather than vanish from the list.
  const unreachable: PrinterListing[] = [];
  for (const w of wildcards) {
    if (found.some((p) => p.discovered_by === `${w.name}=cups:*`)) continue;
    unreachable.push({
      name: w.name,
      backend: 'cups:*',
      status: 'unknown',
      detail: `no CUPS queues found: ${await cupsScheduler(s.cupsServer, env)}`,
      capabilities: {
        copies: false,
        paper_sizes: [],
        duplex: false,
        color: false,
        page_options: false,
      },
    });
  }
  return [...found, ...unreachable];
}

/** What `lpstat -r` says of the CUPS scheduler, for a `cups:*` that found no queue. */
function cupsScheduler(server: string | undefined, env: Env): Promise<string> {
  const where = server === undefined ? 'the local CUPS' : `CUPS at ${server}`;
  return new Promise((resolve) => {
    execFile(
      'lpstat',
      [...(server === undefined ? [] : ['-h', server]), '-r'],
      { timeout: 10_000, env: { ...env, LC_ALL: 'C', LANG: 'C' } },
      (error, stdout, stderr) => {
        if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
          resolve('lpstat is not installed (install cups-client)');
        } else {
          const said = (stdout.trim() || stderr.trim() || messageOf(error)).split('\n')[0];
          resolve(said === 'scheduler is running' ? `${where} has no queues` : `${where}: ${said}`);
        }
      },
    );
  });
}

export function formatPrinters(printers: PrinterListing[]): string {
  if (printers.length === 0) return 'no printers found\n';
  const out: string[] = [];
  for (const p of printers) {
    const caps = [
      p.capabilities.copies ? 'copies' : undefined,
      p.capabilities.page_options ? 'page options' : undefined,
      p.capabilities.duplex ? 'duplex' : undefined,
      p.capabilities.color ? 'color' : undefined,
      p.capabilities.paper_sizes.length > 0
        ? `paper ${p.capabilities.paper_sizes.join(', ')}`
        : undefined,
    ].filter((c) => c !== undefined);
    out.push(`${p.name}`);
    out.push(
      `  backend:      ${p.backend}${p.discovered_by ? ` (found by ${p.discovered_by})` : ''}`,
    );
    out.push(`  status:       ${p.status}${p.detail ? `: ${p.detail}` : ''}`);
    out.push(`  capabilities: ${caps.length > 0 ? caps.join('; ') : 'none'}`);
  }
  return `${out.join('\n')}\n`;
}

/** The page `test-print` sends: plain text, which every backend takes. */
export function testPage(printer: string, backend: string, at: Date): Buffer {
  return Buffer.from(
    [
      'Spool test page',
      '',
      `printer: ${printer}`,
      `backend: ${backend}`,
      `station: ${hostname()}`,
      `agent:   ${spoolVersion()}`,
      `time:    ${at.toISOString()}`,
      '',
      'If you can read this, the agent can print to this printer.',
      '',
    ].join('\n'),
  );
}

/** `spool agent test-print PRINTER`: prints a test page through the printer's backend, here. */
export async function testPrint(
  printer: string,
  flags: AgentCommonFlags,
  env: Env,
): Promise<{ printer: string; backend: string; job: string }> {
  const s = await settings(flags, env);
  const logger = createLogger({ name: 'agent', level: 'silent' });
  const listing = await listPrinters(flags, env);
  const found = listing.find((p) => p.name === printer);
  if (!found) {
    throw new Error(
      `no printer named ${JSON.stringify(printer)}; the printers are: ${listing.map((p) => p.name).join(', ') || 'none'}`,
    );
  }
  const set = printerSet(s, logger);
  await set.refresh();
  const backend = set.backend(printer);
  if (!backend) throw new Error(`the printer ${JSON.stringify(printer)} went away`);
  // A page for a printer that cannot print would wait (in CUPS's queue, say) with no word.
  const report = set.reports().find((r) => r.name === printer);
  const trouble = report && whatStopsPrinting(report.status);
  if (trouble) {
    await set.stop();
    throw new Error(
      `${printer} ${trouble}${report.detail ? ` (${report.detail})` : ''}: no test page was sent; try again once it is ready`,
    );
  }
  const at = new Date();
  const job = `test-page-${at.getTime()}`;
  const { PrintOptions } = await import('../gen/spool/v1/stations.js');
  await backend.print({
    id: job,
    attempt: 1,
    title: 'Spool test page',
    contentType: 'text/plain',
    document: testPage(printer, found.backend, at),
    options: PrintOptions.fromPartial({ copies: 1 }),
  });
  await set.stop();
  return { printer, backend: found.backend, job };
}

/** The command that runs this agent, for the unit's `ExecStart=`. */
function selfCommand(env: Env): string[] {
  // The packaged agent's launcher says where it is; from a checkout, node and bin/spool.js.
  if (env.SPOOL_AGENT_BIN) return [env.SPOOL_AGENT_BIN];
  const script = process.argv[1];
  return script ? [process.execPath, resolve(script), 'agent'] : [process.execPath];
}

export interface InstallFlags extends AgentCommonFlags {
  dryRun?: boolean;
  unitFile?: string;
  user?: string;
}

/** `spool agent install-service`: writes (or with --dry-run prints) the systemd unit. */
export async function installService(flags: InstallFlags, env: Env): Promise<void> {
  const e = readEnv(env);
  const path = resolve(flags.config ?? e.config ?? DEFAULT_CONFIG_PATH);
  // The unit names the file; it must be there and sound before the service is installed.
  const config = existsSync(path) || !flags.dryRun ? await loadAgentConfig(path) : undefined;
  const unit = systemdUnit({
    exec: selfCommand(env),
    configPath: path,
    ...(config ? { config } : {}),
    ...(flags.user ? { user: flags.user } : {}),
  });
  const warnings: string[] = [];
  if (config?.token) {
    warnings.push(
      `${path} holds the token itself; the service's user must read the file, so it cannot stay private: move the token to a token_file readable by root only`,
    );
  }
  if (!config) {
    warnings.push(`${path} does not exist yet; the service cannot start without it`);
  }
  // The unit's sandbox gives the service a /tmp of its own, and its state in StateDirectory.
  if (config?.stateDir !== undefined) {
    warnings.push(
      `${path} sets state_dir (${config.stateDir}); under systemd leave it out, so that the journal that keeps jobs from printing twice lives in /var/lib/spool-agent (StateDirectory=)`,
    );
  }
  const insideTmp = (dir: string) => /^\/(var\/)?tmp(\/|$)/.test(dir);
  for (const printer of config?.printers ?? []) {
    if (printer.backend.kind === 'file' && insideTmp(printer.backend.dir)) {
      warnings.push(
        `printer ${printer.name} writes to ${printer.backend.dir}, which the service, with a /tmp of its own (PrivateTmp=yes), cannot share: choose a folder outside /tmp`,
      );
    }
  }
  if (config?.stateDir !== undefined && insideTmp(config.stateDir)) {
    warnings.push(
      `state_dir ${config.stateDir} is under /tmp, which the service sees as its own and loses on restart: the journal would be lost with it`,
    );
  }
  if (flags.dryRun) {
    process.stdout.write(unit);
    for (const w of warnings) process.stderr.write(`spool agent: warning: ${w}\n`);
    return;
  }
  const target = flags.unitFile ?? DEFAULT_UNIT_PATH;
  if (!isAbsolute(target)) throw new Error('--unit-file must be an absolute path');
  await mkdir(resolve(target, '..'), { recursive: true });
  await writeFile(target, unit, { mode: 0o644 });
  for (const w of warnings) process.stderr.write(`spool agent: warning: ${w}\n`);
  process.stdout.write(
    `wrote ${target}\nstart it with: systemctl daemon-reload && systemctl enable --now ${unitName(target)}\n`,
  );
}

function unitName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function commonOptions(command: Command): Command {
  return command
    .option(
      '--config <file>',
      `the configuration file (or SPOOL_AGENT_CONFIG; default ${DEFAULT_CONFIG_PATH} when it exists)`,
    )
    .option(
      '--state-dir <dir>',
      'where the journal and status are kept (or SPOOL_AGENT_STATE_DIR, or state_dir in the file)',
    );
}

function printerOption(command: Command): Command {
  return command.option(
    '--printer <name=backend>',
    'a printer instead of the [printers] table: NAME=file:DIR, NAME=cups:QUEUE, NAME=cups:* or NAME=raw:HOST:PORT; repeatable',
    collect,
    [],
  );
}

/**
 * Adds the agent's commands under `agent` (`spool agent …`, or the packaged `spool-agent …`).
 * `run` is the default, so `spool agent --server …` runs the agent as before.
 */
export function addAgentCommands(agent: Command, env: Env): Command {
  const run = agent
    .command('run', { isDefault: true })
    .description('run the agent: hold the link to Spool and print the jobs it sends')
    .option(
      '--server <host:port>',
      'the station link address (port 7070 in spool dev); several, comma separated, are tried in turn; or server in the file',
    )
    .option(
      '--tls',
      'speak TLS to the server (a load balancer terminating TLS), trusting system CAs',
    )
    .option('--ca <file>', 'PEM file of the CA certificates to trust (implies --tls)')
    .addOption(
      new Option(
        '--token <token>',
        'the device token; discouraged: ps shows it to every user (use token_file or SPOOL_DEVICE_TOKEN)',
      ),
    );
  commonOptions(printerOption(run)).action((opts: AgentFlags) => runAgentCommand(opts, env));

  commonOptions(
    agent
      .command('status')
      .description(
        'whether the agent runs and is connected, its printers, jobs today and the last error (exit 0 connected, 2 not connected or stuck, 3 not running)',
      )
      .option('--json', 'print the status as JSON'),
  ).action(async (opts: AgentCommonFlags & { json?: boolean }) => {
    const report = await agentStatus(opts, env);
    process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : formatStatus(report));
    process.exitCode = statusExit(report);
  });

  commonOptions(
    printerOption(
      agent
        .command('printers')
        .description(
          'the printers each backend finds, CUPS queues included, with their capabilities',
        )
        .option('--json', 'print them as JSON'),
    ),
  ).action(async (opts: AgentCommonFlags & { json?: boolean }) => {
    const printers = await listPrinters(opts, env);
    process.stdout.write(
      opts.json ? `${JSON.stringify({ printers }, null, 2)}\n` : formatPrinters(printers),
    );
  });

  commonOptions(
    printerOption(
      agent
        .command('test-print')
        .description('print a test page on PRINTER, here, without going through Spool')
        .argument('<printer>', 'the printer name (see spool agent printers)'),
    ),
  ).action(async (printer: string, opts: AgentCommonFlags) => {
    const done = await testPrint(printer, opts, env);
    process.stdout.write(`printed a test page on ${done.printer} (${done.backend})\n`);
  });

  agent
    .command('install-service')
    .description(`write the systemd unit that runs the agent (${DEFAULT_UNIT_PATH})`)
    .option('--config <file>', `the configuration file the service uses (${DEFAULT_CONFIG_PATH})`)
    .option('--dry-run', 'print the unit instead of writing it')
    .option('--unit-file <path>', `where to write the unit (${DEFAULT_UNIT_PATH})`)
    .option('--user <name>', 'run as this existing user instead of a dynamic one')
    .action((opts: InstallFlags) => installService(opts, env));

  return agent;
}
