/**
 * What every printing backend (file, raw socket, CUPS) offers the agent.
 */
import type { PrinterCapabilities, PrintOptions } from '../../gen/spool/v1/stations.js';
import type { PrinterStatusName } from '../../lib/printer-status.js';

export type { PrinterStatusName } from '../../lib/printer-status.js';

export interface PrinterStatus {
  status: PrinterStatusName;
  /** Human-readable; for CUPS, the printer's state reasons and message. */
  detail: string;
  capabilities: PrinterCapabilities;
  /**
   * The backend's own words for the printer's state, as it read them (IPP's printer-state,
   * -reasons and -message; CUPS's lpstat lines), for a diagnosis; never reported on the link.
   */
  raw?: string;
}

/** A job as a backend sees it: the whole, verified document. */
export interface PrintJob {
  id: string;
  attempt: number;
  title: string;
  contentType: string;
  document: Buffer;
  options: PrintOptions;
  /**
   * Called once a printer's own spooler (CUPS) has the job, with its reference for it (the CUPS
   * job number), before the job has printed: the agent journals it, so that after a restart it can
   * find out what became of the job, or take it back.
   */
  submitted?(ref: string): Promise<unknown>;
}

/**
 * What a printed job's `printed` rests on: `handed_off` when a spooler or a socket took the whole
 * job (file, raw, CUPS), `device_completed` when the printer itself said the job completed (IPP);
 * `pages` are the impressions the printer counted, where it reports them.
 */
export interface Confirmation {
  level: 'handed_off' | 'device_completed';
  pages?: number;
}

/** The confirmation of a backend whose printer says no more than that it took the job. */
export const HANDED_OFF: Confirmation = { level: 'handed_off' };

/** A job a backend was given, as the journal knows it: `ref` is what `submitted` said. */
export type GivenJob = Pick<PrintJob, 'id' | 'attempt'> & { ref?: string };

export interface Backend {
  /**
   * Prints the job and resolves, with how far the printer confirmed it, once the printer (or
   * CUPS) says it is done. Rejects with an Error whose message is the failure detail reported to
   * the server. `signal` aborts the wait when the agent stops; the job's outcome is then unknown.
   */
  print(job: PrintJob, signal?: AbortSignal): Promise<Confirmation>;
  status(): Promise<PrinterStatus>;
  /**
   * Whether a job the agent was printing when it stopped came out, for a backend that can tell
   * (a file is written atomically, so it is there or it is not; CUPS says how its job ended, and
   * one still waiting in its queue is cancelled, so that it prints only when offered again).
   * Without it, or when it throws, such a job is reported failed as interrupted rather than risk
   * printing it twice.
   */
  outcome?(job: GivenJob): Promise<Confirmation | 'not_printed'>;
  /**
   * Takes back a job the printer has been given and has not printed yet (a job withdrawn while
   * it waits in CUPS's queue). Resolves true when the job will not print.
   */
  cancel?(job: GivenJob): Promise<boolean>;
}

/**
 * What a printer that takes the document as it is (a file, a raw socket) can do: nothing to the
 * page, but any number of copies, which the backend makes by printing the document again.
 */
export const AS_IS_CAPABILITIES: PrinterCapabilities = {
  paperSizes: [],
  duplex: false,
  color: false,
  copies: true,
  pageOptions: false,
  trays: [],
  documentFormats: [],
};

/** How many copies a job asks for: at least one. */
export function copiesOf(job: Pick<PrintJob, 'options'>): number {
  return Math.max(1, job.options.copies || 1);
}

/**
 * A print that failed before any of the job reached the printer (a raw printer refusing the
 * connection, a file printer's folder gone): the agent keeps the job and prints it once the
 * printer reads as able to again, rather than report it failed. A backend throws it only when
 * nothing at all was sent.
 */
export class NotSentError extends Error {
  override name = 'NotSentError';
}

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The message of anything thrown, for a failure detail. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
