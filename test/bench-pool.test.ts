/**
 * The benchmark's pool scenario judges what the simulated stations printed
 * (bench/scenarios/pool-tally.ts): a job printed twice or one that never printed ends the run, as
 * does a fault that moved no job; the jobs that moved are timed from the fault.
 */
import test from 'ava';
import type { PrintedResult } from '../bench/agents.js';
import {
  failoverRun,
  printedPerJob,
  printedRate,
  requireFailover,
  requirePrintedOnce,
} from '../bench/scenarios/pool-tally.js';
import { ShortfallError } from '../bench/shortfall.js';

const result = (jobId: string, printerId: string, at: number): PrintedResult => ({
  jobId,
  printerId,
  at,
});

test('a job printed twice, at one printer or at two, ends the run, naming it and its printers', (t) => {
  t.notThrows(() =>
    requirePrintedOnce('pool: pool', printedPerJob([result('a', 'p1', 1), result('b', 'p2', 2)])),
  );
  const printed = printedPerJob([
    result('a', 'p1', 1),
    result('b', 'p2', 2),
    result('a', 'p3', 3),
    result('c', 'p2', 4),
  ]);
  t.deepEqual(
    printed.get('a')?.map((r) => r.printerId),
    ['p1', 'p3'],
  );
  const err = t.throws(() => requirePrintedOnce('pool: failover', printed), {
    instanceOf: ShortfallError,
  });
  t.is(
    err?.message,
    'pool: failover: 1 of 3 jobs printed more than once (job a 2 times, by printers p1, p3)',
  );
});

test('jobs that print at another member after the fault moved, timed from it; those too soon are counted', (t) => {
  const faultAt = 10_000;
  const printed = printedPerJob([
    result('before', 'p2', 9_000),
    result('m1', 'p2', 12_500),
    result('m2', 'p3', 13_000),
    result('soon', 'p3', 10_100),
    result('late', 'p1', 14_000),
  ]);
  const run = failoverRun({
    ids: ['before', 'm1', 'm2', 'soon', 'late', 'lost'],
    faulty: 'p1',
    faultAt,
    failoverAfterMs: 2_000,
    printed,
    // m2's event was not seen: its station's result time stands in.
    printedAt: [9_010, 12_520, null, 10_110, 14_010, null],
  });
  t.deepEqual(run, {
    moved: 3,
    before: 1,
    atFaulty: 1,
    unprinted: 1,
    times: [2_520, 3_000, 110],
    withoutEvent: 1,
    // Moved 110 ms after the fault, before failover_after had passed.
    early: 1,
  });
});

test('a failover falls short when a job did not print or none moved', (t) => {
  const base = {
    moved: 3,
    before: 0,
    atFaulty: 0,
    unprinted: 0,
    times: [],
    withoutEvent: 0,
    early: 0,
  };
  t.notThrows(() => requireFailover('pool: failover', 3, base));
  const lost = t.throws(() => requireFailover('pool: failover', 50, { ...base, unprinted: 2 }), {
    instanceOf: ShortfallError,
  });
  t.is(lost?.message, 'pool: failover: jobs printed: 48 of the 50 asked for');
  const none = t.throws(
    () => requireFailover('pool: failover', 50, { ...base, moved: 0, before: 50 }),
    { instanceOf: ShortfallError },
  );
  t.is(
    none?.message,
    'pool: failover: no job moved off the member that failed (50 printed before the fault, 0 at the failed member after it)',
  );
});

test('printed a second counts the jobs whose event was seen, up to the last of them', (t) => {
  t.deepEqual(printedRate(1_000, [1_500, null, 3_000, 2_000]), { printed: 3, rate: 1.5 });
});
