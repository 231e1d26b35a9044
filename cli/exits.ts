/**
 * The exit codes of the `spool` commands that talk to Spool, for scripts: 0 done, 1 an error the
 * server answered (or a job that failed), 2 wrong usage.
 */
import type { Command, CommanderError } from 'commander';

/** Exit codes of these commands. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/**
 * Wrong usage of `cmd` or a command under it (an unknown option or command, a missing or bad
 * value) exits 2, so that a script tells it from an error the server answered (1); help asked for
 * exits 0. Commands added under it later inherit this.
 */
export function usageExits<C extends Command>(cmd: C): C {
  cmd.exitOverride((err: CommanderError) => {
    process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage);
  });
  for (const sub of cmd.commands) usageExits(sub);
  return cmd;
}

/** Wrong usage found after parsing (a missing key, both FILE and --text): exit 2. */
export class UsageError extends Error {}
