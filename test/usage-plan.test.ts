/**
 * The usage rollup's rules without a database: which windows it counts (lib/rollup.ts), what a
 * window adds to each organization's days (services/jobs/usage-plan.ts), and the dates and bounds
 * of a request (lib/contracts/usage.ts).
 */
import test from 'ava';
import {
  addDays,
  datesIn,
  daysIn,
  isUsageDate,
  usageRequestProblem,
} from '../lib/contracts/usage.js';
import { nextWindow } from '../lib/rollup.js';
import { type FinishedJob, planRetried, planWindow } from '../services/jobs/usage-plan.js';

const ORG = '11111111-1111-4111-8111-111111111111';
const LIMITS = { settleMs: 60_000, maxWindowMs: 60 * 60_000 };
const at = (iso: string) => new Date(iso);

function job(fields: Partial<FinishedJob>): FinishedJob {
  return {
    id: 'j1',
    orgId: ORG,
    status: 'printed',
    pages: null,
    isPdf: false,
    copies: 1,
    failedOn: null,
    ...fields,
  };
}

test('a window ends a settling time before now, after at most its length, and never crosses 00:00 UTC', (t) => {
  t.deepEqual(nextWindow(at('2026-03-10T12:00:00Z'), at('2026-03-10T12:30:00Z'), LIMITS), {
    from: at('2026-03-10T12:00:00Z'),
    to: at('2026-03-10T12:29:00Z'),
    day: '2026-03-10',
  });
  t.deepEqual(
    nextWindow(at('2026-03-10T12:00:00Z'), at('2026-03-12T00:00:00Z'), LIMITS)?.to,
    at('2026-03-10T13:00:00Z'),
  );
  t.deepEqual(nextWindow(at('2026-03-10T23:30:00Z'), at('2026-03-12T00:00:00Z'), LIMITS), {
    from: at('2026-03-10T23:30:00Z'),
    to: at('2026-03-11T00:00:00Z'),
    day: '2026-03-10',
  });
  t.is(nextWindow(at('2026-03-10T12:00:00Z'), at('2026-03-10T12:01:00Z'), LIMITS), undefined);
  t.is(nextWindow(at('2026-03-10T12:00:00Z'), at('2026-03-10T11:00:00Z'), LIMITS), undefined);
});

test('jobs created count with their bytes; a printed PDF counts its pages times its copies', (t) => {
  const plan = planWindow(
    '2026-03-10',
    [{ orgId: ORG, jobs: 3, bytes: 4096 }],
    [
      job({ id: 'pdf', isPdf: true, pages: 4, copies: 2 }),
      job({ id: 'text', isPdf: false }),
      job({ id: 'gone', isPdf: true, pages: 0, copies: 3 }),
      job({ id: 'bad', status: 'failed', isPdf: true, pages: null }),
    ],
  );
  t.deepEqual(plan.changes, [
    {
      orgId: ORG,
      day: '2026-03-10',
      jobsCreated: 3,
      bytes: 4096,
      jobsPrinted: 3,
      jobsFailed: 1,
      pages: 8,
    },
  ]);
  t.deepEqual(plan.marks, [{ id: 'bad', orgId: ORG, failedOn: '2026-03-10' }]);
});

test('a job failed again on the day it was counted failed changes nothing; on another day it moves there', (t) => {
  const same = planWindow('2026-03-10', [], [job({ status: 'failed', failedOn: '2026-03-10' })]);
  t.deepEqual(same, { changes: [], marks: [] });
  const moved = planWindow('2026-03-11', [], [job({ status: 'failed', failedOn: '2026-03-10' })]);
  t.deepEqual(
    moved.changes.map((c) => [c.day, c.jobsFailed]),
    [
      ['2026-03-10', -1],
      ['2026-03-11', 1],
    ],
  );
  t.deepEqual(moved.marks, [{ id: 'j1', orgId: ORG, failedOn: '2026-03-11' }]);
});

test('a failed job retried leaves its failed day, and counts where it prints or nowhere when cancelled', (t) => {
  const printed = planWindow(
    '2026-03-11',
    [],
    [job({ status: 'printed', isPdf: true, pages: 2, failedOn: '2026-03-10' })],
  );
  t.deepEqual(
    printed.changes.map((c) => [c.day, c.jobsFailed, c.jobsPrinted, c.pages]),
    [
      ['2026-03-10', -1, 0, 0],
      ['2026-03-11', 0, 1, 2],
    ],
  );
  const cancelled = planWindow(
    '2026-03-11',
    [],
    [job({ status: 'cancelled', failedOn: '2026-03-10' })],
  );
  t.deepEqual(
    cancelled.changes.map((c) => [c.day, c.jobsFailed]),
    [['2026-03-10', -1]],
  );
  t.deepEqual(cancelled.marks, [{ id: 'j1', orgId: ORG, failedOn: null }]);
  const pending = planRetried([{ id: 'j1', orgId: ORG, failedOn: '2026-03-10' }]);
  t.deepEqual(
    pending.changes.map((c) => [c.day, c.jobsFailed]),
    [['2026-03-10', -1]],
  );
  t.deepEqual(pending.marks, [{ id: 'j1', orgId: ORG, failedOn: null }]);
});

test('a printed PDF whose pages were not counted stops the window rather than counting 0', (t) => {
  t.throws(() => planWindow('2026-03-10', [], [job({ isPdf: true, pages: null })]), {
    message: /pages of printed job j1 were not counted/,
  });
});

test('dates are real UTC days, and a request names 1 to 500 organizations over at most 366 days', (t) => {
  t.true(isUsageDate('2028-02-29'));
  for (const bad of [
    '2026-02-29',
    '2026-13-01',
    '2026-1-01',
    '20260101',
    '',
    '2026-01-01T00:00:00Z',
  ]) {
    t.false(isUsageDate(bad), bad);
  }
  t.is(addDays('2026-03-01', -1), '2026-02-28');
  t.is(daysIn('2026-01-01', '2026-12-31'), 365);
  t.deepEqual(datesIn('2026-12-30', '2027-01-01'), ['2026-12-30', '2026-12-31', '2027-01-01']);
  const ok = { orgIds: [ORG], from: '2026-01-01', to: '2027-01-01' };
  t.is(usageRequestProblem(ok), undefined);
  t.is(usageRequestProblem({ ...ok, to: '2027-01-02' })?.param, 'from');
  t.is(usageRequestProblem({ ...ok, from: '2027-01-02' })?.param, 'from');
  t.is(usageRequestProblem({ ...ok, to: '2027-02-30' })?.param, 'to');
  t.is(usageRequestProblem({ ...ok, orgIds: [] })?.param, 'org_ids');
});
