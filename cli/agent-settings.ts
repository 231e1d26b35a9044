/**
 * The settings every `spool agent` command reads: its flags over the environment over the
 * configuration file over the defaults, and the printers they name.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  type AgentFileConfig,
  DEFAULT_CONFIG_PATH,
  defaultStateDir,
  type LogLevel,
  loadAgentConfig,
} from '../agent/config.js';
import { type PrinterSpec, parsePrinterSpec } from '../agent/printer-spec.js';
import { PrinterSet } from '../agent/printers.js';
import { type Env, LOG_LEVELS, optionalStr, readConfig } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';

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
  bin: optionalStr('SPOOL_AGENT_BIN', 'the packaged agent’s command, set by its launcher'),
  supervised: optionalStr(
    'SPOOL_AGENT_SUPERVISED',
    'set for a version the installed package runs after an update (docs/agent.md, "Updates")',
  ),
};

/** The agent's variables, as read from the environment. */
export type AgentEnv = { [K in keyof typeof agentEnv]: string | undefined };

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
export interface AgentSettings {
  env: AgentEnv;
  file: AgentFileConfig | undefined;
  stateDir: string;
  printers: PrinterSpec[];
  logLevel: LogLevel;
  cupsServer: string | undefined;
}

/** The agent's variables in `env`. */
export function readAgentEnv(env: Env): AgentEnv {
  return readConfig(env, agentEnv);
}

/**
 * The configuration file to read: `--config`, else SPOOL_AGENT_CONFIG (both must exist), else
 * /etc/spool/agent.toml when there is one.
 */
function configPath(flags: AgentCommonFlags, env: AgentEnv): string | undefined {
  if (flags.config) return flags.config;
  if (env.config) return env.config;
  return existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : undefined;
}

/** The settings of a command given `flags`, reading the configuration file they name. */
export async function agentSettings(flags: AgentCommonFlags, rawEnv: Env): Promise<AgentSettings> {
  const env = readAgentEnv(rawEnv);
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

/** The printers the settings name; none is an error, said with how to give some. */
export function printerSet(s: AgentSettings, logger: Logger): PrinterSet {
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
