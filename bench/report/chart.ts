/**
 * The chart beside the table, as a hand-written SVG (no plotting library: two simple panels do
 * not justify a headless renderer and its dependencies, and the text output diffs well). Left:
 * each throughput as a ratio of its ceiling or peer, with the min–max spread and the target.
 * Right: latency distributions as percentile curves (x: 50th to 99.9th percentile on a "nines"
 * scale, y: milliseconds on a log scale), one run's samples each.
 */
import { percentileOfSorted } from '../stats.js';
import type { Figure } from './figures.js';
import { num } from './format.js';

export interface Series {
  label: string;
  samples: number[];
}

const W = 1100;
const MIN_H = 480;
/** Where the legend of the latency curves starts, under the left panel, and its line height. */
const LEGEND = { x: 20, y: 306 };
const LEGEND_LINE = 15;
const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#9467bd',
  '#ff7f0e',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#7f7f7f',
];

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function text(x: number, y: number, body: string, attrs = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(body)}</text>`;
}

/** Bars of ratio figures that carry a ratio target. */
function ratioPanel(figures: Figure[], x0: number, y0: number, w: number, h: number): string[] {
  const bars = figures.filter((f) => f.ratio && f.target?.text.startsWith('≥'));
  const out: string[] = [
    text(
      x0,
      y0 - 14,
      'Throughput ÷ ceiling or peer (median, min–max; | target)',
      'font-weight="bold"',
    ),
  ];
  const labelW = 250;
  const plotW = w - labelW - 20;
  const maxRatio = Math.max(1, ...bars.map((f) => f.ratio?.max ?? 0)) * 1.1;
  const sx = (r: number) => x0 + labelW + (Math.min(r, maxRatio) / maxRatio) * plotW;
  const rowH = Math.min(55, h / Math.max(1, bars.length));
  for (let t = 0; t <= maxRatio + 1e-9; t += maxRatio > 2 ? 0.5 : 0.25) {
    out.push(
      `<line x1="${sx(t)}" y1="${y0}" x2="${sx(t)}" y2="${y0 + rowH * bars.length}" stroke="#eee"/>`,
    );
    out.push(
      text(
        sx(t),
        y0 + rowH * bars.length + 14,
        num(t, 'ratio'),
        'text-anchor="middle" fill="#666"',
      ),
    );
  }
  bars.forEach((f, i) => {
    const y = y0 + i * rowH;
    const r = f.ratio as NonNullable<Figure['ratio']>;
    const min = Number(/≥ ([\d.]+)/.exec(f.target?.text ?? '')?.[1] ?? Number.NaN);
    const color = f.target?.met ? '#2ca02c' : '#d62728';
    // The scenario without its parenthesis (`production (spool serve ×6)`): the label column is narrow.
    const scenario = f.scenario.replace(/ \(.*\)$/, '');
    out.push(text(x0, y + rowH / 2 - 4, `${scenario}: ${f.label}`, 'fill="#222"'));
    out.push(
      text(x0, y + rowH / 2 + 10, `÷ ${f.reference?.label ?? ''}`, 'fill="#666" font-size="10"'),
    );
    out.push(
      `<rect x="${sx(0)}" y="${y + rowH * 0.25}" width="${Math.max(0, sx(r.median) - sx(0))}" height="${rowH * 0.5}" fill="${color}" opacity="0.75"/>`,
    );
    out.push(
      `<line x1="${sx(r.min)}" y1="${y + rowH / 2}" x2="${sx(r.max)}" y2="${y + rowH / 2}" stroke="#000"/>`,
    );
    if (Number.isFinite(min)) {
      // From the bar's top down past its bottom: the ratio's label sits above the bar, and a mark
      // reaching up into that line ran through it when the target was close to the median.
      out.push(
        `<line x1="${sx(min)}" y1="${y + rowH * 0.25}" x2="${sx(min)}" y2="${y + rowH * 0.9}" stroke="#000" stroke-width="2.5"/>`,
      );
    }
    out.push(
      text(sx(r.median) + 4, y + rowH * 0.25 - 2, `${num(r.median, 'ratio')}×`, 'font-size="10"'),
    );
  });
  return out;
}

/** Percentile curves of each series, with their legend at `legend`. */
function latencyPanel(
  series: Series[],
  x0: number,
  y0: number,
  w: number,
  h: number,
  legend: { x: number; y: number },
): string[] {
  const out: string[] = [
    text(x0, y0 - 14, 'Latency by percentile (ms, log scale)', 'font-weight="bold"'),
  ];
  const used = series.filter((s) => s.samples.length > 0);
  const all = used.flatMap((s) => s.samples).filter((v) => v > 0);
  if (all.length === 0) return out;
  // Not Math.min(...all): a run's samples can outnumber the arguments a call may take.
  const smallest = all.reduce((a, b) => Math.min(a, b));
  const lo = 10 ** Math.floor(Math.log10(Math.max(0.1, smallest)));
  const hi = 10 ** Math.ceil(Math.log10(all.reduce((a, b) => Math.max(a, b))));
  const nines = (q: number) => -Math.log10(1 - q);
  const maxN = 3;
  const sx = (q: number) => x0 + (nines(q) / maxN) * w;
  const sy = (v: number) =>
    y0 + h - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / Math.log10(hi / lo)) * h;
  for (let d = lo; d <= hi * 1.0001; d *= 10) {
    out.push(`<line x1="${x0}" y1="${sy(d)}" x2="${x0 + w}" y2="${sy(d)}" stroke="#eee"/>`);
    out.push(text(x0 - 6, sy(d) + 4, num(d), 'text-anchor="end" fill="#666"'));
  }
  for (const [q, label] of [
    [0, 'p0'],
    [0.5, 'p50'],
    [0.9, 'p90'],
    [0.99, 'p99'],
    [0.999, 'p99.9'],
  ] as const) {
    out.push(`<line x1="${sx(q)}" y1="${y0}" x2="${sx(q)}" y2="${y0 + h}" stroke="#eee"/>`);
    out.push(text(sx(q), y0 + h + 14, label, 'text-anchor="middle" fill="#666"'));
  }
  used.forEach((s, i) => {
    const sorted = [...s.samples].sort((a, b) => a - b);
    const points: string[] = [];
    for (let k = 0; k <= 300; k++) {
      const q = 1 - 10 ** (-(k / 300) * maxN);
      const v = percentileOfSorted(sorted, q * 100);
      points.push(`${sx(q).toFixed(1)},${sy(v).toFixed(1)}`);
    }
    const color = COLORS[i % COLORS.length] as string;
    out.push(
      `<polyline points="${points.join(' ')}" fill="none" stroke="${color}" stroke-width="1.6"/>`,
    );
    const ly = legend.y + 8 + i * LEGEND_LINE;
    out.push(
      `<line x1="${legend.x}" y1="${ly}" x2="${legend.x + 18}" y2="${ly}" stroke="${color}" stroke-width="2"/>`,
    );
    out.push(text(legend.x + 22, ly + 4, `${s.label} (n=${s.samples.length})`, 'font-size="10"'));
  });
  return out;
}

export function renderChart(figures: Figure[], series: Series[], title: string): string {
  // Tall enough for the legend, one line per series under the left panel.
  const used = series.filter((s) => s.samples.length > 0).length;
  const H = Math.max(MIN_H, LEGEND.y + 8 + used * LEGEND_LINE + 10);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    text(20, 24, title, 'font-size="14" font-weight="bold"'),
    ...ratioPanel(figures, 20, 70, 500, 200),
    text(LEGEND.x, LEGEND.y - 6, 'Latency curves (right panel)', 'font-weight="bold"'),
    ...latencyPanel(series, 600, 70, 470, 340, LEGEND),
    '</svg>',
  ];
  return `${parts.join('\n')}\n`;
}
