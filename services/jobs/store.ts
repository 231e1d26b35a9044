/**
 * The jobs tables, as the service's one store: the parts below, each with one role, composed.
 * Every query on tenant data is scoped by organization; every change writes the job, its numbered
 * event and the messages it causes (webhook event, dispatch to the station) in one transaction.
 *
 * - creation.ts: new jobs, by group commit;
 * - transitions.ts: moves through the state machine (machine.ts), by group commit too;
 * - job-queries.ts: reading jobs;
 * - upload-store.ts, template-store.ts, pool-store.ts: uploads, templates and pools of printers;
 * - test-prints.ts: the daily count of test-key prints;
 * - retention-store.ts, org-purge-store.ts: removing what is past retention, or of a deleted
 *   organization.
 */
import type pg from 'pg';
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { Clock } from '../../lib/clock.js';
import type { OutboxRow } from '../../lib/outbox.js';
import { createJobCreator, type JobCreator } from './creation.js';
import { createJobQueries, type JobQueries } from './job-queries.js';
import { createOrgPurgeStore, type OrgPurgeStore } from './org-purge-store.js';
import { createPoolStore, type PoolStore } from './pool-store.js';
import { createRetentionStore, type RetentionStore } from './retention-store.js';
import { createTemplateStore, type TemplateStore } from './template-store.js';
import { createTestPrintCounts, type TestPrintCounts } from './test-prints.js';
import { createJobTransitions, type JobTransitions } from './transitions.js';
import { createUploadStore, type UploadStore } from './upload-store.js';

export interface JobStoreOptions {
  /** Called with the outbox rows of each transaction once it has committed (the relay's `send`). */
  onCommit?: (rows: OutboxRow[]) => void;
  /**
   * Called with the jobs a committed transaction made queued again (released, retried, due), whose
   * printers may not print now: printer-waits.ts then gives them their `waiting: ` detail, as a new
   * job gets it at creation.
   */
  onRequeued?: (jobs: Job[]) => void;
}

/** Everything the jobs service keeps, in one object for the server, the sweeper and the reports. */
export interface JobStore
  extends JobCreator,
    JobTransitions,
    JobQueries,
    UploadStore,
    TemplateStore,
    PoolStore,
    TestPrintCounts,
    RetentionStore,
    OrgPurgeStore {}

export function createJobStore(
  pool: pg.Pool,
  clock: Clock,
  options: JobStoreOptions = {},
): JobStore {
  const committed = (rows: OutboxRow[]) => {
    if (rows.length > 0) options.onCommit?.(rows);
  };
  return {
    ...createJobCreator({ pool, clock, committed }),
    ...createJobTransitions({
      pool,
      clock,
      committed,
      onRequeued: options.onRequeued,
    }),
    ...createJobQueries(pool),
    ...createUploadStore(pool, clock),
    ...createTemplateStore(pool, clock),
    ...createPoolStore(pool, clock, committed),
    ...createTestPrintCounts(pool, clock),
    ...createRetentionStore(pool, clock),
    ...createOrgPurgeStore(pool),
  };
}
