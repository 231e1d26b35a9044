/**
 * The printer a job is for, as the stations service has it: a new job needs its printer, and a
 * retry or a reprint needs it still there.
 */
import type { ServerUnaryCall } from '@grpc/grpc-js';
import type { Job } from '../../../gen/spool/v1/jobs.js';
import type { Printer } from '../../../gen/spool/v1/stations.js';
import { conflict, type SpoolError } from '../../../lib/errors.js';
import type { JobsServerDeps } from './deps.js';

type Deps = Pick<JobsServerDeps, 'printers' | 'stations'>;

/** The organization's printer, from the cache or the stations service; undefined if none. */
export async function printerOf(
  deps: Deps,
  orgId: string,
  printerId: string,
  call: ServerUnaryCall<unknown, unknown>,
): Promise<Printer | undefined> {
  try {
    return await deps.printers.get(
      orgId,
      printerId,
      async () => (await deps.stations.getPrinter({ orgId, printerId }, { parent: call })).printer,
    );
  } catch (err) {
    if ((err as SpoolError).code === 'not_found') return undefined;
    throw err;
  }
}

/** Retry and reprint send a job to its printer again, which must still be there. */
export async function requirePrinterOf(
  deps: Deps,
  job: Job,
  call: ServerUnaryCall<unknown, unknown>,
): Promise<void> {
  if (!(await printerOf(deps, job.orgId, job.printerId, call))) {
    throw conflict(
      "this job's printer was deleted (or its station): send a new job to another printer",
    );
  }
}
