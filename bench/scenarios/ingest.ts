/**
 * Ingest: `POST /jobs` from a closed loop of 32 connections for the run's length, to a printer
 * whose station is offline (so nothing but creating jobs is measured). The rate counts a job once
 * it is answered 201 and its outbox rows are published, so a relay that falls behind lowers it:
 * jobs answered ÷ (the run + the time the outbox then took to drain). Paired run by run with the
 * SERIALIZABLE single-insert ceiling and the JetStream publish ceilings.
 */

import { type DbCounters, perJob } from '../checks.js';
import { epochMs, sleep } from '../clock.js';
import type { Context, Orgs } from '../context.js';
import {
  addSplit,
  devParts,
  machineCpuFigure,
  machineCpuRows,
  splitText,
  startMachineCpuMeter,
} from '../machine-cpu.js';
import { startCpuMeter } from '../proc.js';
import { type Figure, figure, ratioAtLeast, valueAtMost } from '../report/figures.js';
import { requireFewErrors } from '../shortfall.js';
import { latency } from '../stats.js';

export const INGEST_CONCURRENCY = 32;
/** Connections of the SERIALIZABLE ceiling: enough to keep PostgreSQL busy on any machine here. */
export const PG_CONCURRENCY = 16;

export interface IngestResult {
  figures: Figure[];
  /** The SERIALIZABLE single-insert ceiling of each run, tx/s. */
  insertRate: number[];
  details: Record<string, unknown>;
}

export async function runIngest(ctx: Context, orgs: Orgs): Promise<IngestResult> {
  const { ceilings, load, checks, runMs } = ctx;
  ctx.log('ingest: warming up');
  await load.call('closedLoop', {
    target: orgs.ingest,
    concurrency: INGEST_CONCURRENCY,
    durationMs: 3_000,
  });
  await checks.quiesce();

  const rows = {
    cpuPerJob: [] as number[],
    machineCpu: machineCpuRows(),
    pg: [] as number[],
    pgP50: [] as number[],
    pgP99: [] as number[],
    jsAsync: [] as number[],
    jsAwaited: [] as number[],
    rate: [] as number[],
    p50: [] as number[],
    p99: [] as number[],
    drainMs: [] as number[],
    failed: [] as number[],
    dbPerJob: [] as DbCounters[],
  };
  for (let run = 1; run <= ctx.options.repeats; run++) {
    const pg = await ceilings.call('pgInsertRate', {
      databaseUrl: ctx.servers.databaseUrl,
      concurrency: PG_CONCURRENCY,
      durationMs: runMs,
    });
    const jsAsync = await ceilings.call('jetstreamPublishRate', {
      natsUrl: ctx.servers.natsUrl,
      inFlight: 500,
      durationMs: runMs,
    });
    const jsAwaited = await ceilings.call('jetstreamPublishRate', {
      natsUrl: ctx.servers.natsUrl,
      inFlight: 1,
      durationMs: runMs,
    });
    await checks.quiesce();
    const dbBefore = await checks.dbCounters();
    const cpu = startCpuMeter(ctx.servers.spoolPid);
    const machineCpu = startMachineCpuMeter(devParts(ctx.servers));
    const res = await load.call('closedLoop', {
      target: orgs.ingest,
      concurrency: INGEST_CONCURRENCY,
      durationMs: runMs,
    });
    requireFewErrors('ingest: POST /jobs', res.ok + res.failed, res.failed, res.errors);
    const drainStart = epochMs();
    while ((await checks.outbox('jobs_outbox')) > 0 && epochMs() - drainStart < 60_000) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const drainMs = epochMs() - drainStart;
    const cpuMs = cpu.perItemMs(res.ok);
    const split = machineCpu.perItem(res.ok);
    rows.cpuPerJob.push(cpuMs);
    addSplit(rows.machineCpu, split);
    const rate = res.ok / ((res.elapsedMs + drainMs) / 1000);
    const lat = latency(res.latencies);
    const pgLat = latency(pg.latencies);
    rows.pg.push(pg.rate);
    rows.pgP50.push(pgLat.p50);
    rows.pgP99.push(pgLat.p99);
    rows.jsAsync.push(jsAsync.rate);
    rows.jsAwaited.push(jsAwaited.rate);
    rows.rate.push(rate);
    rows.p50.push(lat.p50);
    rows.p99.push(lat.p99);
    rows.drainMs.push(drainMs);
    rows.failed.push(res.failed);
    await checks.quiesce();
    await sleep(1_100);
    const db = perJob(dbBefore, await checks.dbCounters(), res.ok);
    rows.dbPerJob.push(db);
    ctx.log(
      `ingest ${run}: ${rate.toFixed(0)} jobs/s, ${cpuMs.toFixed(2)} ms of Spool CPU each (p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms, ` +
        `outbox drained in ${drainMs.toFixed(0)} ms; ${splitText(split)}; per job ${db.commits} commits, ${db.inserted} rows inserted, ${db.deleted} deleted; ${res.failed} failed${res.errors.length ? `: ${res.errors[0]}` : ''}); ` +
        `SERIALIZABLE insert ${pg.rate.toFixed(0)} tx/s, JetStream ${jsAsync.rate.toFixed(0)} (500 in flight) / ${jsAwaited.rate.toFixed(0)} (awaited) msg/s`,
    );
  }

  const pgRef = { label: 'SERIALIZABLE single-insert tx', unit: 'tx/s', values: rows.pg };
  const figures = [
    ratioAtLeast(figure('ingest', 'POST /jobs rate', 'jobs/s', rows.rate, pgRef), 0.6),
    figure('ingest', 'POST /jobs rate', 'jobs/s', rows.rate, {
      label: 'JetStream publish, 500 in flight',
      unit: 'msg/s',
      values: rows.jsAsync,
    }),
    figure('ingest', 'POST /jobs rate', 'jobs/s', rows.rate, {
      label: 'JetStream publish, awaited one by one',
      unit: 'msg/s',
      values: rows.jsAwaited,
    }),
    figure('ingest', `POST p50 (${INGEST_CONCURRENCY} in flight)`, 'ms', rows.p50, {
      label: `insert tx p50 (${PG_CONCURRENCY} in flight)`,
      unit: 'ms',
      values: rows.pgP50,
    }),
    figure('ingest', `POST p99 (${INGEST_CONCURRENCY} in flight)`, 'ms', rows.p99, {
      label: `insert tx p99 (${PG_CONCURRENCY} in flight)`,
      unit: 'ms',
      values: rows.pgP99,
    }),
    valueAtMost(
      figure('ingest', 'Spool CPU per job created', 'ms', rows.cpuPerJob),
      0.5,
      '≤ 0.5 ms',
    ),
    machineCpuFigure('ingest', 'job created', rows.machineCpu, {
      text: '0.6 × the insert ceiling',
      rates: rows.pg.map((rate) => 0.6 * rate),
    }),
  ];
  const failed = rows.failed.reduce((a, b) => a + b, 0);
  if (failed > 0 && figures[0]) figures[0].note = `${failed} POSTs failed`;
  return {
    figures,
    insertRate: rows.pg,
    details: { ...rows, concurrency: INGEST_CONCURRENCY },
  };
}
