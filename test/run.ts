/**
 * `npm test`: starts one private PostgreSQL for the whole run (unless `TEST_DATABASE_URL` names a
 * server already), runs ava with it in `TEST_DATABASE_URL` and any arguments given, and stops the
 * cluster however the run ends. Each test file then creates its own database on it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type PostgresServer, startPostgres } from './helpers/postgres.js';

const avaBin = fileURLToPath(new URL('../node_modules/.bin/ava', import.meta.url));

async function main(args: string[]): Promise<number> {
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
  try {
    const env = { ...process.env };
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
  }
}

function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`test: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
