/** The results as Markdown: the machine, then one table of every figure. */
import type { Machine } from '../machine.js';
import type { Figure } from './figures.js';
import { withSpread } from './format.js';

export interface Results {
  machine: Machine;
  settings: Record<string, unknown>;
  figures: Figure[];
  details: Record<string, unknown>;
  /** Seconds the whole run took. */
  durationS: number;
}

function verdict(f: Figure): string {
  const parts: string[] = [];
  if (f.target) {
    const mark = f.target.met ? '**met**' : '**not met**';
    parts.push(`${mark} (${f.target.runsMet}/${f.target.runs} runs)`);
  }
  if (f.note) parts.push(f.note);
  return parts.join('; ');
}

export function tableMarkdown(figures: Figure[]): string {
  const lines = [
    '| Scenario | Figure | Spool: median (min–max) | Ceiling or peer: median | Ratio: median (min–max) | Target | Verdict |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const f of figures) {
    const ref = f.reference
      ? `${withSpread({ ...f.reference.value, min: f.reference.value.median, max: f.reference.value.median })} ${f.reference.unit} (${f.reference.label})`
      : '—';
    const ratio = f.ratio ? withSpread(f.ratio, 'ratio') : '—';
    const value = `${withSpread(f.value)} ${f.unit}`;
    lines.push(
      `| ${f.scenario} | ${f.label} | ${value} | ${ref} | ${ratio} | ${f.target?.text ?? ''} | ${verdict(f)} |`,
    );
  }
  return lines.join('\n');
}

export function machineMarkdown(m: Machine): string {
  return [
    `- CPU: ${m.cpuModel}, ${m.cpus} cores; memory ${m.memoryGiB} GiB; ${m.os}, Linux ${m.kernel}`,
    `- Node ${m.node}; PostgreSQL ${m.postgres}; nats-server ${m.natsServer}; Redis ${m.redis}`,
    `- Spool at commit ${m.commit}; measured ${m.date}`,
  ].join('\n');
}

export function resultsMarkdown(r: Results, chartFile: string): string {
  const settings = Object.entries(r.settings)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('; ');
  return [
    '# Spool benchmark results',
    '',
    'Written by `npm run bench` (see [docs/performance.md](../../docs/performance.md)). Each figure is',
    'the median of the repeated runs with their min–max spread; a ratio is taken run by run against',
    'the ceiling or peer measured just before that run, on the same machine and the same servers.',
    '',
    machineMarkdown(r.machine),
    `- Settings: ${settings}`,
    `- The whole run took ${Math.round(r.durationS)} s.`,
    '',
    tableMarkdown(r.figures),
    '',
    `![Throughput ratios and latency distributions](${chartFile})`,
    '',
  ].join('\n');
}
