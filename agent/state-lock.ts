/**
 * One agent per state directory: two agents sharing a journal could each print the same job.
 * The lock is a file holding the owner's pid and, where /proc tells it, the time that process
 * started; a lock whose process is gone is taken over, and so is one whose pid now belongs to a
 * process that started at another time (after a power cut, pids are handed out again).
 */
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive } from '../lib/processes.js';

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
      const started = await startTime(process.pid);
      await handle.writeFile(`${process.pid}${started === undefined ? '' : ` ${started}`}\n`);
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
    const [pid, recordedStart] = (await readFile(path, 'utf8').catch(() => '')).trim().split(/\s+/);
    const owner = Number.parseInt(pid ?? '', 10);
    if (
      Number.isInteger(owner) &&
      owner > 0 &&
      isProcessAlive(owner) &&
      (recordedStart === undefined || recordedStart === (await startTime(owner))) &&
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

/**
 * When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat), or
 * undefined where there is no /proc.
 */
async function startTime(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // The command name, in parentheses, may hold spaces: count fields after its closing one.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}
