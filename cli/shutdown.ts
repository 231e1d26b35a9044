/**
 * How a long-running `spool` command (`serve`, `dev`, `agent run`) stops: once, on the first signal
 * that asks it to, then the process exits 0, or 1 when stopping failed.
 */
import type { Logger } from '../lib/logger.js';

/** Options of {@link onShutdown}. */
export interface ShutdownOptions {
  /**
   * Stop on SIGHUP too: the terminal the process ran in closed. For the agent, which would
   * otherwise die mid-job; a service is run by a supervisor, not from a terminal.
   */
  hangup?: boolean;
}

/** Runs `stop` once on SIGTERM or SIGINT (and SIGHUP if asked), then exits. */
export function onShutdown(
  logger: Logger,
  stop: () => Promise<void>,
  options: ShutdownOptions = {},
): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  if (options.hangup) process.on('SIGHUP', handler);
}
