/**
 * Which member of a pool takes a job (docs/jobs.md, "Pools and routing"), decided without the
 * database or the network: creation (handlers/creation.ts) and the router (router.ts) read the
 * members' printers and the counts of their unfinished jobs, then ask here.
 */
import type { Printer, PrintOptions } from '../../gen/spool/v1/stations.js';
import { invalid, SpoolError } from '../../lib/errors.js';
import { takesPoolJobs } from '../../lib/printer-status.js';
import { checkOptionsFor } from './options.js';
import { WAITING } from './printer-waits.js';

/** A pool as routing reads it: its members' printer ids in their order. */
export interface RoutingPool {
  id: string;
  orgId: string;
  name: string;
  strategy: string;
  /** Seconds; 0 never fails over. */
  failoverAfter: number;
  printerIds: string[];
}

/**
 * Whether a printer can take a pool job now: its station is online and the printer is ready
 * (or printing, which is busy, not stopped).
 */
export function canTakeJobs(printer: Printer): boolean {
  return printer.stationOnline && takesPoolJobs(printer.status);
}

/** What a job asks of the printer that prints it: its options, and its document's type. */
export interface JobNeeds {
  options: PrintOptions;
  contentType: string;
}

/** Whether `printer` can print `job` at all (its capabilities and formats), whatever its state. */
export function honours(printer: Printer, job: JobNeeds): boolean {
  return refusalBy(printer, job) === undefined;
}

function refusalBy(printer: Printer, job: JobNeeds): SpoolError | undefined {
  try {
    checkOptionsFor(job.options, printer, job.contentType);
    return undefined;
  } catch (err) {
    if (err instanceof SpoolError) return err;
    throw err;
  }
}

/**
 * Refuses a job none of `members` could ever print: the refusal of the first member, naming the
 * option or the document's type, when every member refuses it; a pool with no printer left
 * refuses everything.
 */
export function checkPoolCanPrint(pool: RoutingPool, members: Printer[], job: JobNeeds): void {
  if (members.length === 0) {
    throw invalid(`pool ${JSON.stringify(pool.name)} has no printers`, 'pool_id');
  }
  const refusals = members.map((p) => refusalBy(p, job));
  if (refusals.every((r) => r !== undefined)) {
    const first = refusals[0] as SpoolError;
    throw invalid(
      `no printer of pool ${JSON.stringify(pool.name)} can print it: ${first.message}`,
      first.param,
    );
  }
}

/**
 * The member that takes a job, or undefined when none can now. `members` are in the pool's order
 * (those the stations service no longer knows left out); `queued` counts each printer's unfinished
 * jobs; `except` is the printer a job fails over from.
 */
export function chooseMember(
  pool: Pick<RoutingPool, 'strategy'>,
  members: Printer[],
  job: JobNeeds,
  queued: ReadonlyMap<string, number>,
  except?: string,
): Printer | undefined {
  const candidates = members.filter((p) => p.id !== except && canTakeJobs(p) && honours(p, job));
  if (pool.strategy === 'ordered') return candidates[0];
  let best: Printer | undefined;
  for (const p of candidates) {
    // The first in the pool's order wins a tie.
    if (!best || (queued.get(p.id) ?? 0) < (queued.get(best.id) ?? 0)) best = p;
  }
  return best;
}

/** The detail of a pool job whose pool was deleted as it was made: someone has to place it. */
export const POOL_DELETED = `${WAITING}its pool was deleted; move it to a printer or cancel it`;

/** The detail of a pool job no member can take now. */
export function waitingForPool(pool: Pick<RoutingPool, 'name'>): string {
  return `${WAITING}no printer of pool ${JSON.stringify(pool.name)} can print it now`;
}
