/**
 * Which member of a pool takes a job (docs/jobs.md, "Pools and routing"), decided without the
 * database or the network: creation (handlers/creation.ts) and the router (router.ts) read the
 * members' printers and the counts of their unfinished jobs, then ask here.
 */
import type { Printer, PrintOptions } from '../../gen/spool/v1/stations.js';
import { invalid } from '../../lib/errors.js';
import { takesPoolJobs } from '../../lib/printer-status.js';
import { optionsRefusal, type Refusal } from './options.js';
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
  return optionsRefusal(job.options, printer, job.contentType) === undefined;
}

/**
 * The members that could print a job at all, in the pool's order; refuses a job none of them
 * could ever print, with the refusal of the first member, naming the option or the document's
 * type. A pool with no printer left refuses everything.
 */
export function membersFor(pool: RoutingPool, members: Printer[], job: JobNeeds): Printer[] {
  if (members.length === 0) {
    throw invalid(`pool ${JSON.stringify(pool.name)} has no printers`, 'pool_id');
  }
  let first: Refusal | undefined;
  const able: Printer[] = [];
  for (const printer of members) {
    const refused = optionsRefusal(job.options, printer, job.contentType);
    if (refused) first ??= refused;
    else able.push(printer);
  }
  if (able.length === 0 && first) {
    throw invalid(
      `no printer of pool ${JSON.stringify(pool.name)} can print it: ${first.message}`,
      first.param,
    );
  }
  return able;
}

/**
 * The member that takes a job now, or undefined when none can. `members` are those that could
 * print the job (membersFor), in the pool's order; `queued` counts each printer's unfinished
 * jobs; `except` is the printer a job fails over from.
 */
export function chooseMember(
  pool: Pick<RoutingPool, 'strategy'>,
  members: Printer[],
  queued: ReadonlyMap<string, number>,
  except?: string,
): Printer | undefined {
  const candidates = members.filter((p) => p.id !== except && canTakeJobs(p));
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
