/**
 * Webhook fan-out: an organization with 20 endpoints (each on its own origin, as customers' are)
 * subscribed to `job.created`; a burst of jobs is posted and every event becomes 20 deliveries.
 * Rate: deliveries received ÷ (first delivery → last). Paired run by run with the undici + HMAC
 * ceiling sending the same kind of body to the same receivers with the same limits (Spool's
 * defaults). CPU per delivery: `spool dev`'s from the burst's first POST to the last arrival,
 * the burst's job creations included, over the deliveries that arrived. A burst of 100 jobs, not
 * measured, warms the path up first and sizes the first measured burst.
 */

import { WEBHOOK_DEFAULTS } from '../../services/webhooks/defaults.js';
import type { Context, Orgs } from '../context.js';
import { PATHS } from '../context.js';
import {
  addSplit,
  devParts,
  machineCpuFigure,
  machineCpuRows,
  splitText,
  startMachineCpuMeter,
} from '../machine-cpu.js';
import { startCpuMeter } from '../proc.js';
import { type Figure, figure, ratioAtLeast, requireCheck } from '../report/figures.js';
import { ENDPOINTS_PER_ORG } from '../setup.js';
import { requireFewErrors } from '../shortfall.js';

const SETTLE_MS = 120_000;

export interface FanoutResult {
  figures: Figure[];
  details: Record<string, unknown>;
}

export async function runFanout(ctx: Context, orgs: Orgs): Promise<FanoutResult> {
  const { load, checks, runMs } = ctx;
  const urls = ctx.receiverPorts
    .slice(0, ENDPOINTS_PER_ORG)
    .map((port) => `http://127.0.0.1:${port}${PATHS.ceiling}`);
  const rows = {
    ceiling: [] as number[],
    rate: [] as number[],
    cpuPerDelivery: [] as number[],
    machineCpu: machineCpuRows(),
    jobs: [] as number[],
    deliveries: [] as number[],
    duplicates: [] as number[],
    missing: [] as number[],
  };
  // Each burst lasts about a run's length at the rate of the one before.
  const sized = (rate: number) =>
    Math.min(1_000, Math.max(50, Math.round((rate * (runMs / 1000)) / ENDPOINTS_PER_ORG)));
  ctx.log('fan-out: warming up');
  await checks.quiesce();
  const warm = await burst(ctx, orgs, 100);
  let jobs = sized(warm.rate);
  await checks.quiesce();
  for (let run = 1; run <= ctx.options.repeats; run++) {
    const ceiling = await ctx.ceilings.call('undiciHmacRate', {
      urls,
      inFlight: WEBHOOK_DEFAULTS.concurrency,
      connectionsPerOrigin: WEBHOOK_DEFAULTS.endpointConcurrency,
      durationMs: runMs,
    });
    await load.call('discard', { path: PATHS.ceiling });
    await checks.quiesce();
    const cpu = startCpuMeter(ctx.servers.spoolPid);
    const machineCpu = startMachineCpuMeter(devParts(ctx.servers));
    const { ok, expected, arrivals, rate } = await burst(ctx, orgs, jobs);
    const cpuMs = cpu.perItemMs(arrivals.length);
    const split = machineCpu.perItem(arrivals.length);
    const unique = new Set(arrivals.map((a) => a.deliveryId)).size;
    rows.ceiling.push(ceiling.rate);
    rows.rate.push(rate);
    rows.cpuPerDelivery.push(cpuMs);
    addSplit(rows.machineCpu, split);
    rows.jobs.push(ok);
    rows.deliveries.push(arrivals.length);
    rows.duplicates.push(arrivals.length - unique);
    rows.missing.push(Math.max(0, expected - unique));
    ctx.log(
      `fan-out ${run}: ${rate.toFixed(0)} deliveries/s, ${cpuMs.toFixed(3)} ms of Spool CPU each (${arrivals.length} of ${expected} for ${ok} jobs, ` +
        `${arrivals.length - unique} duplicates; ${splitText(split)}); undici + HMAC ${ceiling.rate.toFixed(0)} req/s`,
    );
    jobs = sized(rate);
    await checks.quiesce();
  }
  const complete = rows.missing.every((m) => m === 0);
  const f = requireCheck(
    ratioAtLeast(
      figure(
        'webhook fan-out',
        `deliveries, ${ENDPOINTS_PER_ORG} endpoints`,
        'deliveries/s',
        rows.rate,
        {
          label: 'undici request() + HMAC-SHA256',
          unit: 'req/s',
          values: rows.ceiling,
        },
      ),
      0.5,
    ),
    complete,
    'every delivery arrived',
  );
  const cpuFigure = figure(
    'webhook fan-out',
    'Spool CPU per delivery, its job creations included',
    'ms',
    rows.cpuPerDelivery,
  );
  const machineFigure = machineCpuFigure('webhook fan-out', 'delivery', rows.machineCpu, {
    text: '0.5 × undici + HMAC',
    rates: rows.ceiling.map((rate) => 0.5 * rate),
  });
  return { figures: [f, cpuFigure, machineFigure], details: rows };
}

/** Posts `count` jobs to the fan-out organization and waits for their deliveries to arrive. */
async function burst(ctx: Context, orgs: Orgs, count: number) {
  const posted = await ctx.load.call('burst', { target: orgs.fanout, count, concurrency: 16 });
  const ok = posted.jobs.filter((j) => j.id).length;
  requireFewErrors('webhook fan-out: POST /jobs', count, count - ok, posted.errors);
  const expected = ok * ENDPOINTS_PER_ORG;
  const arrivals = await ctx.load.call('collect', {
    path: PATHS.fanout,
    count: expected,
    timeoutMs: SETTLE_MS,
  });
  const times = arrivals.map((a) => a.at).sort((a, b) => a - b);
  const first = times[0] ?? 0;
  const last = times[times.length - 1] ?? 0;
  const rate = arrivals.length / Math.max(0.001, (last - first) / 1000);
  return { ok, expected, arrivals, rate };
}
