/**
 * Latency at a fixed rate: jobs posted at half the end-to-end maximum (an open loop, each POST
 * timed from when it was due) to the connected agents' printers, for the run's length: a load the
 * system keeps up with, so the latencies are a healthy deployment's and not a queue's. POST latency
 * p50/p99/p99.9 beside an unloaded SERIALIZABLE single-insert transaction (one connection);
 * POST → printed and POST → webhook beside BullMQ add → processed at the same rate. POST → offer
 * at the agent (dispatch) is logged and kept in the details.
 */
import type { Context, Orgs } from '../context.js';
import { PATHS } from '../context.js';
import { type Figure, figure, valueAtMost } from '../report/figures.js';
import { requireFewErrors, ShortfallError } from '../shortfall.js';
import { latency } from '../stats.js';
import { withoutWebhook } from './e2e.js';

const SETTLE_MS = 20_000;
/** The share of the end-to-end maximum the jobs are posted at. */
export const SHARE_OF_E2E_MAXIMUM = 0.5;

export interface FixedRateResult {
  figures: Figure[];
  rate: number;
  samples: { post: number[]; printed: number[]; webhook: number[]; peer: number[] };
  details: Record<string, unknown>;
}

/** Runs at {@link SHARE_OF_E2E_MAXIMUM} of `e2eMaximum`, the end-to-end jobs/s measured before. */
export async function runFixedRate(
  ctx: Context,
  orgs: Orgs,
  e2eMaximum: number,
): Promise<FixedRateResult> {
  if (!(e2eMaximum > 0)) {
    throw new ShortfallError(`fixed rate: no end-to-end maximum to run at half of (${e2eMaximum})`);
  }
  const rate = Math.max(1, Math.round(e2eMaximum * SHARE_OF_E2E_MAXIMUM));
  const { load, checks, runMs, bullWorker, bullProducer, agents } = ctx;
  const redis = ctx.servers.redis;
  const queue = 'bench-fixed-rate';
  await bullWorker.call('startWorker', { redis, queue, concurrency: 64 });
  const rows = {
    txP50: [] as number[],
    txP99: [] as number[],
    txP999: [] as number[],
    peerP50: [] as number[],
    peerP99: [] as number[],
    postP50: [] as number[],
    postP99: [] as number[],
    postP999: [] as number[],
    printedP50: [] as number[],
    printedP99: [] as number[],
    webhookP50: [] as number[],
    webhookP99: [] as number[],
    dispatchP50: [] as number[],
    dispatchP99: [] as number[],
    missing: [] as number[],
  };
  const samples: FixedRateResult['samples'] = { post: [], printed: [], webhook: [], peer: [] };
  const middle = Math.ceil(ctx.options.repeats / 2);
  for (let run = 1; run <= ctx.options.repeats; run++) {
    const tx = await ctx.ceilings.call('pgInsertRate', {
      databaseUrl: ctx.servers.databaseUrl,
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
    const res = await load.call('openLoop', {
      target: orgs.e2e,
      rate,
      durationMs: runMs,
      connections: 64,
    });
    const ok = res.jobs.filter((j) => j.id);
    const ids = ok.map((j) => j.id);
    const arrivals = await load.call('collect', {
      path: PATHS.e2e,
      count: ok.length,
      timeoutMs: SETTLE_MS,
    });
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
      'fixed rate: jobs printed with their webhook',
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
    rows.missing.push(res.jobs.length - webhook.length);
    if (run === middle) Object.assign(samples, { post, printed, webhook, peer: peer.latencies });
    ctx.log(
      `fixed rate ${run} (${rate}/s): POST p50 ${postL.p50.toFixed(1)} p99 ${postL.p99.toFixed(1)} p99.9 ${postL.p999.toFixed(1)} ms; ` +
        `printed p50 ${printedL.p50.toFixed(1)} p99 ${printedL.p99.toFixed(1)} ms; webhook p50 ${webhookL.p50.toFixed(1)} ms; ` +
        `offer p99 ${dispatchL.p99.toFixed(1)} ms; ${res.jobs.length - ok.length} failed, ${res.jobs.length - webhook.length} without webhook; ` +
        `BullMQ p50 ${peerL.p50.toFixed(1)} p99 ${peerL.p99.toFixed(1)} ms; unloaded insert tx p50 ${txL.p50.toFixed(2)} ms`,
    );
    await checks.quiesce();
  }
  await bullWorker.call('stopWorker');

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
  const name = (what: string) => `${what} at ${rate}/s (half the end-to-end maximum)`;
  return {
    figures: [
      figure('fixed rate', name('POST p50'), 'ms', rows.postP50, tx('p50', rows.txP50)),
      valueAtMost(
        figure('fixed rate', name('POST p99'), 'ms', rows.postP99, tx('p99', rows.txP99)),
        25,
        '≤ 25 ms',
      ),
      figure('fixed rate', name('POST p99.9'), 'ms', rows.postP999, tx('p99.9', rows.txP999)),
      valueAtMost(
        figure(
          'fixed rate',
          name('POST → printed p50'),
          'ms',
          rows.printedP50,
          peer('p50', rows.peerP50),
        ),
        20,
        '≤ 20 ms',
      ),
      figure(
        'fixed rate',
        name('POST → printed p99'),
        'ms',
        rows.printedP99,
        peer('p99', rows.peerP99),
      ),
      figure(
        'fixed rate',
        name('POST → webhook p50'),
        'ms',
        rows.webhookP50,
        peer('p50', rows.peerP50),
      ),
    ],
    rate,
    samples,
    details: { ...rows, rate, e2eMaximum },
  };
}
