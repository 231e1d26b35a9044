/**
 * What the packaged agent keeps about its updates, under `<state dir>/update/` (docs/agent.md,
 * "Updates"):
 *
 *   versions/<version>/   a release's package, unpacked (bin/spool-agent, lib/node, …)
 *   current               a symlink to the version that runs; absent: the installed package
 *   state.json            the update waiting to prove itself, the last outcome, refused versions
 *   linked                the version that last linked, written by the agent on each welcome
 *
 * `current` is swapped by renaming a new symlink over it, so it names one version or the other,
 * never neither. state.json is written by the running version (its updater before it restarts, and
 * {@link UpdateFiles.markLinked} when Spool welcomes it, one after the other) and by the supervisor
 * only when it rolls a version back, once that version has stopped; so no two processes write it
 * at once.
 */
import { randomBytes } from 'node:crypto';
import {
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { UpdateStatus } from '../gen/spool/v1/stations.js';

export const UPDATE_DIR = 'update';

/** The exit status of an agent that has swapped in a new version and wants it started. */
export const RESTART_FOR_UPDATE_EXIT = 75;

export interface UpdateState {
  /** Swapped in, not yet linked: rolled back unless it links in time. */
  pending?: { version: string; previous: string | null; since: string };
  /** The last outcome, for the next hello. */
  last?: { state: string; version: string; detail: string; at: string };
  /** Versions that failed here: offered again, they are not tried again. */
  refused?: string[];
}

export class UpdateFiles {
  readonly dir: string;
  /** This process's changes to the files, one after the other. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(stateDir: string) {
    this.dir = join(stateDir, UPDATE_DIR);
  }

  /** Runs `change` once this process's earlier changes are done. */
  exclusive<T>(change: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(change, change);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  versionDir(version: string): string {
    return join(this.dir, 'versions', version);
  }

  /** The version `current` names, or null for the installed package. */
  async current(): Promise<string | null> {
    try {
      return basename(await readlink(join(this.dir, 'current')));
    } catch {
      return null;
    }
  }

  /** Points `current` at a version (null: the installed package) in one rename. */
  async setCurrent(version: string | null): Promise<void> {
    const link = join(this.dir, 'current');
    if (version === null) {
      await rm(link, { force: true });
      return;
    }
    const temp = `${link}.${randomBytes(4).toString('hex')}`;
    await symlink(join('versions', version), temp);
    await rename(temp, link);
  }

  async read(): Promise<UpdateState> {
    try {
      return JSON.parse(await readFile(join(this.dir, 'state.json'), 'utf8')) as UpdateState;
    } catch {
      return {};
    }
  }

  async write(state: UpdateState): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await writeAtomically(join(this.dir, 'state.json'), `${JSON.stringify(state)}\n`);
  }

  /** The version that last linked (its welcome arrived). */
  async linked(): Promise<string | undefined> {
    try {
      return (await readFile(join(this.dir, 'linked'), 'utf8')).trim();
    } catch {
      return undefined;
    }
  }

  /**
   * `version` is linked: an update to it is done (the outcome kept, the versions other than it and
   * the one before it removed), and the supervisor watching it is told.
   */
  markLinked(version: string): Promise<void> {
    return this.exclusive(async () => {
      const state = await this.read();
      if (state.pending?.version === version) {
        const { previous } = state.pending;
        await this.write({
          ...(state.refused ? { refused: state.refused } : {}),
          last: { state: 'current', version, detail: '', at: new Date().toISOString() },
        });
        await this.prune([version, previous]);
      }
      await mkdir(this.dir, { recursive: true });
      await writeAtomically(join(this.dir, 'linked'), `${version}\n`);
    });
  }

  /** Removes the versions other than those named (the current one and the one before it). */
  async prune(keep: (string | null)[]): Promise<void> {
    const dir = join(this.dir, 'versions');
    let names: string[] = [];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!keep.includes(name)) await rm(join(dir, name), { recursive: true, force: true });
    }
  }
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const temp = `${path}.${randomBytes(4).toString('hex')}`;
  await writeFile(temp, text, { mode: 0o600 });
  await rename(temp, path);
}

/** The update report of an agent starting at `running`: the last outcome, else `current`. */
export function startReport(state: UpdateState, running: string): UpdateStatus {
  const last = state.last;
  if (last && (last.state !== 'current' || last.version === running)) {
    return { state: last.state, version: last.version, detail: last.detail };
  }
  return { state: 'current', version: running, detail: '' };
}
