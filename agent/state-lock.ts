/**
 * One agent per state directory: two agents sharing a journal could each print the same job.
 * The lock is a file holding the owner's pid; a lock whose process is gone is taken over.
 */
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCK_FILE = 'agent.lock';

// Locks this process holds; a lock file with our own pid that is not here is left from before.
const held = new Set<string>();

export interface StateLock {
  release(): Promise<void>;
}

export async function lockStateDir(dir: string): Promise<StateLock> {
  const path = join(dir, LOCK_FILE);
  for (let tries = 0; tries < 3; tries += 1) {
    try {
      const handle = await open(path, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      held.add(path);
      return {
        async release() {
          if (!held.delete(path)) return;
          await rm(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    if (
      Number.isInteger(owner) &&
      owner > 0 &&
      isRunning(owner) &&
      (owner !== process.pid || held.has(path))
    ) {
      throw new Error(
        `another spool agent (pid ${owner}) is using the state directory ${dir}; ` +
          'give each agent its own state directory',
      );
    }
    await rm(path, { force: true });
  }
  throw new Error(`cannot lock the state directory ${dir}`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
