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
}
