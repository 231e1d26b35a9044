/**
 * A private CUPS scheduler for one test file: `cupsd -f` with its own configuration, spool, state
 * and logs in a temporary directory, listening on 127.0.0.1 on a free port (and a domain socket in
 * that directory). The system's CUPS and /etc/cups are never touched. Clients reach it with
 * `-h 127.0.0.1:PORT` (what the agent's `cups.server` option passes).
 *
 * CUPS refuses `file:` device URIs unless `FileDevice Yes` is set in cups-files.conf; the private
 * configuration sets it, so a test queue can print to a file. Filters run as the `lp` user, so the
 * temporary directory is made world-traversable (0755). A raw queue (no driver) with a `file:`
 * device writes nothing, so queues use the "Generic Text-Only" driver from cups-filters, which
 * passes text through.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:fs';
import { access, chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const exec = promisify(execFile);

export const CUPS_INSTALL_HINT =
  'apt-get install -y cups cups-client cups-bsd (.ci/run installs them when missing)';

const CLIENT_TOOLS = [
  'lp',
  'lpstat',
  'lpadmin',
  'lpoptions',
  'cupsenable',
  'cupsdisable',
  'cupsaccept',
  'cupsreject',
  'cancel',
];
const TEXT_ONLY_MODEL = 'drv:///cupsfilters.drv/textonly.ppd';

async function which(command: string, extra: string[] = []): Promise<string | undefined> {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin', '/sbin', ...extra];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, command);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/** The CUPS programs that are not installed; empty when the tests can run. */
export async function missingCupsPrograms(): Promise<string[]> {
  const missing: string[] = [];
  for (const command of ['cupsd', ...CLIENT_TOOLS]) {
    if ((await which(command)) === undefined) missing.push(command);
  }
  return missing;
}

export interface TestQueue {
  name: string;
  /** The file the queue's `file:` device writes each job to (each job replaces the last). */
  output: string;
}

export interface TestCups {
  /** `127.0.0.1:PORT`, for `-h` and the agent's `cups.server`. */
  readonly server: string;
  readonly dir: string;
  /** Runs a CUPS client command against this scheduler; resolves with its standard output. */
  run(command: string, args: string[]): Promise<string>;
  /** Creates and enables a queue `spool-test-<random>` printing text to a file. */
  addQueue(): Promise<TestQueue>;
  /** The jobs (`QUEUE-N`) lpstat lists with `-W which`. */
  jobs(queue: string, which: 'completed' | 'not-completed'): Promise<string[]>;
  /** The scheduler's error log, for a failing test's message. */
  log(): Promise<string>;
  /** Deletes the queues, stops the scheduler and removes the directory. */
  stop(): Promise<void>;
}

export async function startTestCups(): Promise<TestCups> {
  const cupsd = await which('cupsd');
  if (!cupsd) throw new Error(`cupsd is not installed: ${CUPS_INSTALL_HINT}`);
  const dir = await mkdtemp(join(tmpdir(), 'spool-test-cups-'));
  await chmod(dir, 0o755);
  for (const sub of ['serverroot', 'spool', 'cache', 'state', 'tmp', 'log', 'out']) {
    await mkdir(join(dir, sub), { mode: 0o755 });
  }
  const port = await freePort();
  const server = `127.0.0.1:${port}`;
  await writeFile(
    join(dir, 'cups-files.conf'),
    [
      `ServerRoot ${dir}/serverroot`,
      `RequestRoot ${dir}/spool`,
      `CacheDir ${dir}/cache`,
      `StateDir ${dir}/state`,
      `TempDir ${dir}/tmp`,
      `ErrorLog ${dir}/log/error_log`,
      `AccessLog ${dir}/log/access_log`,
      `PageLog ${dir}/log/page_log`,
      'FileDevice Yes',
      'SystemGroup root',
      '',
    ].join('\n'),
  );
  await writeFile(
    join(dir, 'cupsd.conf'),
    [
      'LogLevel info',
      `Listen ${server}`,
      `Listen ${dir}/cups.sock`,
      'Browsing No',
      'WebInterface No',
      'DefaultAuthType None',
      'PreserveJobHistory Yes',
      // Only this test talks to it, over loopback: no authentication anywhere.
      '<Location />',
      '  Order allow,deny',
      '  Allow all',
      '</Location>',
      '<Policy default>',
      '  <Limit All>',
      '    Order deny,allow',
      '  </Limit>',
      '</Policy>',
      '',
    ].join('\n'),
  );

  const child: ChildProcess = spawn(
    cupsd,
    ['-f', '-c', join(dir, 'cupsd.conf'), '-s', join(dir, 'cups-files.conf')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = once(child, 'exit');

  const run = async (command: string, args: string[]): Promise<string> => {
    try {
      const { stdout } = await exec(command, ['-h', server, ...args], {
        env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
        timeout: 30_000,
      });
      return stdout;
    } catch (error) {
      const e = error as Error & { stderr?: string };
      throw new Error(`${command} ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
    }
  };

  const queues: string[] = [];
  const stop = async () => {
    for (const q of queues) await run('lpadmin', ['-x', q]).catch(() => {});
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const until = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`cupsd exited at start: ${output}`);
      const state = await run('lpstat', ['-r']).catch((e: Error) => e.message);
      if (state.includes('scheduler is running')) break;
      if (Date.now() > until) throw new Error(`cupsd did not start in 15 s: ${state} ${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    server,
    dir,
    run,
    async addQueue() {
      const name = `spool-test-${Math.random().toString(36).slice(2, 10)}`;
      const output = join(dir, 'out', `${name}.out`);
      await run('lpadmin', [
        '-p',
        name,
        '-E',
        '-v',
        `file://${output}`,
        '-m',
        TEXT_ONLY_MODEL,
      ]).catch((error: Error) => {
        throw new Error(`${error.message} (the ${TEXT_ONLY_MODEL} driver comes with cups-filters)`);
      });
      queues.push(name);
      return { name, output };
    },
    async jobs(queue, which) {
      const out = await run('lpstat', ['-W', which, '-o', queue]);
      return out
        .split('\n')
        .map((l) => l.split(/\s+/)[0] ?? '')
        .filter((id) => id.startsWith(`${queue}-`));
    },
    log: () => readFile(join(dir, 'log', 'error_log'), 'utf8').catch(() => ''),
    stop,
  };
}
