/**
 * Latency at a fixed rate: jobs posted at half the end-to-end maximum of the Spool under test (an
 * open loop, each POST timed from when it was due) to its connected agents' printers, for the
 * run's length: a load the system keeps up with, so the latencies are a healthy deployment's and
 * not a queue's. POST latency p50/p99/p99.9 beside an unloaded SERIALIZABLE single-insert
 * transaction (one connection, on the same database, just before each run), its p99 judged at
 * most {@link POST_P99_AT_MOST} times the transaction's; POST → printed and POST → webhook beside
 * BullMQ add → processed at the same rate, POST → printed p50 judged at most
 * {@link PRINTED_P50_AT_MOST} times BullMQ's. POST → offer at the agent (dispatch) is logged and
 * kept in the details. Spool's CPU per printed and delivered job at this rate is shown beside its
 * CPU per job at the maximum: a job costs more when fewer arrive together, so half the rate is
 * more than half the work. It runs against `spool dev` and, while it is up, the production
 * deployment.
 */
import type { AgentsApi } from '../agents.js';
import type { Checks } from '../checks.js';
import { type Context, type Orgs, PATHS } from '../context.js';
import type { Child } from '../ipc.js';
import type { JobTarget } from '../jobs-client.js';
import { startCpuMeter } from '../proc.js';
import { type Figure, figure, figureAgainstMedian, ratioAtMost } from '../report/figures.js';
import { requireFewErrors, ShortfallError } from '../shortfall.js';
import { latency } from '../stats.js';
import { withoutWebhook } from './e2e.js';

const SETTLE_MS = 20_000;
/** The share of the end-to-end maximum the jobs are posted at. */
export const SHARE_OF_E2E_MAXIMUM = 0.5;
/** The targets, as multiples of the references measured in the same runs. */
export const POST_P99_AT_MOST = 10;
export const PRINTED_P50_AT_MOST = 10;

/** The Spool the jobs go to, and how its figures and log lines are named. */
export interface FixedRateSpec {
  /** The scenario column of its figures. */
  scenario: string;
  /** What its log lines and its shortfall messages begin with. */
  name: string;
  target: JobTarget;
  /** On the Spool's own database and NATS. */
  checks: Checks;
  /** The agents of `target`'s printers, which note when each offer came. */
  agents: Child<AgentsApi>;
  /** Where the target organization's `job.printed` webhooks arrive. */
  webhookPath: string;
  /** The Spool's database, where the unloaded insert transaction is timed. */
  databaseUrl: string;
  /** The BullMQ queue of the peer measured beside it. */
  queue: string;
  /** This Spool's end-to-end jobs/s, measured before; the jobs go at half of it. */
  maximum: number;
  /** What the figures' labels call that maximum, e.g. `the end-to-end maximum`. */
  maximumText: string;
  /** Spool's processes, whose CPU time is counted (undefined pid: not known, not counted). */
  processes: Array<{ name: string; pid: number | undefined }>;
  /** Spool's CPU per printed and delivered job at that maximum, run by run (ms). */
  cpuAtMaximum: number[];
}

export interface FixedRateResult {
  figures: Figure[];
  rate: number;
  samples: { post: number[]; printed: number[]; webhook: number[]; peer: number[] };
  details: Record<string, unknown>;
}

/** Each run's percentiles, in milliseconds, and its jobs without a webhook. */
export type FixedRateRows = Record<
  | 'txP50'
  | 'txP99'
  | 'txP999'
  | 'peerP50'
  | 'peerP99'
  | 'postP50'
  | 'postP99'
  | 'postP999'
  | 'printedP50'
  | 'printedP99'
  | 'webhookP50'
  | 'webhookP99'
  | 'dispatchP50'
  | 'dispatchP99'
  | 'cpuPerJob'
  | 'missing',
  number[]
>;

/**
 * The figures of a fixed-rate run's rows, each labelled with `at` (the rate, and what it is half
 * of): the targets are ratios to the references measured in the same runs. The CPU per job is set
 * beside `cpuAtMaximum`'s median, measured in other runs (none known: shown alone).
 */
export function fixedRateFigures(
  scenario: string,
  at: string,
  rows: FixedRateRows,
  cpuAtMaximum: number[] = [],
): Figure[] {
  const tx = (p: string, values: number[]) => ({
    label: `unloaded insert tx ${p}`,
    unit: 'ms',
    values,
  });
  const peer = (p: string, values: number[]) => ({
    label: `BullMQ add → processed ${p} at the same rate`,
    unit: 'ms',
    values,
  });
  const ms = (what: string, values: number[], reference: ReturnType<typeof tx>) =>
    figure(scenario, `${what} at ${at}`, 'ms', values, reference);
  return [
    ms('POST p50', rows.postP50, tx('p50', rows.txP50)),
    ratioAtMost(ms('POST p99', rows.postP99, tx('p99', rows.txP99)), POST_P99_AT_MOST),
    ms('POST p99.9', rows.postP999, tx('p99.9', rows.txP999)),
    ratioAtMost(
      ms('POST → printed p50', rows.printedP50, peer('p50', rows.peerP50)),
      PRINTED_P50_AT_MOST,
    ),
    ms('POST → printed p99', rows.printedP99, peer('p99', rows.peerP99)),
    ms('POST → webhook p50', rows.webhookP50, peer('p50', rows.peerP50)),
    cpuAtMaximum.some(Number.isFinite)
      ? figureAgainstMedian(scenario, `${CPU_LABEL} at ${at}`, 'ms', rows.cpuPerJob, {
          label: 'the same at the maximum',
          unit: 'ms',
          values: cpuAtMaximum,
        })
      : figure(scenario, `${CPU_LABEL} at ${at}`, 'ms', rows.cpuPerJob),
  ];
}

const CPU_LABEL = 'Spool CPU per printed and delivered job';

/**
 * The scenario on `spool dev`: the end-to-end organization, at half `maximum`, where a job cost
 * `cpuAtMaximum`.
 */
export function devFixedRate(
  ctx: Context,
  orgs: Orgs,
  maximum: number,
  cpuAtMaximum: number[],
): FixedRateSpec {
  return {
    scenario: 'fixed rate',
    name: 'fixed rate',
    target: orgs.e2e,
    checks: ctx.checks,
    agents: ctx.agents,
    webhookPath: PATHS.e2e,
    databaseUrl: ctx.servers.databaseUrl,
    queue: 'bench-fixed-rate',
    maximum,
    maximumText: 'the end-to-end maximum',
    processes: [{ name: 'spool dev', pid: ctx.servers.spoolPid }],
    cpuAtMaximum,
  };
}

/** Runs at {@link SHARE_OF_E2E_MAXIMUM} of `spec.maximum`. */
export async function runFixedRate(ctx: Context, spec: FixedRateSpec): Promise<FixedRateResult> {
  if (!(spec.maximum > 0)) {
    throw new ShortfallError(
      `${spec.name}: no end-to-end maximum to run at half of (${spec.maximum})`,
    );
  }
  const rate = Math.max(1, Math.round(spec.maximum * SHARE_OF_E2E_MAXIMUM));
  const { load, runMs, bullWorker, bullProducer } = ctx;
  const { checks, agents, queue } = spec;
  const redis = ctx.servers.redis;
  await bullWorker.call('startWorker', { redis, queue, concurrency: 64 });
  const rows: FixedRateRows = {
    txP50: [],
    txP99: [],
    txP999: [],
    peerP50: [],
    peerP99: [],
    postP50: [],
    postP99: [],
    postP999: [],
    printedP50: [],
    printedP99: [],
    webhookP50: [],
    webhookP99: [],
    dispatchP50: [],
    dispatchP99: [],
    cpuPerJob: [],
    missing: [],
  };
  const samples: FixedRateResult['samples'] = { post: [], printed: [], webhook: [], peer: [] };
  const middle = Math.ceil(ctx.options.repeats / 2);
  for (let run = 1; run <= ctx.options.repeats; run++) {
    const tx = await ctx.ceilings.call('pgInsertRate', {
      databaseUrl: spec.databaseUrl,
      concurrency: 1,
      durationMs: Math.min(runMs, 3_000),
    });
    const peer = await bullProducer.call('produceAtRate', {
      redis,
      queue,
      rate,
      durationMs: runMs,
      settleMs: SETTLE_MS,
    });
    await checks.quiesce();
    const meters = spec.processes.map((p) => startCpuMeter(p.pid));
    const res = await load.call('openLoop', {
      target: spec.target,
      rate,
      durationMs: runMs,
      connections: 64,
    });
    const ok = res.jobs.filter((j) => j.id);
    const ids = ok.map((j) => j.id);
    const arrivals = await load.call('collect', {
      path: spec.webhookPath,
      count: ok.length,
      timeoutMs: SETTLE_MS,
    });
    // Every job's work is over once its webhook arrived; those that did not are not counted.
    const cpuPerJob = meters.reduce((sum, m) => sum + m.perItemMs(arrivals.length), 0);
    const printedAt = await load.call('printedTimes', { ids });
    const offeredAt = await agents.call('offerTimes', { ids });
    const webhookAt = new Map(arrivals.map((a) => [a.jobId, a.at]));
    const since = (times: Array<number | null | undefined>) =>
      ok.map((j, i) => (times[i] ?? Number.NaN) - j.sentAt).filter((v) => Number.isFinite(v));
    const post = ok.map((j) => j.answeredAt - j.sentAt);
    const printed = since(printedAt);
    const webhook = since(ids.map((id) => webhookAt.get(id)));
    const dispatch = since(offeredAt);
    requireFewErrors(
      `${spec.name}: jobs printed with their webhook`,
      res.jobs.length,
      res.jobs.length - webhook.length,
      withoutWebhook(res.errors, ok.length - webhook.length, SETTLE_MS),
    );
    const [txL, peerL, postL, printedL, webhookL, dispatchL] = [
      tx.latencies,
      peer.latencies,
      post,
      printed,
      webhook,
      dispatch,
    ].map(latency);
    if (!txL || !peerL || !postL || !printedL || !webhookL || !dispatchL)
      throw new Error('unreachable');
    rows.txP50.push(txL.p50);
    rows.txP99.push(txL.p99);
    rows.txP999.push(txL.p999);
    rows.peerP50.push(peerL.p50);
    rows.peerP99.push(peerL.p99);
    rows.postP50.push(postL.p50);
    rows.postP99.push(postL.p99);
    rows.postP999.push(postL.p999);
    rows.printedP50.push(printedL.p50);
    rows.printedP99.push(printedL.p99);
    rows.webhookP50.push(webhookL.p50);
    rows.webhookP99.push(webhookL.p99);
    rows.dispatchP50.push(dispatchL.p50);
    rows.dispatchP99.push(dispatchL.p99);
    rows.cpuPerJob.push(cpuPerJob);
    rows.missing.push(res.jobs.length - webhook.length);
    if (run === middle) Object.assign(samples, { post, printed, webhook, peer: peer.latencies });
    ctx.log(
      `${spec.name} ${run} (${rate}/s): POST p50 ${postL.p50.toFixed(1)} p99 ${postL.p99.toFixed(1)} p99.9 ${postL.p999.toFixed(1)} ms; ` +
        `printed p50 ${printedL.p50.toFixed(1)} p99 ${printedL.p99.toFixed(1)} ms; webhook p50 ${webhookL.p50.toFixed(1)} ms; ` +
        `offer p99 ${dispatchL.p99.toFixed(1)} ms; ${res.jobs.length - ok.length} failed, ${res.jobs.length - webhook.length} without webhook; ` +
        `BullMQ p50 ${peerL.p50.toFixed(1)} p99 ${peerL.p99.toFixed(1)} ms; unloaded insert tx p50 ${txL.p50.toFixed(2)} ms; ` +
        `Spool CPU ${cpuPerJob.toFixed(2)} ms per job`,
    );
    await checks.quiesce();
  }
  await bullWorker.call('stopWorker');

  return {
    figures: fixedRateFigures(
      spec.scenario,
      `${rate}/s (half ${spec.maximumText})`,
      rows,
      spec.cpuAtMaximum,
    ),
    rate,
    samples,
    details: { ...rows, rate, maximum: spec.maximum, cpuAtMaximum: spec.cpuAtMaximum },
  };
}
