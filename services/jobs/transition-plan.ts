/**
 * What a trigger does to a job, decided without the database: the state machine's row for the
 * job's status (machine.ts) turned into the job's next row, its event and the messages it causes.
 * transitions.ts reads the jobs, plans with {@link plan} and writes what it planned.
 */
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { PrintConfirmation } from '../../gen/spool/v1/stations.js';
import { conflict } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { jobJson } from '../../lib/job-view.js';
import type { OutboxMessage, OutboxRow } from '../../lib/outbox.js';
import { dispatchOffer, dispatchWithdrawal } from './dispatch-messages.js';
import { documentPastRetention, type JobRow, toJob } from './job-rows.js';
import { ROUTING_TRIGGERS, statusesFor, type Trigger, transition } from './machine.js';
import { WAITING } from './printer-waits.js';

/** Who or what moves a job, and what the move is to take as given. */
export interface How {
  /** `api_key:<id>`, `person:<id>`, `station:<id>`, `system` or `operator`, as its event says. */
  actor: string;
  detail?: string;
  /** A station's report: the attempt it is about; a report of another attempt changes nothing. */
  attempt?: number;
  /** A station's report: its home region, where the job now is. */
  region?: string;
  /** A station's report: the station sending it; a report of another station changes nothing. */
  stationId?: string;
  /** A routing (`route`, `failover`, `move`): the printer the job goes to. */
  route?: Route;
  /** A station's `printed` report: how far its printer confirmed the job. */
  confirmation?: PrintConfirmation;
}

/** Where a routing sends a job. */
export interface Route {
  printerId: string;
  stationId: string;
  /** The printer's station's home region. */
  region: string;
  /**
   * The printer the job was seen at when the routing was decided (null: none yet); a job whose
   * printer has changed since is left alone. Unset for a move, which takes the job as it is.
   */
  from?: string | null;
  /** Why the job waits at its new printer (`waiting: …`), when it cannot print there now. */
  waiting?: string;
  /** The job leaves its pool: it was moved to a printer that is not one of the pool's. */
  leavePool?: boolean;
}

/** The outcome of a report or action: the job as it now is, and whether it changed. */
export interface Applied {
  job: Job;
  changed: boolean;
}

/** A change made inside a transaction, observed (counted, timed) once the transaction commits. */
export interface Change extends Applied {
  before: JobRow;
  /** The row as the change leaves it. */
  after: JobRow;
  /** The messages it causes, and the outbox rows they were written as, for the relay. */
  messages?: OutboxMessage[];
  outbox: OutboxRow[];
  /** The record of the change (its job_events row). */
  event?: { detail: string; actor: string; region: string };
}

/** A job's `waiting: ` detail (printer-waits.ts), or ''. */
const waitingOf = (row: JobRow) => (row.status_detail.startsWith(WAITING) ? row.status_detail : '');

const VERB: Partial<Record<Trigger, string>> = {
  cancel: 'cancelled',
  retry: 'retried',
  move: 'moved',
};

/**
 * The printer, station and region `row` has after `trigger`: a routing's, or none for a pool job
 * queued again (released, retried or due: the router chooses a member afresh), else its own.
 */
function placeAfter(row: JobRow, trigger: Trigger, how: How, to: string) {
  if (how.route) {
    const { printerId, stationId, region, leavePool } = how.route;
    const poolId = leavePool ? null : row.pool_id;
    return { printer_id: printerId, station_id: stationId, region, pool_id: poolId };
  }
  if (row.pool_id && to === 'queued' && (trigger === 'retry' || trigger === 'due')) {
    return { printer_id: null, station_id: null, region: row.region, pool_id: row.pool_id };
  }
  // A station's report says where the job is: its station's home region, which an operator
  // may have changed since the job was created.
  const region = how.region || row.region;
  return { printer_id: row.printer_id, station_id: row.station_id, region, pool_id: row.pool_id };
}

/** The detail a job has after a change to `to`. */
function detailAfter(row: JobRow, to: string, detail: string, how: How): string {
  if (how.route) return to === 'queued' ? (how.route.waiting ?? '') : '';
  if (to === 'failed') return detail;
  return to === 'sent' ? waitingOf(row) : '';
}

/**
 * The change `trigger` makes to `row` at `now`, computed without writing it: an unchanged outcome
 * when the trigger does not apply (a late or repeated report), a conflict when the API asked for a
 * change the job's status does not allow.
 */
export function plan(row: JobRow, trigger: Trigger, how: How, now: Date): Change {
  const current = toJob(row);
  const unchanged: Change = { job: current, changed: false, before: row, after: row, outbox: [] };
  const verb = VERB[trigger];
  if (how.attempt !== undefined && how.attempt !== current.attempt) return unchanged;
  // Only the station the job went to reports on it: another (of the same organization) cannot
  // mark it printed or failed.
  if (how.stationId !== undefined && how.stationId !== row.station_id) return unchanged;
  const t = transition(row.status, trigger);
  if (!t) {
    if (!verb) return unchanged;
    throw conflict(
      `a ${row.status} job cannot be ${verb}; only ${statusesFor(trigger).join(', ')} jobs can`,
    );
  }
  const routing = ROUTING_TRIGGERS.includes(trigger);
  if (routing && !how.route) throw new Error(`a ${trigger} names no printer`);
  if (how.route) {
    // Routed meanwhile by another replica, or moved: this routing no longer applies.
    if (how.route.from !== undefined && how.route.from !== row.printer_id) return unchanged;
    if (how.route.printerId === row.printer_id) return unchanged;
  }
  if (t.dispatch === 'offer' && row.document_deleted_at) {
    throw documentPastRetention();
  }
  const detail =
    how.detail ??
    (trigger === 'expire' ? 'expired' : how.route ? `routed to ${how.route.printerId}` : '');
  // A job that starts waiting again gets its expire_after afresh.
  const expireAt =
    t.to === 'queued' && row.expire_after > 0 && trigger !== 'due'
      ? new Date(now.getTime() + row.expire_after * 1000)
      : row.expire_at;
  const after: JobRow = {
    ...row,
    ...placeAfter(row, trigger, how, t.to),
    status: t.to,
    status_detail: detailAfter(row, t.to, detail, how),
    attempt: t.newAttempt ? current.attempt + 1 : current.attempt,
    updated_at: now,
    version: row.version + 1,
    expire_at: expireAt,
    // A printer that said nothing more took the job: a report from an agent before confirmations.
    confirmation: t.to === 'printed' ? (how.confirmation ?? { level: 'handed_off' }) : null,
  };
  const job = toJob(after);
  const messages: OutboxMessage[] = [];
  if (t.event) {
    const moved =
      t.event === 'job.rerouted'
        ? { from_printer_id: row.printer_id, to_printer_id: after.printer_id }
        : {};
    messages.push(eventMessage(row.org_id, t.event, { job: jobJson(job), ...moved }, now));
  }
  // Only a job with a station is offered, or withdrawn: a pool job waiting for a member has none.
  const withdraw = t.dispatch === 'withdraw' || t.dispatch === 'reroute';
  const offer = t.dispatch === 'offer' || t.dispatch === 'reroute';
  if (withdraw && row.station_id) messages.push(dispatchWithdrawal(current));
  if (offer && after.station_id) messages.push(dispatchOffer(job));
  return {
    job,
    changed: true,
    before: row,
    after,
    outbox: [],
    messages,
    event: { detail: detail || trigger, actor: how.actor, region: how.region ?? '' },
  };
}
