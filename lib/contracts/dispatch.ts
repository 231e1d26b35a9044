/**
 * What the jobs service publishes to `dispatch.<region>.<org>.<station>` (DESIGN §2) and the
 * stations service reads to offer a job to the agent holding the station's link, or to take an
 * offer back.
 */
import type { PrintOptions } from '../../gen/spool/v1/stations.js';
import type { JobJson } from '../job-view.js';
import type { TraceCarrier } from '../tracing.js';

/** What a station is sent: the job as the stations service needs it to make an offer. */
export interface DispatchOffer {
  kind: 'offer';
  job: JobJson & {
    sha256: string;
    options: PrintOptions;
    /** The job's own trace context, for offers that do not come through this message. */
    trace_context: TraceCarrier;
    /** The document is kept with the job (GetJobDocument), not in the object store. */
    document_inline?: boolean;
    /** The inline document itself, base64, when the message carries it (at creation). */
    document?: string;
  };
}

/** An offer taken back: the job was cancelled, moved or expired before the station took it. */
export interface DispatchWithdraw {
  kind: 'withdraw';
  job_id: string;
  attempt: number;
}

export type DispatchMessage = DispatchOffer | DispatchWithdraw;
