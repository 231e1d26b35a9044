/**
 * What a trigger does to a job, decided without the database: the state machine's row for the
 * job's status (machine.ts) turned into the job's next row, its event and the messages it causes.
 * transitions.ts reads the jobs, plans with {@link plan} and writes what it planned.
 */
import type { Job } from '../../gen/spool/v1/jobs.js';
import { conflict } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { jobJson } from '../../lib/job-view.js';
import type { OutboxMessage, OutboxRow } from '../../lib/outbox.js';
import { dispatchOffer, dispatchWithdrawal } from './dispatch-messages.js';
import { documentPastRetention, type JobRow, toJob } from './job-rows.js';
import { statusesFor, type Trigger, transition } from './machine.js';
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

/**
 * The change `trigger` makes to `row` at `now`, computed without writing it: an unchanged outcome
 * when the trigger does not apply (a late or repeated report), a conflict when the API asked for a
 * change the job's status does not allow.
 */
export function plan(row: JobRow, trigger: Trigger, how: How, now: Date): Change {
  const current = toJob(row);
  const unchanged: Change = { job: current, changed: false, before: row, after: row, outbox: [] };
  const fromApi = trigger === 'cancel' || trigger === 'retry';
  if (how.attempt !== undefined && how.attempt !== current.attempt) return unchanged;
  // Only the station the job went to reports on it: another (of the same organization) cannot
  // mark it printed or failed.
  if (how.stationId !== undefined && how.stationId !== row.station_id) return unchanged;
  const t = transition(row.status, trigger);
  if (!t) {
    if (!fromApi) return unchanged;
    throw conflict(
      `a ${row.status} job cannot be ${trigger === 'cancel' ? 'cancelled' : 'retried'}; ` +
        `only ${statusesFor(trigger).join(', ')} jobs can`,
    );
  }
  if (t.dispatch === 'offer' && row.document_deleted_at) {
    throw documentPastRetention();
  }
  const detail = how.detail ?? (trigger === 'expire' ? 'expired' : '');
  // A job that starts waiting again gets its expire_after afresh.
  const expireAt =
    t.to === 'queued' && row.expire_after > 0 && trigger !== 'due'
      ? new Date(now.getTime() + row.expire_after * 1000)
      : row.expire_at;
  // A station's report says where the job is: its station's home region, which an operator
  // may have changed since the job was created.
  const after: JobRow = {
    ...row,
    region: how.region || row.region,
    status: t.to,
    status_detail: t.to === 'failed' ? detail : t.to === 'sent' ? waitingOf(row) : '',
    attempt: t.newAttempt ? current.attempt + 1 : current.attempt,
    updated_at: now,
    version: row.version + 1,
    expire_at: expireAt,
  };
  const job = toJob(after);
  const messages: OutboxMessage[] = [];
  if (t.event) messages.push(eventMessage(row.org_id, t.event, { job: jobJson(job) }, now));
  if (t.dispatch === 'withdraw') messages.push(dispatchWithdrawal(current));
  if (t.dispatch === 'offer') messages.push(dispatchOffer(job));
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
