/**
 * End to end: jobs posted to the printers of `--agents` simulated agents that print to a discard
 * backend, keeping 64 jobs between their POST and their `job.printed` webhook, for the run's
 * length. Rate: jobs whose webhook arrived ÷ (first POST → last webhook). Each job is timed from
 * its POST to its `job.printed` event reaching NATS (the printed state committed) and to its
 * webhook reaching the receiver. Paired run by run with BullMQ (add → worker processed, 64 in
 * flight) on a Redis that fsyncs every write. After each run the harness checks every job is
 * `printed` in the database and its event and its reports are stored in the streams. Its Spool CPU
 * per job is judged against PostgreSQL's CPU per job over the same runs; the rate beside BullMQ's
 * is shown without a target.
 *
 * {@link runPipeline} is that load and those checks against any Spool: `spool dev` here, Spool
 * deployed as in production in the production scenario.
 */
import type { Checks, DbCounters } from '../checks.js';
import { perJob } from '../checks.js';
import { sleep } from '../clock.js';
import type { Context, Orgs } from '../context.js';
import { PATHS } from '../context.js';
import type { JobTarget } from '../jobs-client.js';
import {
  addSplit,
  machineCpuFigure,
  machineCpuRows,
  splitText,
  startMachineCpuMeter,
} from '../machine-cpu.js';
import { startCpuMeter } from '../proc.js';
import {
  addNote,
  type Figure,
  figure,
  figureAgainstMedian,
  ratioAtLeast,
  ratioAtMost,
  requireCheck,
} from '../report/figures.js';
import { requireFewErrors } from '../shortfall.js';
import { finiteMedian, latency } from '../stats.js';

export const WINDOW = 64;
const SETTLE_MS = 30_000;
/**
 * Load before the measured runs, Spool's and BullMQ's alike, unmeasured. Freshly started
 * processes spend their first seconds compiling their hot paths and opening connections: with
 * 1.5 s of it, the production scenario's first run cost half as much CPU per job again as its
 * third, and `spool dev`'s a quarter more when run on its own.
 */
const WARM_UP_MS = 10_000;
/** The length of the run that finds the end-to-end maximum when the scenario itself is not run. */
const PROBE_MS = 5_000;

/** The targets of `spool serve` ×6 against `spool dev` in the same bench run. */
export const PRODUCTION_CPU_AT_MOST = 1.25;
export const PRODUCTION_RATE_AT_LEAST = 0.8;

/** A pipeline's headline values, run by run. */
export interface PipelineRuns {
  /** Jobs printed + webhook a second. */
  rate: number[];
  /** Spool CPU per printed and delivered job, ms. */
  cpuPerJob: number[];
}

export interface E2eResult {
  figures: Figure[];
  runs: PipelineRuns;
  /** Samples of the middle run, for the chart. */
  samples: { printed: number[]; webhook: number[]; peer: number[] };
  details: Record<string, unknown>;
}

/** The Spool a pipeline runs against, and how its figures and log lines are named. */
export interface PipelineSpec {
  /** The scenario column of its figures. */
  scenario: string;
  /** What its log lines begin with. */
  name: string;
  target: JobTarget;
  /** On the Spool's own database and NATS. */
  checks: Checks;
  /** Where the target organization's `job.printed` webhooks arrive. */
  webhookPath: string;
  /** The BullMQ queue of the peer measured beside it. */
  queue: string;
  /** Spool's processes, whose CPU time is counted (undefined pid: not known, not counted). */
  processes: Array<{ name: string; pid: number | undefined }>;
  /** The PostgreSQL and nats-server it runs on, for the split of the machine's CPU. */
  postgresPid: number | undefined;
  natsPid: number | undefined;
  /**
   * What the rate and the CPU per job are judged against: `postgres`, Spool's CPU per job against
   * PostgreSQL's in the same runs (`spool dev`); `dev`, both against `spool dev`'s end-to-end
   * figures of the same bench run (production), which are undefined when that scenario was not
   * run: the figures then stand without a target.
   */
  judge: { against: 'postgres' } | { against: 'dev'; dev: PipelineRuns | undefined };
}

/** A pipeline run's jobs whose webhook arrived, and its rate: those ÷ (first POST → last webhook). */
function completed<J extends { id: string; webhookAt?: number }>(res: {
  jobs: J[];
  startedAt: number;
}): { done: J[]; rate: number } {
  const done = res.jobs.filter((j) => j.id && j.webhookAt !== undefined);
  const lastWebhook = done.reduce((last, j) => Math.max(last, j.webhookAt as number), 0);
  return { done, rate: done.length / ((lastWebhook - res.startedAt) / 1000) };
}

/**
 * The end-to-end maximum from one short run after another that warms the path up, unpaired and
 * unchecked, for the fixed-rate scenario when the end-to-end scenario was not asked for.
 */
export async function probeE2eRate(ctx: Context, orgs: Orgs): Promise<PipelineRuns> {
  const run = () =>
    ctx.load.call('pipeline', {
      target: orgs.e2e,
      window: WINDOW,
      durationMs: PROBE_MS,
      settleMs: SETTLE_MS,
      webhookPath: PATHS.e2e,
    });
  // A fresh process's first seconds are slower (see WARM_UP_MS): the first run only warms it up.
  await run();
  const cpu = startCpuMeter(ctx.servers.spoolPid);
  const { rate, done } = completed(await run());
  const cpuPerJob = cpu.perItemMs(done.length);
  await ctx.load.call('printedTimes', { ids: [] });
  await ctx.checks.quiesce();
  ctx.log(
    `end-to-end maximum: ${rate.toFixed(0)} jobs/s, Spool CPU ${cpuPerJob.toFixed(2)} ms per job`,
  );
  return { rate: [rate], cpuPerJob: [cpuPerJob] };
}

/** What went wrong with a run's jobs: the POSTs' errors, and those whose webhook never came. */
export function withoutWebhook(errors: string[], missing: number, settleMs: number): string[] {
  return missing > 0
    ? [...errors, `${missing} posted without their webhook within ${settleMs / 1000} s`]
    : errors;
}

export function runE2e(ctx: Context, orgs: Orgs): Promise<E2eResult> {
  return runPipeline(ctx, {
    scenario: 'end to end',
    name: 'end to end',
    target: orgs.e2e,
    checks: ctx.checks,
    webhookPath: PATHS.e2e,
    queue: 'bench-e2e',
    processes: [{ name: 'spool dev', pid: ctx.servers.spoolPid }],
    postgresPid: ctx.servers.postgresPid,
    natsPid: ctx.servers.natsPid,
    judge: { against: 'postgres' },
  });
}

/** What {@link headlineFigures} judges, run by run. */
export interface HeadlineRuns extends PipelineRuns {
  /** BullMQ add → processed a second, measured just before each run. */
  peer: number[];
  /** PostgreSQL's CPU per printed and delivered job, ms (NaN: not known). */
  postgresCpuPerJob: number[];
  /** Whether every job of the run was printed in the DB and stored in the streams. */
  durable: boolean[];
  /** Jobs without a webhook in time. */
  incomplete: number[];
}

/**
 * A pipeline's rate and Spool CPU per job, judged as `judge` says, and the rate the machine's CPU
 * per job is set beside. The durability check goes with the rate and with every target.
 */
export function headlineFigures(
  scenario: string,
  judge: PipelineSpec['judge'],
  runs: HeadlineRuns,
): { rate: Figure; cpu: Figure; machineAt: { text: string; rates: number[] } } {
  const rateLabel = 'jobs printed + webhook';
  const cpuLabel = 'Spool CPU per printed and delivered job';
  const peer = { label: 'BullMQ add → processed', unit: 'jobs/s', values: runs.peer };
  let rate: Figure;
  let cpu: Figure;
  let machineAt = { text: "BullMQ's rate", rates: runs.peer };
  if (judge.against === 'postgres') {
    rate = figure(scenario, rateLabel, 'jobs/s', runs.rate, peer);
    cpu = ratioAtMost(
      figure(scenario, cpuLabel, 'ms', runs.cpuPerJob, {
        label: 'PostgreSQL CPU per job',
        unit: 'ms',
        values: runs.postgresCpuPerJob,
      }),
      1,
    );
    if (!runs.postgresCpuPerJob.some(Number.isFinite)) {
      addNote(cpu, "PostgreSQL's CPU not known (no pid)");
    }
  } else if (judge.dev) {
    const dev = { label: '`spool dev` end to end', unit: 'jobs/s', values: judge.dev.rate };
    rate = ratioAtLeast(
      figureAgainstMedian(scenario, rateLabel, 'jobs/s', runs.rate, dev),
      PRODUCTION_RATE_AT_LEAST,
    );
    cpu = ratioAtMost(
      figureAgainstMedian(scenario, cpuLabel, 'ms', runs.cpuPerJob, {
        ...dev,
        unit: 'ms',
        values: judge.dev.cpuPerJob,
      }),
      PRODUCTION_CPU_AT_MOST,
    );
    const devRate = finiteMedian(judge.dev.rate);
    machineAt = {
      text: `${PRODUCTION_RATE_AT_LEAST} × \`spool dev\`'s rate`,
      rates: runs.rate.map(() => PRODUCTION_RATE_AT_LEAST * devRate),
    };
  } else {
    const alone = 'no target: judged only beside the end-to-end scenario of the same run';
    rate = addNote(figure(scenario, rateLabel, 'jobs/s', runs.rate, peer), alone);
    cpu = addNote(figure(scenario, cpuLabel, 'ms', runs.cpuPerJob), alone);
  }
  const durable = runs.durable.every(Boolean);
  const durableText = 'every job printed in the DB and stored in the streams';
  requireCheck(rate, durable, durableText);
  if (cpu.target) requireCheck(cpu, durable, durableText);
  const incomplete = runs.incomplete.reduce((a, b) => a + b, 0);
  if (incomplete > 0) addNote(rate, `${incomplete} jobs without a webhook in time`);
  return { rate, cpu, machineAt };
}

export async function runPipeline(ctx: Context, spec: PipelineSpec): Promise<E2eResult> {
  const { load, runMs, bullWorker, bullProducer } = ctx;
  const { checks, queue, target, webhookPath } = spec;
  const redis = ctx.servers.redis;
  await bullWorker.call('startWorker', { redis, queue, concurrency: WINDOW });
  ctx.log(`${spec.name}: warming up`);
  await bullProducer.call('produce', {
    redis,
    queue,
    window: WINDOW,
    durationMs: WARM_UP_MS,
    settleMs: SETTLE_MS,
  });
  const warm = await load.call('pipeline', {
    target,
    window: WINDOW,
    durationMs: WARM_UP_MS,
    settleMs: SETTLE_MS,
    webhookPath,
  });
  if (warm.timedOut > 0)
    ctx.log(`${spec.name}: ${warm.timedOut} warm-up jobs had no webhook in time`);
  await load.call('printedTimes', { ids: [] });
  await checks.quiesce();

  const rows = {
    peer: [] as number[],
    peerP50: [] as number[],
    peerP99: [] as number[],
    rate: [] as number[],
    cpuPerJob: [] as number[],
    /** Each process's share of cpuPerJob. */
    cpuPerJobByProcess: Object.fromEntries(spec.processes.map((p) => [p.name, [] as number[]])),
    machineCpu: machineCpuRows(),
    printedP50: [] as number[],
    printedP99: [] as number[],
    webhookP50: [] as number[],
    webhookP99: [] as number[],
    incomplete: [] as number[],
    durable: [] as boolean[],
    dbPerJob: [] as DbCounters[],
  };
  const samples: E2eResult['samples'] = { printed: [], webhook: [], peer: [] };
  const middle = Math.ceil(ctx.options.repeats / 2);
  let printedSoFar = await checks.stored('EVENTS', `events.${target.orgId}.job.printed`);
  let reportsSoFar = await checks.stored('REPORTS', `reports.*.${target.orgId}.>`);
  for (let run = 1; run <= ctx.options.repeats; run++) {
    const peer = await bullProducer.call('produce', {
      redis,
      queue,
      window: WINDOW,
      durationMs: runMs,
      settleMs: SETTLE_MS,
    });
    await checks.quiesce();
    const dbBefore = await checks.dbCounters();
    const meters = spec.processes.map((p) => ({ name: p.name, cpu: startCpuMeter(p.pid) }));
    const machineCpu = startMachineCpuMeter({
      spool: spec.processes.flatMap((p) => (p.pid === undefined ? [] : [p.pid])),
      postgres: spec.postgresPid,
      nats: spec.natsPid,
    });
    const res = await load.call('pipeline', {
      target,
      window: WINDOW,
      durationMs: runMs,
      settleMs: SETTLE_MS,
      webhookPath,
    });
    const ok = res.jobs.filter((j) => j.id);
    const ids = ok.map((j) => j.id);
    const printedAt = await load.call('printedTimes', { ids });
    const { done, rate } = completed(res);
    requireFewErrors(
      `${spec.name}: jobs printed with their webhook`,
      res.jobs.length,
      res.jobs.length - done.length,
      withoutWebhook(res.errors, ok.length - done.length, SETTLE_MS),
    );
    // Every job's work is over once its webhook arrived; those that did not are not counted.
    const split = meters.map((m) => ({ name: m.name, ms: m.cpu.perItemMs(done.length) }));
    const machineSplit = machineCpu.perItem(done.length);
    const cpuMs = split.reduce((sum, p) => sum + p.ms, 0);
    const printed = ok
      .map((j, i) => (printedAt[i] ?? Number.NaN) - j.sentAt)
      .filter((v) => Number.isFinite(v));
    const webhook = done.map((j) => (j.webhookAt as number) - j.sentAt);

    // Durable: printed in the database, and its event and its reports stored once each.
    await checks.quiesce();
    await sleep(1_100);
    const db = perJob(dbBefore, await checks.dbCounters(), ok.length);
    const inDb = await checks.printedInDb(ids);
    printedSoFar += ok.length;
    const events = await checks.stored('EVENTS', `events.${target.orgId}.job.printed`);
    const reports = await checks.stored('REPORTS', `reports.*.${target.orgId}.>`);
    // Streams de-duplicate by message id: each job adds exactly one event, and one report or two
    // (a station's `received` goes with its `result` when the result follows within moments).
    const newReports = reports - reportsSoFar;
    const durable =
      inDb === ok.length &&
      events === printedSoFar &&
      newReports >= ok.length &&
      newReports <= 2 * ok.length;
    printedSoFar = events;
    reportsSoFar = reports;

    const pLat = latency(printed);
    const wLat = latency(webhook);
    const peerLat = latency(peer.latencies);
    rows.peer.push(peer.rate);
    rows.peerP50.push(peerLat.p50);
    rows.peerP99.push(peerLat.p99);
    rows.rate.push(rate);
    rows.cpuPerJob.push(cpuMs);
    for (const p of split) rows.cpuPerJobByProcess[p.name]?.push(p.ms);
    addSplit(rows.machineCpu, machineSplit);
    rows.printedP50.push(pLat.p50);
    rows.printedP99.push(pLat.p99);
    rows.webhookP50.push(wLat.p50);
    rows.webhookP99.push(wLat.p99);
    rows.incomplete.push(res.jobs.length - done.length);
    rows.durable.push(durable);
    rows.dbPerJob.push(db);
    if (run === middle) Object.assign(samples, { printed, webhook, peer: peer.latencies });
    const bySplit =
      split.length > 1 ? ` (${split.map((p) => `${p.name} ${p.ms.toFixed(2)}`).join(', ')})` : '';
    ctx.log(
      `${spec.name} ${run}: ${rate.toFixed(0)} jobs/s, ${cpuMs.toFixed(2)} ms of Spool CPU each${bySplit} (${done.length} of ${res.jobs.length} complete; ` +
        `printed p50 ${pLat.p50.toFixed(1)} ms p99 ${pLat.p99.toFixed(1)} ms, webhook p50 ${wLat.p50.toFixed(1)} ms; ` +
        `${inDb}/${ok.length} printed in the DB${durable ? '' : ', NOT DURABLE'}; ${splitText(machineSplit)}; per job ${(newReports / ok.length).toFixed(2)} reports, ${db.commits} commits, ` +
        `${db.inserted} rows inserted, ${db.updated} updated, ${db.deleted} deleted${res.errors.length ? `; ${res.errors[0]}` : ''}); ` +
        `BullMQ ${peer.rate.toFixed(0)} jobs/s (p50 ${peerLat.p50.toFixed(1)} ms${peer.timedOut ? `, ${peer.timedOut} not heard complete` : ''})`,
    );
  }
  await bullWorker.call('stopWorker');

  const {
    rate: rateFigure,
    cpu: cpuFigure,
    machineAt,
  } = headlineFigures(spec.scenario, spec.judge, {
    rate: rows.rate,
    cpuPerJob: rows.cpuPerJob,
    peer: rows.peer,
    postgresCpuPerJob: rows.machineCpu.postgres,
    durable: rows.durable,
    incomplete: rows.incomplete,
  });
  const peerLatency = (p: 'p50' | 'p99', values: number[]) => ({
    label: `BullMQ add → processed ${p}`,
    unit: 'ms',
    values,
  });
  return {
    figures: [
      rateFigure,
      cpuFigure,
      machineCpuFigure(spec.scenario, 'printed and delivered job', rows.machineCpu, machineAt),
      // Two jobs replicas commit more often than one process and fail each other's
      // SERIALIZABLE reads now and then (docs/performance.md): shown so the runs say how much.
      figure(
        spec.scenario,
        'database commits per printed and delivered job',
        'commits',
        rows.dbPerJob.map((d) => d.commits),
      ),
      figure(
        spec.scenario,
        'database rollbacks per printed and delivered job',
        'rollbacks',
        rows.dbPerJob.map((d) => d.rollbacks),
      ),
      figure(
        spec.scenario,
        'POST → printed p50',
        'ms',
        rows.printedP50,
        peerLatency('p50', rows.peerP50),
      ),
      figure(
        spec.scenario,
        'POST → printed p99',
        'ms',
        rows.printedP99,
        peerLatency('p99', rows.peerP99),
      ),
      figure(
        spec.scenario,
        'POST → webhook p50',
        'ms',
        rows.webhookP50,
        peerLatency('p50', rows.peerP50),
      ),
      figure(
        spec.scenario,
        'POST → webhook p99',
        'ms',
        rows.webhookP99,
        peerLatency('p99', rows.peerP99),
      ),
    ],
    runs: { rate: rows.rate, cpuPerJob: rows.cpuPerJob },
    samples,
    details: { ...rows, window: WINDOW, agents: ctx.options.agents },
  };
}
