/**
 * The packaged agent as installed runs the version its updates chose (docs/agent.md, "Updates"):
 * itself, in this process, while `current` names no other version; otherwise that version's
 * package as a child, with the same arguments. A version just swapped in must link within the
 * link timeout (60 s): when it exits first or the time passes, it is stopped, `current` goes back to
 * the version before it, the outcome is kept as `rolled_back` for the next hello, and that version
 * is not tried again.
 *
 * The installed package stays the supervisor whatever runs, so a release that cannot start at all
 * is still rolled back.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { RESTART_FOR_UPDATE_EXIT, UpdateFiles } from './update-state.js';

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

export const LINK_TIMEOUT_MS = 60_000;
/** How long a child asked to stop may take before it is killed (the agent's own grace is 10 s). */
const CHILD_STOP_MS = 30_000;
const POLL_MS = 1_000;

export interface SupervisedChild {
  /** Resolves with the exit status (null when a signal ended it). */
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

export interface SupervisorOptions {
  stateDir: string;
  /** The installed package's version: this process's. */
  version: string;
  logger: Logger;
  clock: Clock;
  sleep(ms: number): Promise<void>;
  linkTimeoutMs?: number;
  /**
   * Runs the installed version in this process until it stops: `update` when it stopped to
   * restart into a version it swapped in, `stopped` when it was asked to stop.
   */
  runHere(): Promise<'stopped' | 'update'>;
  /** Starts a version's `bin/spool-agent` with this process's arguments. */
  spawn(versionDir: string): SupervisedChild;
  /** Settles when this process is asked to stop (SIGTERM): the running version is stopped. */
  stopRequested: Promise<void>;
}

/** Runs versions until asked to stop; resolves with the exit status for the process. */
export async function supervise(options: SupervisorOptions): Promise<number> {
  const { logger, clock } = options;
  const files = new UpdateFiles(options.stateDir);
  let stopping = false;
  void options.stopRequested.then(() => {
    stopping = true;
  });
  for (;;) {
    const target = await files.current();
    if (target === null || target === options.version) {
      if ((await options.runHere()) === 'stopped' || stopping) return 0;
      continue;
    }
    const state = await files.read();
    const proving = state.pending?.version === target;
    const rollBack = async (detail: string) => {
      const previous = proving ? (state.pending?.previous ?? null) : null;
      await files.setCurrent(previous);
      await files.write({
        refused: [...new Set([...(state.refused ?? []), target])].slice(-20),
        last: { state: 'rolled_back', version: target, detail, at: clock.now().toISOString() },
      });
      logger.error(
        { version: target, back_to: previous ?? options.version, detail },
        'the new version failed; rolled back',
      );
    };
    if (!(await isFile(join(files.versionDir(target), 'bin', 'spool-agent')))) {
      // Removed by hand, or never unpacked whole: run what is there instead.
      await rollBack(`version ${target} is not in ${files.versionDir(target)}`);
      continue;
    }
    const child = options.spawn(files.versionDir(target));
    let code: number | null | undefined;
    void child.exited.then((c) => {
      code = c;
    });
    const stopChild = async () => {
      child.kill('SIGTERM');
      const ended = await Promise.race([
        child.exited.then(() => true),
        options.sleep(CHILD_STOP_MS).then(() => false),
      ]);
      if (!ended) {
        child.kill('SIGKILL');
        await child.exited;
      }
    };
    void options.stopRequested.then(() => {
      if (code === undefined) void stopChild();
    });

    if (proving) {
      const timeout = options.linkTimeoutMs ?? LINK_TIMEOUT_MS;
      const deadline = clock.now().getTime() + timeout;
      let failure: string | undefined;
      for (;;) {
        if ((await files.linked()) === target) break;
        if (stopping) break;
        if (code !== undefined) {
          failure = `version ${target} exited (${code ?? 'killed by a signal'}) before it linked`;
          break;
        }
        if (clock.now().getTime() >= deadline) {
          failure = `version ${target} did not link within ${Math.round(timeout / 1000)} s`;
          await stopChild();
          break;
        }
        await Promise.race([options.sleep(POLL_MS), child.exited, options.stopRequested]);
      }
      if (failure !== undefined) {
        await rollBack(failure);
        if (stopping) return 0;
        continue;
      }
      // The version itself recorded the update done when it linked (UpdateFiles.markLinked).
      if (!stopping) logger.info({ version: target }, 'the new version linked; the update is done');
    }
    const status = await child.exited;
    if (stopping) return 0;
    if (status === RESTART_FOR_UPDATE_EXIT) continue;
    logger.error({ version: target, status }, 'the agent exited');
    return status ?? 1;
  }
}
