/**
 * The job state machine (spec §3, DESIGN §4) as data. Every transition a job can make is one row
 * here; the jobs service, the tests and docs/jobs.md all read this table, and no transition is
 * decided anywhere else.
 */
import type { JobStatus } from '../../lib/contracts/job-status.js';
import type { EventType } from '../../lib/events.js';

export { isJobStatus, JOB_STATUSES, type JobStatus } from '../../lib/contracts/job-status.js';

/** What makes a job move. */
export type Trigger =
  /** POST …/cancel */
  | 'cancel'
  /** POST …/retry */
  | 'retry'
  /** the agent has the job and its document */
  | 'received'
  /** the station reports the job printed */
  | 'printed'
  /** the station reports the job failed */
  | 'failed'
  /** a scheduled job's time has come */
  | 'due'
  /** a job waited undelivered longer than its expire_after */
  | 'expire'
  /** the operator deleted the job's printer (or its station) */
  | 'printer_deleted'
  /** a pool job waiting for a member is given one (router.ts) */
  | 'route'
  /** a pool job moves off a member that has not been able to print for the pool's failover_after */
  | 'failover'
  /** POST …/move */
  | 'move';

export interface Transition {
  trigger: Trigger;
  from: readonly JobStatus[];
  to: JobStatus;
  /** The webhook event the change emits, if any. */
  event: EventType | null;
  /**
   * The station must hear of it: a new attempt to print, a withdrawal, or both (`reroute`: the
   * job is withdrawn from the station it was offered to and offered to its new printer's).
   */
  dispatch: 'offer' | 'withdraw' | 'reroute' | null;
  /** Starts a new attempt: reports of earlier attempts no longer apply. */
  newAttempt?: boolean;
}

export const TRANSITIONS: readonly Transition[] = [
  {
    trigger: 'cancel',
    from: ['scheduled', 'held', 'queued', 'sent'],
    to: 'cancelled',
    event: 'job.cancelled',
    dispatch: 'withdraw',
  },
  {
    trigger: 'retry',
    from: ['failed'],
    to: 'queued',
    event: 'job.retried',
    dispatch: 'offer',
    newAttempt: true,
  },
  // Releasing a held job sends it for the first time: no attempt was made yet.
  { trigger: 'retry', from: ['held'], to: 'queued', event: 'job.retried', dispatch: 'offer' },
  { trigger: 'received', from: ['queued'], to: 'sent', event: null, dispatch: null },
  // A job can print before its `received` report is processed (reports may arrive out of order).
  {
    trigger: 'printed',
    from: ['queued', 'sent'],
    to: 'printed',
    event: 'job.printed',
    dispatch: null,
  },
  {
    trigger: 'failed',
    from: ['queued', 'sent'],
    to: 'failed',
    event: 'job.failed',
    dispatch: null,
  },
  { trigger: 'due', from: ['scheduled'], to: 'queued', event: null, dispatch: 'offer' },
  {
    trigger: 'expire',
    from: ['queued'],
    to: 'failed',
    event: 'job.failed',
    dispatch: 'withdraw',
  },
  // No printer is left to print it; a retry would have nowhere to go either.
  {
    trigger: 'printer_deleted',
    from: ['scheduled', 'held', 'queued', 'sent'],
    to: 'failed',
    event: 'job.failed',
    dispatch: 'withdraw',
  },
  // Routing (docs/jobs.md, "Pools and routing") keeps the status and changes the printer.
  { trigger: 'route', from: ['queued'], to: 'queued', event: null, dispatch: 'offer' },
  {
    trigger: 'failover',
    from: ['queued'],
    to: 'queued',
    event: 'job.rerouted',
    dispatch: 'reroute',
  },
  { trigger: 'move', from: ['queued'], to: 'queued', event: 'job.rerouted', dispatch: 'reroute' },
  { trigger: 'move', from: ['scheduled'], to: 'scheduled', event: 'job.rerouted', dispatch: null },
  { trigger: 'move', from: ['held'], to: 'held', event: 'job.rerouted', dispatch: null },
];

/** The triggers that change a job's printer rather than (or as well as) its status. */
export const ROUTING_TRIGGERS: readonly Trigger[] = ['route', 'failover', 'move'];

/** Statuses a job does not leave by itself: its document's retention counts from entering one. */
export const FINISHED_STATUSES: readonly JobStatus[] = ['printed', 'failed', 'cancelled'];

/** The transition `trigger` makes from `status`, or undefined when it does not apply. */
export function transition(status: JobStatus, trigger: Trigger): Transition | undefined {
  return TRANSITIONS.find((t) => t.trigger === trigger && t.from.includes(status));
}

/** The statuses `trigger` applies to, for error messages. */
export function statusesFor(trigger: Trigger): JobStatus[] {
  return TRANSITIONS.filter((t) => t.trigger === trigger).flatMap((t) => [...t.from]);
}

/** Statuses in which a station should have the job. */
export const PENDING_STATUSES: readonly JobStatus[] = ['queued', 'sent'];
