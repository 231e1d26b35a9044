/**
 * What a trigger does to a job, planned without a database (services/jobs/transition-plan.ts):
 * which reports no longer apply, which actions are refused, and what a change writes and sends.
 */
import test from 'ava';
import { PrintOptions } from '../gen/spool/v1/stations.js';
import type { DispatchMessage } from '../lib/contracts/dispatch.js';
import { SpoolError } from '../lib/errors.js';
import type { JobRow } from '../services/jobs/job-rows.js';
import { plan } from '../services/jobs/transition-plan.js';

const created = new Date('2026-01-01T00:00:00Z');
const now = new Date('2026-01-01T00:10:00Z');

function row(fields: Partial<JobRow> = {}): JobRow {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    org_id: '00000000-0000-4000-8000-000000000002',
    printer_id: '00000000-0000-4000-8000-000000000003',
    station_id: '00000000-0000-4000-8000-000000000004',
    status: 'queued',
    status_detail: '',
    reference: '',
    title: 'a job',
    live: true,
    options: PrintOptions.fromPartial({}),
    content_type: 'text/plain',
    size: '5',
    sha256: '',
    attempt: 1,
    version: 1,
    schedule_at: null,
    expire_after: 0,
    expire_at: null,
    reprint_of: null,
    document_deleted_at: null,
    sealed: false,
    trace_context: {},
    region: 'home',
    document_inline: true,
    pool_id: null,
    priority: 50,
    confirmation: null,
    created_at: created,
    updated_at: created,
    ...fields,
  };
}

const station = { actor: 'station:s', stationId: '00000000-0000-4000-8000-000000000004' };

test('a report of an earlier attempt, or from another station, changes nothing', (t) => {
  const job = row({ attempt: 2 });
  t.false(plan(job, 'printed', { ...station, attempt: 1 }, now).changed);
  const other = { actor: 'station:t', stationId: '00000000-0000-4000-8000-000000000009' };
  t.false(plan(job, 'printed', { ...other, attempt: 2 }, now).changed);
  t.true(plan(job, 'printed', { ...station, attempt: 2 }, now).changed);
});

test('a report that no longer applies changes nothing; an action that does not is a 409', (t) => {
  const printed = row({ status: 'printed' });
  const late = plan(printed, 'failed', station, now);
  t.false(late.changed);
  t.is(late.after, printed);
  const refused = t.throws(() => plan(printed, 'cancel', { actor: 'operator' }, now));
  t.true(refused instanceof SpoolError);
  t.is((refused as SpoolError).code, 'conflict');
  t.regex(refused.message, /a printed job cannot be cancelled; only .*queued.* jobs can/);
});

test('a retried failed job starts a new attempt, waits its expire_after afresh and is offered', (t) => {
  const failed = row({ status: 'failed', status_detail: 'jammed', expire_after: 60, version: 4 });
  const change = plan(failed, 'retry', { actor: 'api_key:k' }, now);
  t.true(change.changed);
  t.is(change.after.status, 'queued');
  t.is(change.after.status_detail, '');
  t.is(change.after.attempt, 2);
  t.is(change.after.version, 5);
  t.deepEqual(change.after.expire_at, new Date(now.getTime() + 60_000));
  t.deepEqual(change.event, { detail: 'retry', actor: 'api_key:k', region: '' });
  const payloads = (change.messages ?? []).map(
    (m) => m.payload as { kind?: string; type?: string },
  );
  t.deepEqual(
    payloads.map((p) => p.type ?? p.kind),
    ['job.retried', 'offer'],
  );
});

test('a cancelled job is withdrawn from its station, for the attempt it was offered', (t) => {
  const change = plan(row({ status: 'sent', attempt: 3 }), 'cancel', { actor: 'operator' }, now);
  const withdrawal = change.messages?.find(
    (m) => (m.payload as DispatchMessage).kind === 'withdraw',
  );
  t.deepEqual(withdrawal?.payload, {
    kind: 'withdraw',
    job_id: '00000000-0000-4000-8000-000000000001',
    attempt: 3,
  });
});

test('a job that reaches its station keeps why it waits; one that fails says why it failed', (t) => {
  const waiting = row({ status_detail: 'waiting: printer "P" is out of paper' });
  t.is(plan(waiting, 'received', station, now).after.status_detail, waiting.status_detail);
  const failed = plan(waiting, 'failed', { ...station, detail: 'jammed' }, now);
  t.is(failed.after.status_detail, 'jammed');
  t.is(plan(row(), 'expire', { actor: 'system' }, now).after.status_detail, 'expired');
});

test('a report says where the job is: its station’s home region', (t) => {
  const change = plan(row(), 'received', { ...station, region: 'away' }, now);
  t.is(change.after.region, 'away');
  t.is(change.event?.region, 'away');
});

test('a job whose document is past retention cannot be offered again', (t) => {
  const failed = row({ status: 'failed', document_deleted_at: created });
  const refused = t.throws(() => plan(failed, 'retry', { actor: 'operator' }, now));
  t.is((refused as SpoolError).code, 'content_deleted');
});

test('a printed report keeps its confirmation; a report without one was handed off; anything else has none', (t) => {
  const sent = row({ status: 'sent' });
  const device = { level: 'device_completed', pages: 3 };
  t.deepEqual(
    plan(sent, 'printed', { ...station, attempt: 1, confirmation: device }, now).after.confirmation,
    device,
  );
  t.deepEqual(plan(sent, 'printed', { ...station, attempt: 1 }, now).after.confirmation, {
    level: 'handed_off',
  });
  t.deepEqual(
    plan(sent, 'printed', { ...station, confirmation: device }, now).job.confirmation,
    device,
  );
  t.is(plan(sent, 'failed', { ...station, confirmation: device }, now).after.confirmation, null);
  const failed = row({ status: 'failed', confirmation: null });
  t.is(plan(failed, 'retry', { actor: 'operator' }, now).after.confirmation, null);
});
