/**
 * Printer statuses, as the station link carries them from the agent (docs/station-link.md,
 * "Printer statuses"), and which of them keep a printer's jobs waiting. The agent, the stations
 * service's link and the jobs service's waiting details all decide by these.
 */

export const LINK_PRINTER_STATUSES = [
  'ready',
  'printing',
  'out_of_paper',
  'paper_jam',
  'door_open',
  'offline',
  'error',
  'unknown',
] as const;

export type PrinterStatusName = (typeof LINK_PRINTER_STATUSES)[number];

/**
 * Whether a printer in `status` is known not to print now, so that a job sent to it would fail at
 * once (a raw printer refuses the connection, a file printer's folder cannot be written): the
 * link offers it no job, the agent holds back a job it refused, and the job's detail says why it
 * waits. Out of paper, a jam or an open door do not count: the printer's own queue keeps the job
 * until someone sees to it, and a warning about one tray need not stop the others.
 */
/**
 * Whether a printer in `status` takes a pool job now: ready, or busy printing (docs/jobs.md,
 * "Pools and routing"). The router chooses only such members, and the agent claims a pool job only
 * while its printer is one.
 */
export function takesPoolJobs(status: string): boolean {
  return status === 'ready' || status === 'printing';
}

export function cannotPrint(status: string): boolean {
  return status === 'offline' || status === 'error';
}

/**
 * What keeps a printer in `status` from printing now, as the end of a sentence about it ("is
 * offline", "is out of paper"), or undefined when nothing does. Besides {@link cannotPrint}'s,
 * these are the statuses that need someone's hands: the printer's jobs still go to it and wait in
 * its own queue (CUPS's, or the printer's memory) until someone sees to it.
 */
export function whatStopsPrinting(status: string): string | undefined {
  return STOPPED[status];
}

const STOPPED: Record<string, string> = {
  offline: 'is offline',
  error: 'is in error',
  out_of_paper: 'is out of paper',
  paper_jam: 'has a paper jam',
  door_open: 'has a door open',
};
