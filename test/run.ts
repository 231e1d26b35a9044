/**
 * `npm test`: starts one private PostgreSQL for the whole run (unless `TEST_DATABASE_URL` names a
 * server already), runs ava with it in `TEST_DATABASE_URL` and any arguments given, and stops the
 * cluster however the run ends. Each test file then creates its own database on it.
 *
 * A whole run (no arguments) then runs the IPP tests (test/ipp/) in a private network namespace
 * with their own PostgreSQL (test/helpers/netns.ts); `--ipp [ARGS]` runs only those.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { cacheNodePackage } from '../scripts/build-agent.js';
import {
  inPrivateNetwork,
  missingNetnsPrograms,
  type PrivateNetwork,
  runInPrivateNetwork,
  startPrivateNetwork,
} from './helpers/netns.js';
import { type PostgresServer, startPostgres } from './helpers/postgres.js';

const avaBin = fileURLToPath(new URL('../node_modules/.bin/ava', import.meta.url));
const thisScript = fileURLToPath(import.meta.url);

/** `npm test [ARGS]`, or with `--ipp` first, the IPP phase alone. */
async function run(args: string[]): Promise<number> {
  if (args[0] !== '--ipp') {
    const code = await main(args, {});
    return code !== 0 || args.length > 0 ? code : ippPhase([]);
  }
  return inPrivateNetwork() ? main(args.slice(1), { ipp: true }) : ippPhase(args.slice(1));
}

/** Runs the IPP tests in a namespace of their own; a machine without its programs fails. */
async function ippPhase(args: string[]): Promise<number> {
  const missing = await missingNetnsPrograms();
  if (missing.length > 0) {
    process.stderr.write(
      `test: the IPP tests need Debian's ${missing.join(', ')} (apt-get install ${missing.join(' ')})\n`,
    );
    return 1;
  }
  // The namespace cannot reach the npm registry, where the packaged agent's Node comes from.
  await cacheNodePackage(process.arch === 'arm64' ? 'arm64' : 'x64');
  process.stderr.write('test: the IPP tests, in a private network namespace\n');
  return runInPrivateNetwork(thisScript, args);
}

async function main(args: string[], phase: { ipp?: boolean }): Promise<number> {
  let interrupted: NodeJS.Signals | undefined;
  let ava: ChildProcess | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupted ??= signal;
    // ava gets the signal too when it came from the terminal; sending it again is harmless.
    ava?.kill(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let postgres: PostgresServer | undefined;
  let network: PrivateNetwork | undefined;
  try {
    const env = { ...process.env };
    if (phase.ipp) {
      network = await startPrivateNetwork();
      Object.assign(env, network.env, { SPOOL_TEST_PHASE: 'ipp' });
      // The machine's database is not reachable from the namespace.
      delete env.TEST_DATABASE_URL;
    }
    if (!env.TEST_DATABASE_URL) {
      const started = Date.now();
      postgres = await startPostgres();
      env.TEST_DATABASE_URL = postgres.url;
      process.stderr.write(`test: PostgreSQL at ${postgres.url} (${Date.now() - started} ms)\n`);
    }
    if (interrupted) return signalExitCode(interrupted);

    ava = spawn(process.execPath, [avaBin, ...args], { stdio: 'inherit', env });
    const [code, signal] = (await once(ava, 'exit')) as [number | null, NodeJS.Signals | null];
    if (code !== null) return code;
    return signalExitCode(signal ?? interrupted ?? 'SIGTERM');
  } finally {
    await postgres?.stop();
    await network?.stop();
  }
}

function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`test: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
