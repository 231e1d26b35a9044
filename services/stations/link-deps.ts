/** What the station link is built from, and the names its parts share. */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { ObjectStore } from '@nats-io/obj';
import type { JobsServiceClient } from '../../gen/spool/v1/jobs.js';
import type { AgentMessage, ServerMessage } from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import type { AsyncClient } from '../../lib/grpc.js';
import type { Logger } from '../../lib/logger.js';
import type { StreamPublisher } from '../../lib/stream-publisher.js';
import type { ReleaseWatch } from './link-updates.js';
import type { LinkPresence } from './presence.js';
import type { PrinterSync } from './printer-sync.js';

export interface LinkDeps {
  store: LinkPresence & PrinterSync;
  nc: NatsConnection;
  /** Publishes the stations' reports to their region's reports stream. */
  publisher: StreamPublisher;
  documents: ObjectStore;
  jobs: AsyncClient<JobsServiceClient>;
  /** This process's region; a link of a station homed elsewhere is served, across regions. */
  region: string;
  /** A new link id, naming this replica (`ReplicaWatch.linkId`); a bare UUID by default. */
  newLinkId?: () => string;
  logger: Logger;
  /** How often each link re-reads its station's pending jobs, as a backstop (default 60 s). */
  resyncMs?: number;
  /**
   * How long a `received` waits for its job's `result`, to go with it as one report (default
   * `RECEIVED_HOLD_MS`; 0 sends each at once).
   */
  receivedHoldMs?: number;
  /**
   * Told whether each report was stored, and asked, when one could not be for `reportRetryMs`,
   * whether another replica could store it: the link then ends, for its agent to link there. By
   * default, the link ends.
   */
  reports?: {
    stored(): void;
    refused(): void;
    elsewhere(): Promise<boolean>;
  };
  /** Default `REPORT_RETRY_MS`. */
  reportRetryMs?: number;
  /** How long a diagnosis waits for the agent's report (default `DIAGNOSE_WAIT_MS`). */
  diagnoseWaitMs?: number;
  /** Agent releases: update reports stored, target versions offered (none: neither). */
  releases?: ReleaseWatch;
}

/** One agent's stream. */
export type Call = ServerDuplexStream<AgentMessage, ServerMessage>;

/** A job attempt, as the agent and the link name it. */
export interface JobAttempt {
  jobId: string;
  attempt: number;
}

/** One attempt at a job, as a key. */
export function attemptKey(jobId: string, attempt: number): string {
  return `${jobId}#${attempt}`;
}
