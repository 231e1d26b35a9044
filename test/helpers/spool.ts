/**
 * Runs the real `spool` command as a child process, the way an operator does, with the test's
 * PATH and HOME and the environment given.
 */
import { join } from 'node:path';
import { type Process, runProcess, spawnProcess } from './processes.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'spool.js');

export type SpoolProcess = Process;

function withBasics(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env };
}

export function spawnSpool(args: string[], env: Record<string, string>): SpoolProcess {
  return spawnProcess(process.execPath, [BIN, ...args], withBasics(env));
}

/** Runs a `spool` command to completion. */
export function runSpool(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runProcess(process.execPath, [BIN, ...args], withBasics(env));
}
