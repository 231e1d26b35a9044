/**
 * The end-to-end and production targets of the benchmark (bench/scenarios/e2e.ts): `spool dev`'s
 * Spool CPU per job against PostgreSQL's in the same runs, and the production deployment's rate
 * and CPU per job against `spool dev`'s median of the same bench run; and the fixed-rate targets
 * (bench/scenarios/fixed-rate.ts), ratios to references measured in the same runs.
 */
import test from 'ava';
import { tableMarkdown } from '../bench/report/markdown.js';
import { type HeadlineRuns, headlineFigures } from '../bench/scenarios/e2e.js';
import { type FixedRateRows, fixedRateFigures } from '../bench/scenarios/fixed-rate.js';

const runs = (over: Partial<HeadlineRuns>): HeadlineRuns => ({
  rate: [500, 500, 500],
  cpuPerJob: [1, 1, 1],
  peer: [2000, 2000, 2000],
  postgresCpuPerJob: [1, 1, 1],
  durable: [true, true, true],
  incomplete: [0, 0, 0],
  ...over,
});

test("spool dev's CPU per job is judged run by run against PostgreSQL's, at most 1×", (t) => {
  const { rate, cpu } = headlineFigures(
    'end to end',
    { against: 'postgres' },
    runs({ cpuPerJob: [1, 2, 1.5], postgresCpuPerJob: [2, 1.5, 2] }),
  );
  t.deepEqual(cpu.ratio?.runs, [0.5, 2 / 1.5, 0.75]);
  t.is(cpu.target?.text, '≤ 1 × PostgreSQL CPU per job');
  t.true(cpu.target?.met);
  t.is(cpu.target?.runsMet, 2);
  t.is(rate.target, undefined, 'the rate beside BullMQ is shown without a target');
  t.is(rate.reference?.label, 'BullMQ add → processed');
});

test("production's rate and CPU per job are set against spool dev's medians", (t) => {
  const { rate, cpu } = headlineFigures(
    'production (spool serve ×6)',
    { against: 'dev', dev: { rate: [600, 700, 650], cpuPerJob: [1.0, 1.1, 1.2] } },
    runs({ rate: [400, 500, 600], cpuPerJob: [1.2, 1.4, 1.3] }),
  );
  t.is(rate.reference?.value.median, 650);
  t.deepEqual(rate.ratio?.runs, [400 / 650, 500 / 650, 600 / 650]);
  t.is(rate.target?.text, '≥ 0.8 × `spool dev` end to end');
  t.false(rate.target?.met, '500 / 650 is under 0.8');
  t.is(rate.target?.runsMet, 1);
  t.is(cpu.target?.text, '≤ 1.25 × `spool dev` end to end');
  t.true(cpu.target?.met, '1.3 / 1.1 is under 1.25');
  t.is(cpu.target?.runsMet, 2);
  const table = tableMarkdown([rate, cpu]);
  t.regex(table, /≤ 1\.25 × `spool dev` end to end \| \*\*met\*\* \(2\/3 runs\)/);
  t.regex(table, /≥ 0\.8 × `spool dev` end to end \| \*\*not met\*\* \(1\/3 runs\)/);
});

test('production without the end-to-end scenario in the same run has no target, and says so', (t) => {
  const { rate, cpu } = headlineFigures(
    'production (spool serve ×6)',
    { against: 'dev', dev: undefined },
    runs({}),
  );
  t.is(rate.target, undefined);
  t.is(cpu.target, undefined);
  t.regex(cpu.note ?? '', /judged only beside the end-to-end scenario/);
});

test('a run whose jobs were not all durable fails the targets and marks the rate', (t) => {
  const { rate, cpu } = headlineFigures(
    'end to end',
    { against: 'postgres' },
    runs({ cpuPerJob: [0.5, 0.5, 0.5], durable: [true, false, true], incomplete: [0, 3, 0] }),
  );
  t.false(cpu.target?.met);
  t.is(cpu.target?.runsMet, 3, 'each run met the ratio on its own');
  t.regex(rate.note ?? '', /not every run passed/);
  t.regex(rate.note ?? '', /3 jobs without a webhook in time/);
});

test('at a fixed rate, POST p99 and POST → printed p50 are judged as ratios to their references', (t) => {
  const three = (a: number, b: number, c: number) => [a, b, c];
  const rows: FixedRateRows = {
    txP50: three(1, 1, 1),
    txP99: three(2, 2, 3),
    txP999: three(4, 4, 4),
    peerP50: three(2, 2, 2),
    peerP99: three(5, 5, 5),
    postP50: three(5, 5, 5),
    postP99: three(15, 25, 20),
    postP999: three(40, 40, 40),
    printedP50: three(25, 19, 17),
    printedP99: three(50, 50, 50),
    webhookP50: three(30, 30, 30),
    webhookP99: three(60, 60, 60),
    dispatchP50: three(3, 3, 3),
    dispatchP99: three(9, 9, 9),
    cpuPerJob: three(3, 2, 4),
    missing: three(0, 0, 0),
  };
  const figures = fixedRateFigures(
    'fixed rate, production (spool serve ×6)',
    '150/s (half the production end-to-end maximum)',
    rows,
    [1.5, 1, 1.25],
  );
  const judged = figures.filter((f) => f.target);
  t.deepEqual(
    judged.map((f) => [f.label, f.target?.text, f.target?.met, f.target?.runsMet]),
    [
      [
        'POST p99 at 150/s (half the production end-to-end maximum)',
        '≤ 10 × unloaded insert tx p99',
        true,
        2,
      ],
      [
        'POST → printed p50 at 150/s (half the production end-to-end maximum)',
        '≤ 10 × BullMQ add → processed p50 at the same rate',
        true,
        2,
      ],
    ],
  );
  t.deepEqual(judged[0]?.ratio?.runs, [7.5, 12.5, 20 / 3]);
  t.deepEqual(judged[1]?.ratio?.runs, [12.5, 9.5, 8.5]);
  // The CPU per job, shown beside its median at the maximum, is not judged.
  const cpu = figures.find((f) => f.label.startsWith('Spool CPU per printed and delivered job'));
  t.is(cpu?.reference?.value.median, 1.25);
  t.deepEqual(cpu?.ratio?.runs, [2.4, 1.6, 3.2]);
  t.is(cpu?.target, undefined);
  t.true(figures.every((f) => f.scenario === 'fixed rate, production (spool serve ×6)'));
});
