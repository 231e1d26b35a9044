/**
 * The benchmark's chart (bench/report/chart.ts) draws whatever a full run collected: the event
 * streams alone gather some 300,000 latency samples.
 */
import test from 'ava';
import { renderChart } from '../bench/report/chart.js';
import { figure, ratioAtLeast } from '../bench/report/figures.js';

test('the chart draws a run of hundreds of thousands of samples on the scale they span', (t) => {
  const samples = Array.from({ length: 300_000 }, (_, i) => 2 + (i % 1000) * 0.5);
  const svg = renderChart([], [{ label: 'streams', samples }], 'Spool');
  t.true(svg.startsWith('<svg'));
  t.true(svg.trimEnd().endsWith('</svg>'));
  // Samples from 2 to 501.5 ms: a log scale from 1 to 1000 ms.
  const ticks = [...svg.matchAll(/text-anchor="end" fill="#666">([^<]+)</g)].map((m) => m[1]);
  t.deepEqual(ticks, ['1.00', '10.0', '100', '1,000']);
  t.regex(svg, /streams \(n=300000\)/);
});

test('the chart grows to hold a legend line for every series', (t) => {
  const series = Array.from({ length: 20 }, (_, i) => ({ label: `s${i}`, samples: [1, 2, 3] }));
  const svg = renderChart([], series, 'Spool');
  const height = Number(/<svg[^>]* height="(\d+)"/.exec(svg)?.[1]);
  const lastLegend = Math.max(
    ...[...svg.matchAll(/<text x="[\d.]+" y="([\d.]+)" font-size="10">s\d+ /g)].map((m) =>
      Number(m[1]),
    ),
  );
  t.true(lastLegend > 480, 'twenty series need more than the usual height');
  t.true(lastLegend < height);
});

test('a ratio just under its target keeps its label clear of the target mark', (t) => {
  const f = ratioAtLeast(
    figure('production', 'jobs printed + webhook', 'jobs/s', [522, 448, 618], {
      label: 'BullMQ add → processed',
      unit: 'jobs/s',
      values: [1966, 1966, 1966],
    }),
    0.3,
  );
  const svg = renderChart([f], [], 'Spool');
  const label = /<text x="([\d.]+)" y="([\d.]+)"[^>]*>0\.27×<\/text>/.exec(svg);
  const mark =
    /<line x1="([\d.]+)" y1="([\d.]+)" x2="[\d.]+" y2="([\d.]+)" stroke="#000" stroke-width="2.5"\/>/.exec(
      svg,
    );
  t.truthy(label, 'the ratio is labelled');
  t.truthy(mark, 'the target is marked');
  const [labelX, labelBaseline] = [Number(label?.[1]), Number(label?.[2])];
  const [markX, markTop] = [Number(mark?.[1]), Number(mark?.[2])];
  // The mark crosses the label's horizontal span here, so it must start below the label's line.
  t.true(
    markX > labelX && markX < labelX + 30,
    'the case this test is about: the mark under the label',
  );
  t.true(
    markTop > labelBaseline,
    `the mark (top ${markTop}) runs through the label (baseline ${labelBaseline})`,
  );
});
