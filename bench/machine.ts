/** The machine a run was measured on, written beside every result. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface Machine {
  cpuModel: string;
  cpus: number;
  memoryGiB: number;
  os: string;
  kernel: string;
  node: string;
  postgres: string;
  natsServer: string;
  redis: string;
  /** The commit the harness ran from (the working tree may hold changes on top). */
  commit: string;
  date: string;
}

function osName(): string {
  try {
    const text = readFileSync('/etc/os-release', 'utf8');
    return /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(text)?.[1] ?? os.type();
  } catch {
    return os.type();
  }
}

/** The commit checked out now; read when a run starts, so later commits do not change it. */
export function currentCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

export function describeMachine(
  versions: { postgres: string; natsServer: string; redis: string },
  commit: string,
): Machine {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpus: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: osName(),
    kernel: os.release(),
    node: process.version,
    ...versions,
    commit,
    date: new Date().toISOString(),
  };
}
