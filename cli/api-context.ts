/**
 * What the integrator's commands (`spool jobs …`, `printers`, `locations`, `key`) share: the
 * client made from `SPOOL_API_KEY` and `SPOOL_URL` (or `--url`), and the running of a command's
 * body that turns what it throws into the exit codes of `exits.ts`.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { Spool, SpoolApiError, SpoolConnectionError } from '../client/index.js';
import type { Env } from '../lib/config.js';
import { EXIT, UsageError } from './exits.js';
import type { Format } from './table.js';

/** The Spool these commands talk to when `SPOOL_URL` is not set (`spool dev`'s port). */
export const DEFAULT_SPOOL_URL = 'http://localhost:8080';

/** A whole number of at least 1, for a count or a number of seconds. */
export function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new InvalidArgumentError('give a whole number of at least 1');
  }
  return Number(value);
}

/** Prints `json` (the API's answer) or, with `--format table`, the table `table` renders. */
export function print(format: Format, json: unknown, table: () => string): void {
  process.stdout.write(format === 'table' ? table() : `${JSON.stringify(json, null, 2)}\n`);
}

/** What a command of the integrator's is given. */
export interface ApiContext {
  /**
   * The client of `SPOOL_API_KEY` against `--url` or `SPOOL_URL`, for the organization
   * `SPOOL_ORG` when set; wrong usage without a key.
   */
  client(): Spool;
  /** Runs a command's body, turning what it throws into the exit codes of `exits.ts`. */
  run<A extends unknown[]>(
    body: (...args: A) => Promise<number | undefined>,
  ): (...args: A) => Promise<void>;
  /** Gives every command under `top` the `--url` flag, which beats SPOOL_URL. */
  addUrlFlag(top: Command): void;
}

/** The context of the integrator's commands; `env` is read when a command runs. */
export function createApiContext(env: Env): ApiContext {
  /** The running command's `--url`, which beats SPOOL_URL. */
  let urlFlag: string | undefined;

  function client(): Spool {
    const apiKey = env.SPOOL_API_KEY;
    if (!apiKey) {
      throw new UsageError('set SPOOL_API_KEY to an API key (svc_live_… or svc_test_…)');
    }
    const baseUrl = urlFlag ?? (env.SPOOL_URL || DEFAULT_SPOOL_URL);
    if (!/^https?:$/.test(URL.parse(baseUrl)?.protocol ?? '')) {
      const source = urlFlag === undefined ? 'SPOOL_URL' : '--url';
      throw new UsageError(`${source} must be an http or https URL, such as ${DEFAULT_SPOOL_URL}`);
    }
    // SPOOL_ORG: a platform's key acting on one of its child organizations.
    return new Spool({ apiKey, baseUrl, ...(env.SPOOL_ORG ? { org: env.SPOOL_ORG } : {}) });
  }

  function run<A extends unknown[]>(body: (...args: A) => Promise<number | undefined>) {
    return async (...args: A) => {
      const command = args[args.length - 1] as Command;
      try {
        process.exitCode = (await body(...args)) ?? EXIT.ok;
      } catch (err) {
        if (err instanceof UsageError) command.error(`error: ${err.message}`, { exitCode: 2 });
        if (err instanceof SpoolApiError) {
          // The envelope as Spool sent it, so scripts can read code and param.
          process.stderr.write(`${JSON.stringify(err.envelope)}\n`);
        } else if (err instanceof SpoolConnectionError) {
          process.stderr.write(
            `spool: ${err.message}: is Spool running there, and is ${urlFlag === undefined ? 'SPOOL_URL' : '--url'} right?\n`,
          );
        } else {
          throw err;
        }
        process.exitCode = EXIT.failed;
      }
    };
  }

  const leaves = (cmd: Command): Command[] =>
    cmd.commands.length === 0 ? [cmd] : cmd.commands.flatMap(leaves);
  function addUrlFlag(top: Command): void {
    for (const leaf of leaves(top)) {
      leaf.option(
        '--url <url>',
        `where Spool answers (default SPOOL_URL, else ${DEFAULT_SPOOL_URL})`,
      );
    }
    top.hook('preAction', (_top, action) => {
      urlFlag = action.opts<{ url?: string }>().url;
    });
  }

  return { client, run, addUrlFlag };
}
