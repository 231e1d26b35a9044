/**
 * Deleting a printer, from the operator API or the console: its unfinished jobs fail first (they
 * could never print, and each gets a `job.failed` with the reason), then the printer goes. Should
 * the second step fail, deleting again finishes it. A printer its agent still reports comes back
 * with a new id at the agent's next report.
 */
import type { Backends } from './clients.js';

export async function deletePrinter(
  backends: Pick<Backends, 'jobs' | 'stations'>,
  orgId: string,
  printerId: string,
  /** Who deletes it, for the jobs' events: `operator` or `person:<id>`. */
  actor: string,
): Promise<void> {
  const { printer } = await backends.stations.getPrinter({ orgId, printerId });
  if (!printer) throw new Error('missing printer in response');
  await backends.jobs.failPrinterJobs({
    orgId,
    stationId: printer.stationId,
    printerIds: [printer.id],
    detail: `printer ${JSON.stringify(printer.name)} was deleted`,
    actor,
  });
  await backends.stations.deletePrinter({ orgId, printerId: printer.id });
}
