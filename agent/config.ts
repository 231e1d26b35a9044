/**
 * The agent's configuration file (`/etc/spool/agent.toml` by default; docs/agent.md has the
 * schema). It is TOML, read with smol-toml; every problem is reported at once, each naming the
 * file, the line and the key, before anything starts.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import { LOG_LEVELS } from '../lib/config.js';
import { serverProblems } from './link.js';
import { type PrinterSpec, parsePrinterSpec } from './printer-spec.js';

/** Where the configuration is read from when neither `--config` nor SPOOL_AGENT_CONFIG says. */
export const DEFAULT_CONFIG_PATH = '/etc/spool/agent.toml';

/** The name of the systemd credential (`LoadCredential=`) the token is read from when present. */
export const TOKEN_CREDENTIAL = 'device-token';

export type LogLevel = (typeof LOG_LEVELS)[number];

/** The configuration file, checked; paths in it are absolute (resolved against the file's folder). */
export interface AgentFileConfig {
  /** The file it came from. */
  path: string;
  server?: string;
  token?: string;
  tokenFile?: string;
  tls?: { enabled: boolean; ca?: string };
  stateDir?: string;
  logLevel?: LogLevel;
  cupsServer?: string;
  metrics?: { host?: string; port?: number };
  printers: PrinterSpec[];
}

/** A configuration file that cannot be used; the message names each bad line and key. */
/** `head: problem`, or `head:` and the problems as a list under it. */
export function problemList(head: string, problems: readonly string[]): string {
  return problems.length === 1
    ? `${head}: ${problems[0]}`
    : `${head}:\n${problems.map((p) => `  - ${p}`).join('\n')}`;
}

export class AgentConfigError extends Error {
  readonly problems: string[];

  constructor(path: string, problems: string[]) {
    super(problemList(path, problems));
    this.name = 'AgentConfigError';
    this.problems = problems;
  }
}

const TOP_KEYS = new Set([
  'server',
  'token',
  'token_file',
  'tls',
  'state_dir',
  'log_level',
  'cups',
  'metrics',
  'printers',
]);

/** Reads and checks the file at `path`; throws {@link AgentConfigError}. */
export async function loadAgentConfig(path: string): Promise<AgentFileConfig> {
  let source: string;
  try {
    source = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new AgentConfigError(path, [
      code === 'ENOENT'
        ? 'no such file (write one as docs/agent.md shows, or give --config FILE)'
        : `cannot be read: ${(error as Error).message}`,
    ]);
  }
  return parseAgentConfig(source, path);
}

/** Checks the text of a configuration file; `path` names it in errors and anchors relative paths. */
export function parseAgentConfig(source: string, path: string): AgentFileConfig {
  let doc: Record<string, unknown>;
  try {
    doc = parse(source) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TomlError) {
      const first = error.message.split('\n')[0] ?? error.message;
      // The usual slip: a text value without its quotes (server = 127.0.0.1:7070).
      const written = /^\s*([\w.-]+)\s*=\s*([^"'[{\s#][^#]*?)\s*(?:#.*)?$/.exec(
        source.split(/\r?\n/)[error.line - 1] ?? '',
      );
      const hint =
        written && !/^(true|false|[-+]?\d[\d_.eE+-]*)$/.test(written[2] ?? '')
          ? `; a text value needs quotes: ${written[1]} = "${written[2]}"`
          : '';
      throw new AgentConfigError(path, [
        `line ${error.line}, column ${error.column}: ${first.replace(/^Invalid TOML document: /, '')}${hint}`,
      ]);
    }
    throw error;
  }
  const base = dirname(resolve(path));
  const problems: string[] = [];
  const at = (table: string[], key: string) => {
    const line = lineOf(source, table, key);
    const name = [...table, key].join('.');
    return line === undefined ? name : `line ${line}: ${name}`;
  };
  const bad = (table: string[], key: string, message: string) =>
    problems.push(`${at(table, key)}: ${message}`);
  const file = (value: string) => (isAbsolute(value) ? value : resolve(base, value));
  const out: AgentFileConfig = { path, printers: [] };

  for (const key of Object.keys(doc)) {
    if (!TOP_KEYS.has(key))
      bad([], key, `unknown key; expected one of ${[...TOP_KEYS].join(', ')}`);
  }
  const string = (table: string[], key: string, value: unknown): string | undefined => {
    if (value === undefined) return undefined;
    if (typeof value === 'string' && value.trim() !== '' && value.length <= 4096) return value;
    bad(table, key, 'expected a non-empty string');
    return undefined;
  };
  const table = (key: string): Record<string, unknown> | undefined => {
    const value = doc[key];
    if (value === undefined) return undefined;
    if (typeof value === 'object' && value !== null && !Array.isArray(value) && !isDate(value)) {
      return value as Record<string, unknown>;
    }
    bad([], key, `expected a table ([${key}])`);
    return undefined;
  };
  const only = (name: string, t: Record<string, unknown>, keys: string[]) => {
    for (const key of Object.keys(t)) {
      if (!keys.includes(key)) bad([name], key, `unknown key; expected ${keys.join(' or ')}`);
    }
  };

  // server: "host:port", or a list tried in turn.
  const server = doc.server;
  if (Array.isArray(server)) {
    if (server.length === 0 || !server.every((s) => typeof s === 'string' && s.trim() !== '')) {
      bad([], 'server', 'expected "HOST:PORT" or a list of them');
    } else {
      out.server = server.join(',');
    }
  } else {
    const s = string([], 'server', server);
    if (s !== undefined) out.server = s;
  }
  // Reported with the file's other problems, not only once they are fixed.
  if (out.server !== undefined) {
    for (const problem of serverProblems(out.server)) bad([], 'server', problem);
  }

  const token = string([], 'token', doc.token);
  if (token !== undefined) {
    if (/\s/.test(token)) bad([], 'token', 'a device token has no spaces (svc_dev_…)');
    else out.token = token;
  }
  const tokenFile = string([], 'token_file', doc.token_file);
  if (tokenFile !== undefined) out.tokenFile = file(tokenFile);
  if (token !== undefined && tokenFile !== undefined) {
    bad([], 'token_file', 'give token or token_file, not both');
  }

  const stateDir = string([], 'state_dir', doc.state_dir);
  if (stateDir !== undefined) out.stateDir = file(stateDir);

  if (doc.log_level !== undefined) {
    if (LOG_LEVELS.includes(doc.log_level as LogLevel)) out.logLevel = doc.log_level as LogLevel;
    else bad([], 'log_level', `expected one of ${LOG_LEVELS.join(', ')}`);
  }

  const tls = table('tls');
  if (tls) {
    only('tls', tls, ['enabled', 'ca']);
    if (tls.enabled !== undefined && typeof tls.enabled !== 'boolean') {
      bad(['tls'], 'enabled', 'expected true or false');
    }
    const ca = string(['tls'], 'ca', tls.ca);
    // A CA file means TLS unless TLS is explicitly turned off.
    out.tls = {
      enabled: tls.enabled === true || (tls.enabled === undefined && ca !== undefined),
      ...(ca === undefined ? {} : { ca: file(ca) }),
    };
  }

  const cups = table('cups');
  if (cups) {
    only('cups', cups, ['server']);
    const s = string(['cups'], 'server', cups.server);
    if (s !== undefined) out.cupsServer = s;
  }

  const metrics = table('metrics');
  if (metrics) {
    only('metrics', metrics, ['host', 'port']);
    out.metrics = {};
    const host = string(['metrics'], 'host', metrics.host);
    if (host !== undefined) out.metrics.host = host;
    if (metrics.port !== undefined) {
      const port = metrics.port;
      if (typeof port === 'number' && Number.isInteger(port) && port >= 0 && port <= 65_535) {
        out.metrics.port = port;
      } else {
        bad(['metrics'], 'port', 'expected a port, 0 to 65535 (0: not served)');
      }
    }
  }

  const printers = table('printers');
  if (printers) {
    for (const [name, value] of Object.entries(printers)) {
      if (typeof value !== 'string') {
        bad(
          ['printers'],
          name,
          'expected a backend string: "file:DIR", "cups:QUEUE", "cups:*" or "raw:HOST:PORT"',
        );
        continue;
      }
      try {
        const spec = parsePrinterSpec(`${name}=${value}`, base);
        out.printers.push(spec);
      } catch (error) {
        bad(['printers'], name, (error as Error).message);
      }
    }
  }

  if (problems.length > 0) throw new AgentConfigError(path, problems);
  return out;
}

function isDate(value: unknown): boolean {
  return value instanceof Date;
}

/**
 * The 1-based line where `key` is set inside `[table]` (or at the top when `table` is empty), for
 * error messages; undefined when it cannot be told (a key set in an inline table, say).
 */
export function lineOf(source: string, table: string[], key: string): number | undefined {
  const lines = source.split(/\r?\n/);
  const want = table.join('.');
  let current = '';
  const keyPattern = new RegExp(
    `^\\s*(?:${escapeRegExp(key)}|"${escapeRegExp(key)}"|'${escapeRegExp(key)}')\\s*=`,
  );
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] as string;
    const header = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$/.exec(line);
    if (header) {
      current = (header[1] as string).replace(/\s*\.\s*/g, '.').replace(/["']/g, '');
      // A table that should not be there (a misspelt [printer]) is found by its header.
      if (want === '' && (current === key || current.startsWith(`${key}.`))) return i + 1;
      continue;
    }
    if (current === want && keyPattern.test(line)) return i + 1;
    // A dotted key at the top: `tls.ca = "…"`.
    if (current === '' && want !== '') {
      const dotted = new RegExp(`^\\s*${escapeRegExp(want)}\\.${escapeRegExp(key)}\\s*=`);
      if (dotted.test(line)) return i + 1;
    }
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Where the agent keeps its journal, lock and status file when nothing says: systemd's
 * `$STATE_DIRECTORY` under a unit with `StateDirectory=`, `/var/lib/spool-agent` for root, else
 * `$XDG_STATE_HOME/spool-agent` or `~/.local/state/spool-agent`.
 */
export function defaultStateDir(
  env: Record<string, string | undefined>,
  uid: number | undefined = process.getuid?.(),
): string {
  const systemd = env.STATE_DIRECTORY?.split(':')[0];
  if (systemd) return systemd;
  if (uid === 0) return '/var/lib/spool-agent';
  const xdg = env.XDG_STATE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'spool-agent');
  return join(env.HOME || homedir(), '.local', 'state', 'spool-agent');
}
