import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * What must be stopped, pushed as it is started and run last first, so that nothing is stopped
 * before what depends on it. A failure to stop one thing does not keep the others running.
 */
export class Stops {
  readonly #stops: Array<() => Promise<unknown>> = [];

  push(stop: () => Promise<unknown>): void {
    this.#stops.push(stop);
  }

  /** Runs every stop pushed so far, the last pushed first; each runs once. */
  async run(): Promise<void> {
    for (let stop = this.#stops.pop(); stop; stop = this.#stops.pop()) {
      await stop().catch(() => undefined);
    }
  }
}

let signalled = false;

/** Says the harness was told to stop (SIGINT, SIGTERM): the processes it started end now. */
export function markSignalled(): void {
  signalled = true;
}

/** Whether a process ending now was ended by the harness being stopped, not by a failure. */
export function harnessSignalled(): boolean {
  return signalled;
}

/** The directories the harness made and has not removed yet. */
const dirs = new Set<string>();

/**
 * Makes a temporary directory for the harness (`prefix` then random characters, in the system's
 * temporary directory), removed by the `remove` it answers with, or by {@link removeHarnessDirs}
 * when the harness is stopped, whatever was starting in it then.
 */
export async function harnessDir(
  prefix: string,
): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  dirs.add(path);
  return {
    path,
    async remove() {
      dirs.delete(path);
      await rm(path, { recursive: true, force: true });
    },
  };
}

/** Removes every directory {@link harnessDir} made that is still there. */
export async function removeHarnessDirs(): Promise<void> {
  const left = [...dirs];
  dirs.clear();
  await Promise.all(left.map((path) => rm(path, { recursive: true, force: true })));
}
