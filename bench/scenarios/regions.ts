/**
 * Regions: jobs go in through region a's gateway at REGIONS_RATE a second, first with Spool in one
 * region alone, then in two regions REGION_DELAY_MS apart (one way, on the gateway connection
 * between their NATS clusters), alternately to a station of region a and one of region b. POST →
 * printed ends when `job.printed` reaches a subscriber in region a. Same-region jobs should not
 * notice the other region; a cross-region job pays the delay twice (the offer goes to b, the
 * event comes back to a's EVENTS stream). Everything runs in a child process (bench/regions.ts),
 * a fresh database and fresh nats-servers each run.
 */
import type { Context } from '../context.js';
import { startChild } from '../ipc.js';
import type { RegionsApi } from '../regions.js';
import { type Figure, figure, ratioAtMost } from '../report/figures.js';
import { latency } from '../stats.js';

export const REGIONS_RATE = 20;
export const REGION_DELAY_MS = 40;

export interface RegionsResult {
  figures: Figure[];
  samples: { alone: number[]; same: number[]; cross: number[] };
  details: Record<string, unknown>;
}

export async function runRegions(ctx: Context): Promise<RegionsResult> {
  const serverUrl = new URL(ctx.servers.databaseUrl);
  serverUrl.pathname = '/postgres';
  const rows = {
    aloneP50: [] as number[],
    aloneP99: [] as number[],
    sameP50: [] as number[],
    sameP99: [] as number[],
    crossP50: [] as number[],
    crossP99: [] as number[],
  };
  let samples: RegionsResult['samples'] = { alone: [], same: [], cross: [] };
  const middle = Math.ceil(ctx.options.repeats / 2);
  for (let run = 1; run <= ctx.options.repeats; run++) {
    const child = await startChild<RegionsApi>('regions.ts');
    try {
      const result = await child.call('run', {
        serverUrl: serverUrl.toString(),
        rate: REGIONS_RATE,
        durationMs: ctx.runMs,
        delayMs: REGION_DELAY_MS,
      });
      const [alone, same, cross] = [result.alone, result.same, result.cross].map(latency);
      rows.aloneP50.push(alone?.p50 ?? Number.NaN);
      rows.aloneP99.push(alone?.p99 ?? Number.NaN);
      rows.sameP50.push(same?.p50 ?? Number.NaN);
      rows.sameP99.push(same?.p99 ?? Number.NaN);
      rows.crossP50.push(cross?.p50 ?? Number.NaN);
      rows.crossP99.push(cross?.p99 ?? Number.NaN);
      if (run === middle) samples = result;
      ctx.log(
        `regions ${run}: POST → printed p50/p99: one region ${alone?.p50}/${alone?.p99} ms, ` +
          `two regions, same region ${same?.p50}/${same?.p99} ms, cross region ${cross?.p50}/${cross?.p99} ms`,
      );
    } finally {
      await child.stop();
    }
  }
  const scenario = 'regions';
  const alone = { label: 'one region alone', unit: 'ms' };
  const delay = `${REGION_DELAY_MS} ms apart`;
  const figures: Figure[] = [
    ratioAtMost(
      figure(
        scenario,
        `same region, two regions ${delay}: POST → printed p50`,
        'ms',
        rows.sameP50,
        {
          ...alone,
          values: rows.aloneP50,
        },
      ),
      1.25,
    ),
    figure(scenario, `same region, two regions ${delay}: POST → printed p99`, 'ms', rows.sameP99, {
      ...alone,
      values: rows.aloneP99,
    }),
    figure(scenario, `cross region (${delay}): POST → printed p50`, 'ms', rows.crossP50, {
      ...alone,
      values: rows.aloneP50,
    }),
    figure(scenario, `cross region (${delay}): POST → printed p99`, 'ms', rows.crossP99, {
      ...alone,
      values: rows.aloneP99,
    }),
  ];
  return { figures, samples, details: rows };
}
