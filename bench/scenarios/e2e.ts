/**
 * End to end: jobs posted to the printers of `--agents` simulated agents that print to a discard
 * backend, keeping 64 jobs between their POST and their `job.printed` webhook, for the run's
 * length. Rate: jobs whose webhook arrived ÷ (first POST → last webhook). Each job is timed from
 * its POST to its `job.printed` event reaching NATS (the printed state committed) and to its
 * webhook reaching the receiver. Paired run by run with BullMQ (add → worker processed, 64 in
 * flight) on a Redis that fsyncs every write. After each run the harness checks every job is
 * `printed` in the database and its event and both reports are stored in the streams.
 */
import type { DbCounters } from '../checks.js';
import { perJob } from '../checks.js';
import { sleep } from '../clock.js';
import type { Context, Orgs } from '../context.js';
import { PATHS } from '../context.js';
import { startCpuMeter } from '../proc.js';
import { type Figure, figure, ratioAtLeast, requireCheck, valueAtMost } from '../report/figures.js';
import { latency } from '../stats.js';

export const WINDOW = 64;
const SETTLE_MS = 30_000;

export interface E2eResult {
  figures: Figure[];
  /** Samples of the middle run, for the chart. */
  samples: { printed: number[]; webhook: number[]; peer: number[] };
  details: Record<string, unknown>;
}

export async function runE2e(ctx: Context, orgs: Orgs): Promise<E2eResult> {
  const { load, checks, runMs, bullWorker, bullProducer } = ctx;
  const redis = ctx.servers.redis;
  const queue = 'bench-e2e';
  await bullWorker.call('startWorker', { redis, queue, concurrency: WINDOW });
  ctx.log('end to end: warming up');
  await bullProducer.call('produce', {
    redis,
    queue,
    window: WINDOW,
    durationMs: 1_000,
    settleMs: SETTLE_MS,
  });
  const warm = await load.call('pipeline', {
    target: orgs.e2e,
    window: WINDOW,
    durationMs: 1_500,
    settleMs: SETTLE_MS,
    webhookPath: PATHS.e2e,
  });
  if (warm.timedOut > 0)
    ctx.log(`end to end: ${warm.timedOut} warm-up jobs had no webhook in time`);
  await load.call('printedTimes', { ids: [] });
  await checks.quiesce();

  const rows = {
    peer: [] as number[],
    peerP50: [] as number[],
    peerP99: [] as number[],
    rate: [] as number[],
    cpuPerJob: [] as number[],
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
  let printedSoFar = await checks.stored('EVENTS', `events.${orgs.e2e.orgId}.job.printed`);
  let reportsSoFar = await checks.stored('REPORTS', `reports.*.${orgs.e2e.orgId}.>`);
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
    const cpu = startCpuMeter(ctx.servers.spoolPid);
    const res = await load.call('pipeline', {
      target: orgs.e2e,
      window: WINDOW,
      durationMs: runMs,
      settleMs: SETTLE_MS,
      webhookPath: PATHS.e2e,
    });
    const ok = res.jobs.filter((j) => j.id);
    const ids = ok.map((j) => j.id);
    const printedAt = await load.call('printedTimes', { ids });
    const done = ok.filter((j) => j.webhookAt !== undefined);
    const lastWebhook = Math.max(...done.map((j) => j.webhookAt as number));
    const rate = done.length / ((lastWebhook - res.startedAt) / 1000);
    // Every job's work is over once its webhook arrived; those that did not are not counted.
    const cpuMs = cpu.perItemMs(done.length);
    const printed = ok
      .map((j, i) => (printedAt[i] ?? Number.NaN) - j.sentAt)
      .filter((v) => Number.isFinite(v));
    const webhook = done.map((j) => (j.webhookAt as number) - j.sentAt);

    // Durable: printed in the database, and its event and both reports stored once each.
    await checks.quiesce();
    await sleep(1_100);
    const db = perJob(dbBefore, await checks.dbCounters(), ok.length);
    const inDb = await checks.printedInDb(ids);
    printedSoFar += ok.length;
    reportsSoFar += 2 * ok.length;
    const events = await checks.stored('EVENTS', `events.${orgs.e2e.orgId}.job.printed`);
    const reports = await checks.stored('REPORTS', `reports.*.${orgs.e2e.orgId}.>`);
    // Streams de-duplicate by message id: each job adds exactly one event and two reports.
    const durable = inDb === ok.length && events === printedSoFar && reports === reportsSoFar;
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
    rows.printedP50.push(pLat.p50);
    rows.printedP99.push(pLat.p99);
    rows.webhookP50.push(wLat.p50);
    rows.webhookP99.push(wLat.p99);
    rows.incomplete.push(res.jobs.length - done.length);
    rows.durable.push(durable);
    rows.dbPerJob.push(db);
    if (run === middle) Object.assign(samples, { printed, webhook, peer: peer.latencies });
    ctx.log(
      `end to end ${run}: ${rate.toFixed(0)} jobs/s, ${cpuMs.toFixed(2)} ms of Spool CPU each (${done.length} of ${res.jobs.length} complete; ` +
        `printed p50 ${pLat.p50.toFixed(1)} ms p99 ${pLat.p99.toFixed(1)} ms, webhook p50 ${wLat.p50.toFixed(1)} ms; ` +
        `${inDb}/${ok.length} printed in the DB${durable ? '' : ', NOT DURABLE'}; per job ${db.commits} commits, ` +
        `${db.inserted} rows inserted, ${db.updated} updated, ${db.deleted} deleted${res.errors.length ? `; ${res.errors[0]}` : ''}); ` +
        `BullMQ ${peer.rate.toFixed(0)} jobs/s (p50 ${peerLat.p50.toFixed(1)} ms${peer.timedOut ? `, ${peer.timedOut} not heard complete` : ''})`,
    );
  }
  await bullWorker.call('stopWorker');

  const peerRef = { label: 'BullMQ add → processed', unit: 'jobs/s', values: rows.peer };
  const allDurable = rows.durable.every(Boolean);
  const rateFigure = requireCheck(
    ratioAtLeast(figure('end to end', 'jobs printed + webhook', 'jobs/s', rows.rate, peerRef), 0.3),
    allDurable,
    'every job printed in the DB and stored in the streams',
  );
  const incomplete = rows.incomplete.reduce((a, b) => a + b, 0);
  if (incomplete > 0) {
    rateFigure.note = [rateFigure.note, `${incomplete} jobs without a webhook in time`]
      .filter(Boolean)
      .join('; ');
  }
  const peerLatency = (p: 'p50' | 'p99', values: number[]) => ({
    label: `BullMQ add → processed ${p}`,
    unit: 'ms',
    values,
  });
  return {
    figures: [
      rateFigure,
      valueAtMost(
        figure('end to end', 'Spool CPU per printed and delivered job', 'ms', rows.cpuPerJob),
        1.5,
        '≤ 1.5 ms',
      ),
      figure(
        'end to end',
        'POST → printed p50',
        'ms',
        rows.printedP50,
        peerLatency('p50', rows.peerP50),
      ),
      figure(
        'end to end',
        'POST → printed p99',
        'ms',
        rows.printedP99,
        peerLatency('p99', rows.peerP99),
      ),
      figure(
        'end to end',
        'POST → webhook p50',
        'ms',
        rows.webhookP50,
        peerLatency('p50', rows.peerP50),
      ),
      figure(
        'end to end',
        'POST → webhook p99',
        'ms',
        rows.webhookP99,
        peerLatency('p99', rows.peerP99),
      ),
    ],
    samples,
    details: { ...rows, window: WINDOW, agents: ctx.options.agents },
  };
}
