/**
 * What every scenario of a run shares: the options, the servers, the child processes that make
 * the load, and the organizations set up for the scenarios.
 */
import type { Admin } from './admin.js';
import type { AgentsApi } from './agents.js';
import type { CeilingsApi } from './ceilings.js';
import type { Checks } from './checks.js';
import type { Child } from './ipc.js';
import type { JobTarget } from './jobs-client.js';
import type { LoadApi } from './load.js';
import type { Options } from './options.js';
import type { BullmqApi } from './peer/bullmq.js';
import type { Servers } from './servers.js';

export interface Context {
  options: Options;
  servers: Servers;
  admin: Admin;
  checks: Checks;
  load: Child<LoadApi>;
  agents: Child<AgentsApi>;
  ceilings: Child<CeilingsApi>;
  bullWorker: Child<BullmqApi>;
  bullProducer: Child<BullmqApi>;
  /** Where the load process receives webhooks: one port per endpoint origin. */
  receiverPorts: number[];
  /** Milliseconds each measured run lasts. */
  runMs: number;
  log(line: string): void;
}

/** The organizations the scenarios post to. */
export interface Orgs {
  /** One printer whose station is offline: jobs stay queued, so only ingest is measured. */
  ingest: JobTarget;
  /** Printers of `--agents` connected agents, and one webhook endpoint for `job.printed`. */
  e2e: JobTarget;
  /** One offline printer, and 20 webhook endpoints for `job.created` on distinct origins. */
  fanout: JobTarget;
}

/** Paths the receivers tell the scenarios' deliveries apart by. */
export const PATHS = {
  e2e: '/hooks/e2e',
  production: '/hooks/production',
  fanout: '/hooks/fanout',
  ceiling: '/ceiling',
} as const;
