/**
 * Reads V8 CPU profiles (`.cpuprofile`, as `node --cpu-prof` writes them; `npm run bench --
 * --cpu-prof DIR` runs Spool that way) and prints where the time went: the functions with the
 * most self time, the functions with the most inclusive time (each counted once per sample
 * however deep it recurses), and self time by module (a package, a folder of this repository,
 * Node's internals, or the garbage collector).
 *
 *   node --import tsx bench/profile-top.ts FILE.cpuprofile... [--top N] [--from S] [--to S]
 *     [--busiest S] [--callers TEXT [--depth N]] [--timeline S]
 *
 * `--from` and `--to` keep only the samples taken that many seconds after the profile started
 * (a whole run's profile includes start-up and the harness's pauses), and `--busiest S` keeps the
 * busiest S seconds, found by sliding a window over the samples. `--callers TEXT` adds who called
 * the functions whose name or place contains TEXT (`--depth N` frames up, 3 by default), and how
 * much time they took below them. `--timeline S` first prints the busy share of every S seconds.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const ROOT = process.cwd();

function shortUrl(url: string): string {
  if (!url) return '';
  const path = url.startsWith('file://') ? decodeURIComponent(url.slice(7)) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) return path.slice(nm + '/node_modules/'.length);
  return path.startsWith('/') ? relative(ROOT, path) : path;
}

function functionKey(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  const url = shortUrl(frame.url);
  return url ? `${name} ${url}:${frame.lineNumber + 1}` : name;
}

/** The module a frame belongs to: a package, a folder of this repository, or Node's internals. */
function moduleKey(frame: CallFrame): string {
  const url = shortUrl(frame.url);
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  if (frame.url.includes('/node_modules/')) {
    const parts = url.split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  const parts = url.split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : (parts[0] ?? url);
}

/** Time spent not running JavaScript for Spool: waiting, or V8's own bookkeeping. */
const IDLE = new Set(['(idle)', '(root)', '(program)']);

interface Totals {
  /** With `--callers`: the functions matching it, keyed by their caller chain. */
  callersOf: string | undefined;
  callerDepth: number;
  callers: Map<string, number>;
  wallMs: number;
  sampledMs: number;
  idleMs: number;
  self: Map<string, number>;
  inclusive: Map<string, number>;
  modules: Map<string, number>;
}

function add(map: Map<string, number>, key: string, ms: number): void {
  map.set(key, (map.get(key) ?? 0) + ms);
}

interface Window {
  fromMs: number;
  toMs: number;
}

/** Each sample's time since the profile started, in milliseconds. */
function sampleTimes(profile: Profile): number[] {
  const times: number[] = [];
  let t = 0;
  for (const delta of profile.timeDeltas) {
    t += delta / 1000;
    times.push(t);
  }
  return times;
}

/** The `lengthMs` window with the fewest idle samples. */
function busiest(profile: Profile, lengthMs: number): Window {
  const idle = new Set(
    profile.nodes.filter((n) => IDLE.has(n.callFrame.functionName)).map((n) => n.id),
  );
  const times = sampleTimes(profile);
  let best = { fromMs: 0, toMs: lengthMs, busy: -1 };
  let busy = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    if (!idle.has(profile.samples[end] as number)) busy++;
    while ((times[end] as number) - (times[start] as number) > lengthMs) {
      if (!idle.has(profile.samples[start] as number)) busy--;
      start++;
    }
    if (busy > best.busy)
      best = { fromMs: times[start] as number, toMs: times[end] as number, busy };
  }
  return { fromMs: best.fromMs, toMs: best.toMs };
}

/**
 * Adds the sample to the caller chains (`--depth` frames up, innermost first) of the first frame on
 * its stack whose key contains `--callers`.
 */
function addCallers(
  totals: Totals,
  leaf: ProfileNode,
  byId: Map<number, ProfileNode>,
  parent: Map<number, number>,
  ms: number,
): void {
  const needle = totals.callersOf as string;
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const node = byId.get(id);
    if (!node || !functionKey(node.callFrame).includes(needle)) continue;
    const chain: string[] = [];
    for (
      let up = parent.get(id);
      up !== undefined && chain.length < totals.callerDepth;
      up = parent.get(up)
    ) {
      const caller = byId.get(up);
      if (caller && caller.callFrame.functionName !== '(root)')
        chain.push(functionKey(caller.callFrame));
    }
    add(totals.callers, `${functionKey(node.callFrame)}  ←  ${chain.join('  ←  ')}`, ms);
    return;
  }
}

/** Busy share of each `bucketMs` of the profile, as a line per bucket. */
function timeline(profile: Profile, bucketMs: number): string {
  const idle = new Set(
    profile.nodes.filter((n) => IDLE.has(n.callFrame.functionName)).map((n) => n.id),
  );
  const times = sampleTimes(profile);
  const busy: number[] = [];
  const all: number[] = [];
  for (let i = 0; i < times.length; i++) {
    const b = Math.floor((times[i] as number) / bucketMs);
    all[b] = (all[b] ?? 0) + 1;
    if (!idle.has(profile.samples[i] as number)) busy[b] = (busy[b] ?? 0) + 1;
  }
  const lines = ['  from s  busy'];
  for (let b = 0; b < all.length; b++) {
    const share = (busy[b] ?? 0) / Math.max(1, all[b] ?? 0);
    lines.push(
      `${((b * bucketMs) / 1000).toFixed(0).padStart(8)}  ${(100 * share).toFixed(0).padStart(3)}% ${'#'.repeat(Math.round(share * 40))}`,
    );
  }
  return lines.join('\n');
}

function accumulate(profile: Profile, totals: Totals, window?: Window): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const { samples, timeDeltas } = profile;
  const times = sampleTimes(profile);
  totals.wallMs += window
    ? window.toMs - window.fromMs
    : (profile.endTime - profile.startTime) / 1000;
  for (let i = 0; i < samples.length; i++) {
    const t = times[i] as number;
    if (window && (t < window.fromMs || t > window.toMs)) continue;
    // A sample lasts until the next one is taken.
    const ms = (timeDeltas[i + 1] ?? timeDeltas[i] ?? 0) / 1000;
    const leaf = byId.get(samples[i] as number);
    if (!leaf) continue;
    totals.sampledMs += ms;
    const leafName = leaf.callFrame.functionName;
    if (IDLE.has(leafName)) {
      totals.idleMs += ms;
      continue;
    }
    add(totals.self, functionKey(leaf.callFrame), ms);
    if (totals.callersOf) addCallers(totals, leaf, byId, parent, ms);
    add(totals.modules, moduleKey(leaf.callFrame), ms);
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id);
      if (!node || node.callFrame.functionName === '(root)') continue;
      const key = functionKey(node.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      add(totals.inclusive, key, ms);
    }
  }
}

function table(title: string, map: Map<string, number>, busyMs: number, top: number): string {
  const rows = [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  const lines = [`${title}`, '     ms   % busy  function'];
  for (const [key, ms] of rows) {
    lines.push(
      `${ms.toFixed(0).padStart(7)}  ${((100 * ms) / busyMs).toFixed(1).padStart(6)}%  ${key}`,
    );
  }
  return lines.join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: {
      top: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      busiest: { type: 'string' },
      callers: { type: 'string' },
      depth: { type: 'string' },
      timeline: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals.length === 0) {
    process.stderr.write(
      'usage: node --import tsx bench/profile-top.ts FILE.cpuprofile... [--top N] [--from S] [--to S] [--busiest S] [--callers TEXT [--depth N]] [--timeline S]\n',
    );
    process.exitCode = 2;
    return;
  }
  const top = Number(values.top ?? 25);
  const totals: Totals = {
    callersOf: values.callers,
    callerDepth: Number(values.depth ?? 3),
    callers: new Map(),
    wallMs: 0,
    sampledMs: 0,
    idleMs: 0,
    self: new Map(),
    inclusive: new Map(),
    modules: new Map(),
  };
  for (const file of positionals) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    let window: Window | undefined;
    if (values.busiest) window = busiest(profile, Number(values.busiest) * 1000);
    else if (values.from || values.to) {
      window = {
        fromMs: Number(values.from ?? 0) * 1000,
        toMs: values.to ? Number(values.to) * 1000 : Number.POSITIVE_INFINITY,
      };
    }
    if (values.timeline) {
      process.stdout.write(`${file}\n${timeline(profile, Number(values.timeline) * 1000)}\n\n`);
    }
    if (window) {
      const to = Number.isFinite(window.toMs) ? (window.toMs / 1000).toFixed(1) : 'end';
      process.stdout.write(
        `${file}: samples from ${(window.fromMs / 1000).toFixed(1)} s to ${to} s\n`,
      );
    }
    accumulate(profile, totals, window);
  }
  const busyMs = totals.sampledMs - totals.idleMs;
  process.stdout.write(
    [
      `${positionals.length} profile(s): ${(totals.wallMs / 1000).toFixed(1)} s of wall time, ` +
        `${(busyMs / 1000).toFixed(1)} s busy (${((100 * busyMs) / Math.max(1, totals.sampledMs)).toFixed(0)}% of samples), ` +
        'percentages are of busy time',
      '',
      table('Self time by module', totals.modules, busyMs, top),
      '',
      table('Self time by function', totals.self, busyMs, top),
      '',
      table('Inclusive time by function', totals.inclusive, busyMs, top),
      '',
      ...(totals.callersOf
        ? [table(`Callers of ${totals.callersOf} (inclusive)`, totals.callers, busyMs, top), '']
        : []),
    ].join('\n'),
  );
}

main();
