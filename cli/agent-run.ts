/**
 * `spool agent run` (or plain `spool agent`): the agent itself, holding the station's link to
 * Spool until SIGTERM (docs/station-link.md).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { messageOf } from '../agent/backends/backend.js';
import { AgentConfigError, problemList, TOKEN_CREDENTIAL } from '../agent/config.js';
import { RecentLog } from '../agent/diagnose.js';
import type { Agent, AgentOptions } from '../agent/index.js';
import { JOURNAL_FILE } from '../agent/journal.js';
import { serverProblems } from '../agent/link.js';
import { prettyDestination } from '../agent/log-format.js';
import { builtInReleaseKey } from '../agent/release-key.js';
import { supervise } from '../agent/supervisor.js';
import { RESTART_FOR_UPDATE_EXIT } from '../agent/update-state.js';
import { systemClock } from '../lib/clock.js';
import { type Env, port, readConfig, str } from '../lib/config.js';
import { hostPlatform } from '../lib/contracts/release-manifest.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { spoolVersion } from '../lib/version.js';
import { stateTokenFile } from './agent-enroll.js';
import {
  type AgentCommonFlags,
  type AgentFlags,
  type AgentSettings,
  agentSettings,
} from './agent-settings.js';
import { onShutdown } from './shutdown.js';

const metricsEnv = {
  host: str('METRICS_HOST', { description: 'address for GET /metrics', default: '127.0.0.1' }),
  port: port('METRICS_PORT', { description: 'port for GET /metrics; 0: not served', default: 0 }),
};
/**
 * The device token, from (in turn) `--token`, SPOOL_DEVICE_TOKEN, the systemd credential
 * `device-token`, the file's `token` or its `token_file`, or the state directory's `device-token`
 * that `spool agent enroll` wrote; `source` says which, for the error that says the server refused
 * it.
 */
async function deviceToken(
  flags: AgentFlags,
  s: AgentSettings,
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
  const enrolled = stateTokenFile(s.stateDir);
  if (existsSync(enrolled)) {
    const token = (await readFile(enrolled, 'utf8')).trim();
    return { token, source: `${enrolled} (kept by spool agent enroll)` };
  }
  return undefined;
}

/**
 * The agent's logger: pretty on a terminal (or LOG_FORMAT=pretty), JSON lines otherwise; `recent`
 * keeps the last lines written, for a diagnosis.
 */
function agentLogger(s: AgentSettings, recent: RecentLog): Logger {
  const pretty =
    s.env.logFormat === 'pretty' || (s.env.logFormat !== 'json' && process.stdout.isTTY === true);
  return createLogger(
    { name: 'agent', level: s.logLevel },
    recent.tee(pretty ? prettyDestination(process.stdout) : pino.destination(1)),
  );
}

/** `spool agent run`: the agent itself, until SIGTERM. */
export async function runAgentCommand(flags: AgentFlags, env: Env): Promise<void> {
  const s = await agentSettings(flags, env);
  const recentLog = new RecentLog();
  const logger = agentLogger(s, recentLog);
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
      'give the station token: token_file (or token) in the configuration file, or SPOOL_DEVICE_TOKEN; or first enroll the station with its enrollment code (enroll --server HOST:PORT CODE, with the same state directory)',
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
  const options: AgentOptions = {
    server,
    token: device.token,
    tokenSource: device.source,
    printers: s.printers,
    stateDir: s.stateDir,
    logger,
    recentLog,
    agentVersion: spoolVersion(),
    cups: { env, ...(s.cupsServer ? { server: s.cupsServer } : {}) },
    ...(tls ? { credentials: credentials.createSsl(ca ?? null) } : {}),
    ...(s.file ? { describe: { config: s.file.path } } : {}),
  };
  const metricsAt = { host: metricsConfig.host, port: metricsConfig.port };
  const updates = packagedUpdates(s);
  if (updates && s.env.supervised === undefined) {
    // The installed package: it runs the version its updates chose, and rolls back one that fails.
    const status = await superviseVersions({
      s,
      env,
      logger,
      updates,
      options,
      metricsAt,
      serveMetrics,
    });
    await telemetry().shutdown();
    process.exit(status);
  }

  const metrics = await serveMetrics(metricsAt.host, metricsAt.port);
  if (metrics) logger.info({ port: metrics.port }, 'agent metrics served on GET /metrics');
  // In place before the agent starts, so that a SIGTERM while it starts (once it has logged that
  // it started, say) waits for the start and then stops it cleanly, rather than killing it.
  let starting: Promise<Agent> | undefined;
  onShutdown(
    logger,
    async () => {
      const started = await starting?.catch(() => undefined);
      await started?.stop();
      metrics?.server.close();
      await telemetry().shutdown();
    },
    { hangup: true },
  );
  starting = runAgent({
    ...options,
    // A version the installed package runs: a new version swapped in is started by it.
    ...(updates
      ? {
          updates: {
            ...updates,
            restart: () => {
              void starting
                ?.then((agent) => agent.stop())
                .finally(() => process.exit(RESTART_FOR_UPDATE_EXIT));
            },
          },
        }
      : {}),
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

/** The packaged agent's platform and release key; undefined when it cannot update itself. */
function packagedUpdates(s: AgentSettings): { platform: string; releaseKey: string } | undefined {
  const releaseKey = builtInReleaseKey();
  const platform = hostPlatform();
  if (s.env.bin === undefined || releaseKey === undefined || platform === undefined)
    return undefined;
  return { platform, releaseKey };
}

/**
 * The installed package's `run`: the agent in this process while no other version is current,
 * else that version as a child (agent/supervisor.ts); signals stop whichever runs.
 */
async function superviseVersions(ctx: {
  s: AgentSettings;
  /** The environment the agent was started with, handed on to the version it runs. */
  env: Env;
  logger: Logger;
  updates: { platform: string; releaseKey: string };
  options: AgentOptions;
  metricsAt: { host: string; port: number };
  serveMetrics: typeof import('../lib/telemetry.js').serveMetrics;
}): Promise<number> {
  const { logger } = ctx;
  const { runAgent } = await import('../agent/index.js');
  let requestStop: () => void = () => {};
  const stopRequested = new Promise<void>((resolve) => {
    requestStop = resolve;
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => {
      logger.info({ signal }, 'shutting down');
      requestStop();
    });
  }
  return supervise({
    stateDir: ctx.s.stateDir,
    version: spoolVersion(),
    logger,
    clock: systemClock,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()),
    stopRequested,
    async runHere() {
      const metrics = await ctx.serveMetrics(ctx.metricsAt.host, ctx.metricsAt.port);
      let restart: () => void = () => {};
      const restarting = new Promise<'update'>((resolve) => {
        restart = () => resolve('update');
      });
      const agent = await runAgent({ ...ctx.options, updates: { ...ctx.updates, restart } });
      try {
        const why = await Promise.race([
          restarting,
          stopRequested.then(() => 'stopped' as const),
          agent.done.then(() => 'stopped' as const),
        ]);
        await agent.stop();
        await agent.done;
        return why;
      } finally {
        metrics?.server.close();
      }
    },
    spawn(versionDir) {
      const child = spawn(join(versionDir, 'bin', 'spool-agent'), process.argv.slice(2), {
        stdio: 'inherit',
        env: { ...ctx.env, SPOOL_AGENT_SUPERVISED: '1' },
      });
      return {
        exited: new Promise((resolve) => {
          child.once('exit', (code) => resolve(code));
          child.once('error', (err) => {
            logger.error({ err, version_dir: versionDir }, 'could not start the version');
            resolve(127);
          });
        }),
        kill: (signal) => child.kill(signal),
      };
    },
  });
}

/**
 * The state directory used to default to `.spool-agent` in the folder the agent started from. An
 * agent upgraded in place would start with an empty journal beside its old one and could print a
 * job twice, so it refuses until the old journal is moved or named.
 */
async function refuseOldStateDir(flags: AgentCommonFlags, s: AgentSettings): Promise<void> {
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
