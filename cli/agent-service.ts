/** `spool agent install-service`: the systemd unit that runs the agent, written or printed. */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { DEFAULT_CONFIG_PATH, loadAgentConfig } from '../agent/config.js';
import { DEFAULT_UNIT_PATH, systemdUnit } from '../agent/service.js';
import type { Env } from '../lib/config.js';
import { type AgentCommonFlags, readAgentEnv } from './agent-settings.js';

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
  const e = readAgentEnv(env);
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
