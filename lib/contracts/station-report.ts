/**
 * What the stations service publishes to `reports.<region>.<org>.<station>` (DESIGN §2) when a
 * station says it has a job or how the job ended; the jobs service turns each into a transition.
 */

/** A station's report on one attempt of one job. */
export interface StationReport {
  kind: 'received' | 'result';
  org_id: string;
  station_id: string;
  /** The station's home region, where it printed; absent in reports from before regions. */
  region?: string;
  job_id: string;
  attempt: number;
  printed?: boolean;
  detail?: string;
  /**
   * On a `result`: the station's `received` of the same attempt came with it and was not
   * published on its own. Applied first, in the same transaction, so the job's history still
   * shows it sent.
   */
  received?: boolean;
  /** On a `printed` result: how far the station's printer confirmed the job. */
  confirmation?: { level: ConfirmationLevel; pages?: number };
}

export const CONFIRMATION_LEVELS = ['handed_off', 'device_completed'] as const;
export type ConfirmationLevel = (typeof CONFIRMATION_LEVELS)[number];

/** More pages than any printer counts for one job: a count beyond it is not believed. */
const MAX_PAGES = 1_000_000;

/**
 * A confirmation as an agent sent it, kept only as far as it makes sense: a level Spool does not
 * know is taken as `handed_off` (the agent printed the job, and says no more that Spool can read),
 * and a page count that is not a count is dropped.
 */
export function trustedConfirmation(sent: {
  level: string;
  pages?: number | undefined;
}): StationReport['confirmation'] {
  const level = (CONFIRMATION_LEVELS as readonly string[]).includes(sent.level)
    ? (sent.level as ConfirmationLevel)
    : 'handed_off';
  const pages = sent.pages;
  return pages !== undefined && Number.isInteger(pages) && pages >= 0 && pages <= MAX_PAGES
    ? { level, pages }
    : { level };
}
