/**
 * The pool scenario's judgement of what the simulated stations printed, kept apart from the
 * processes so it can be tested alone: which printer printed each job and how often, which jobs
 * moved off the member that failed and how long after the fault each printed elsewhere, and the
 * shortfalls that end the run (bench/shortfall.ts): jobs that did not print, jobs printed twice,
 * no job moved.
 */
import type { PrintedResult } from '../agents.js';
import { ShortfallError } from '../shortfall.js';

const count = (n: number) => n.toLocaleString('en');

/** Each job's printed results, by job id, in the order the stations sent them. */
export function printedPerJob(results: readonly PrintedResult[]): Map<string, PrintedResult[]> {
  const out = new Map<string, PrintedResult[]>();
  for (const r of results) {
    const seen = out.get(r.jobId);
    if (seen) seen.push(r);
    else out.set(r.jobId, [r]);
  }
  return out;
}

/**
 * Throws when any job printed more than once (at one printer or at two): a pool job prints only
 * once a station's claim is accepted, so a second print is a fault of Spool's, whatever the figures.
 */
export function requirePrintedOnce(
  what: string,
  printed: ReadonlyMap<string, readonly PrintedResult[]>,
): void {
  const twice = [...printed.entries()].filter(([, results]) => results.length > 1);
  if (twice.length === 0) return;
  const [jobId, results] = twice[0] as [string, PrintedResult[]];
  throw new ShortfallError(
    `${what}: ${count(twice.length)} of ${count(printed.size)} jobs printed more than once ` +
      `(job ${jobId} ${results.length} times, by printers ${results.map((r) => r.printerId).join(', ')})`,
  );
}

export interface FailoverRun {
  /** Jobs that printed at another member after the fault: they moved. */
  moved: number;
  /** Jobs that printed before the fault (routed elsewhere when created). */
  before: number;
  /** Jobs that printed at the member that failed, after its fault. */
  atFaulty: number;
  /** Jobs that did not print. */
  unprinted: number;
  /** Per moved job: the fault → its `job.printed` event, in ms. */
  times: number[];
  /** Moved jobs whose `job.printed` event was not seen, timed by the station's result instead. */
  withoutEvent: number;
  /** Moved jobs that printed before failover_after had passed since the fault. */
  early: number;
}

/**
 * Where each of `ids` printed relative to the fault of printer `faulty` at `faultAt` (harness
 * clock), and, for each that printed at another member after it, the time from the fault to its
 * `job.printed` event (`printedAt`, in the order of `ids`; null when none was seen, then the
 * station's own result time, which is a little earlier, stands in). A job may not move before the
 * pool's `failoverAfterMs`: those that did are counted.
 */
export function failoverRun(p: {
  ids: readonly string[];
  faulty: string;
  faultAt: number;
  failoverAfterMs: number;
  printed: ReadonlyMap<string, readonly PrintedResult[]>;
  printedAt: ReadonlyArray<number | null>;
}): FailoverRun {
  const run: FailoverRun = {
    moved: 0,
    before: 0,
    atFaulty: 0,
    unprinted: 0,
    times: [],
    withoutEvent: 0,
    early: 0,
  };
  p.ids.forEach((id, i) => {
    const first = p.printed.get(id)?.[0];
    if (!first) run.unprinted++;
    else if (first.at < p.faultAt) run.before++;
    else if (first.printerId === p.faulty) run.atFaulty++;
    else {
      run.moved++;
      const event = p.printedAt[i] ?? null;
      if (event === null) run.withoutEvent++;
      const ms = (event ?? first.at) - p.faultAt;
      if (ms < p.failoverAfterMs) run.early++;
      run.times.push(ms);
    }
  });
  return run;
}

/**
 * Throws unless the failover ran as designed: every job printed, and at least one of them moved
 * off the member that failed to print at another.
 */
export function requireFailover(what: string, posted: number, run: FailoverRun): void {
  if (run.unprinted > 0) {
    throw new ShortfallError(
      `${what}: jobs printed: ${count(posted - run.unprinted)} of the ${count(posted)} asked for`,
    );
  }
  if (run.moved === 0) {
    throw new ShortfallError(
      `${what}: no job moved off the member that failed (${count(run.before)} printed before the ` +
        `fault, ${count(run.atFaulty)} at the failed member after it)`,
    );
  }
}

/** Jobs printed a second, counting each job whose `job.printed` event was seen. */
export function printedRate(
  startedAt: number,
  printedAt: ReadonlyArray<number | null>,
): { printed: number; rate: number } {
  let printed = 0;
  let last = startedAt;
  for (const at of printedAt) {
    if (at === null) continue;
    printed++;
    if (at > last) last = at;
  }
  return { printed, rate: printed / ((last - startedAt) / 1000) };
}
