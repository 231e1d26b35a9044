/**
 * Runs the `spool` command as a child process for the harness, like the tests' `spawnSpool`, but
 * with Node options of its own (`--cpu-prof`, which NODE_OPTIONS does not take), and keeping only
 * the tail of its output.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/spool.js', import.meta.url));
const KEEP = 64 * 1024;

export interface SpoolProcess {
  readonly pid: number;
  /** Resolves with the exit code (null when a signal ended it) once the process has exited. */
  readonly exited: Promise<number | null>;
  /** Everything it wrote lately (its last 64 KiB). */
  output(): string;
  /** Resolves with the first match of `pattern` in the output; rejects on exit or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** SIGTERM, and SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export function spawnSpool(
  args: string[],
  env: Record<string, string>,
  options: { cpuProfDir?: string | undefined } = {},
): SpoolProcess {
  const nodeArgs = options.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`] : [];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-KEEP);
    for (const l of listeners) l();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return {
    pid: child.pid ?? -1,
    exited,
    output: () => output,
    waitFor(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        const check = () => {
          const m = pattern.exec(output);
          if (m) {
            done();
            resolve(m);
          }
        };
        const onExit = () => {
          done();
          reject(new Error(`spool ${args.join(' ')} exited; its output:\n${output}`));
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`spool ${args.join(' ')}: no ${pattern} in ${timeoutMs} ms:\n${output}`),
          );
        }, timeoutMs);
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    async stop(graceMs = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        // A process that does not stop is a finding: say so, with what it last wrote.
        process.stderr.write(
          `spool ${args.join(' ')} did not stop within ${graceMs} ms of SIGTERM; killed. Its last output:\n${output.slice(-4096)}\n`,
        );
        child.kill('SIGKILL');
      }, graceMs);
      await Promise.race([exited, once(child, 'exit')]);
      clearTimeout(timer);
    },
  };
}
