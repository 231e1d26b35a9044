/**
 * Production: the end-to-end load and checks (bench/scenarios/e2e.ts) against Spool deployed as
 * in production (bench/deployment.ts): gateway, accounts, two jobs replicas, stations and webhooks,
 * each its own `spool serve` process, on a fresh database. Its own simulated agents link to its
 * stations service; the webhooks come to the same receivers as `spool dev`'s. Spool CPU per job is
 * the user + system time of all six processes, and the split by process is kept. Its rate and CPU
 * per job are judged against `spool dev`'s end-to-end figures of the same bench run, when that
 * scenario ran. When asked, the fixed-rate scenario (bench/scenarios/fixed-rate.ts) then runs
 * against the same deployment, at half the rate its end-to-end runs reached, before it stops.
 */

import { Admin } from '../admin.js';
import type { AgentsApi } from '../agents.js';
import { Checks } from '../checks.js';
import { type Context, PATHS } from '../context.js';
import { startChild } from '../ipc.js';
import { setUpPrintingOrg } from '../setup.js';
import { finiteMedian } from '../stats.js';
import { Stops } from '../stops.js';
import { type E2eResult, type PipelineRuns, runPipeline } from './e2e.js';
import { type FixedRateResult, runFixedRate } from './fixed-rate.js';

/** The scenario column of its figures. */
export const PRODUCTION = 'production (spool serve ×6)';

export interface ProductionResult extends E2eResult {
  /** The fixed-rate scenario against the deployment, when asked for. */
  fixedRate: FixedRateResult | undefined;
}

export async function runProduction(
  ctx: Context,
  options: {
    /** `spool dev`'s end-to-end runs of this bench run; undefined: not run, no targets. */
    dev: PipelineRuns | undefined;
    /** Whether to run the fixed-rate scenario against the deployment too. */
    fixedRate: boolean;
  },
): Promise<ProductionResult | undefined> {
  if (!ctx.servers.startDeployment) {
    ctx.log('production: skipped, Spool was given (--spool-url)');
    return undefined;
  }
  ctx.log('production: starting gateway, accounts, jobs ×2, stations and webhooks');
  const deployment = await ctx.servers.startDeployment();
  const stops = new Stops();
  stops.push(() => deployment.stop());
  try {
    ctx.log(
      `production: ${deployment.url}, link ${deployment.linkAddress}; pids ${deployment.processes
        .map((p) => `${p.name} ${p.pid}`)
        .join(', ')}`,
    );
    const admin = new Admin(deployment.url, deployment.adminToken);
    stops.push(() => admin.close());
    const checks = await Checks.open(deployment.databaseUrl, deployment.natsUrl, ctx.log);
    stops.push(() => checks.close());
    const agents = await startChild<AgentsApi>('agents.ts');
    stops.push(() => agents.stop());
    stops.push(() => ctx.load.call('unwatchPrinted', { natsUrl: deployment.natsUrl }));
    const target = await setUpPrintingOrg(
      ctx,
      {
        admin,
        url: deployment.url,
        linkAddress: deployment.linkAddress,
        natsUrl: deployment.natsUrl,
        agents,
      },
      'bench production',
      `http://127.0.0.1:${ctx.receiverPorts[0]}${PATHS.production}`,
    );
    const result = await runPipeline(ctx, {
      scenario: PRODUCTION,
      name: 'production',
      target,
      checks,
      webhookPath: PATHS.production,
      queue: 'bench-production',
      processes: deployment.processes,
      postgresPid: ctx.servers.postgresPid,
      natsPid: deployment.natsPid,
      judge: { against: 'dev', dev: options.dev },
    });
    result.details.processes = deployment.processes;
    const fixedRate = options.fixedRate
      ? await runFixedRate(ctx, {
          scenario: `fixed rate, ${PRODUCTION}`,
          name: 'fixed rate, production',
          target,
          checks,
          agents,
          webhookPath: PATHS.production,
          databaseUrl: deployment.databaseUrl,
          queue: 'bench-production-fixed-rate',
          maximum: finiteMedian(result.runs.rate),
          maximumText: 'the production end-to-end maximum',
          processes: deployment.processes,
          cpuAtMaximum: result.runs.cpuPerJob,
        })
      : undefined;
    return { ...result, fixedRate };
  } finally {
    // The agents and the harness's connections go before the servers they are connected to.
    await stops.run();
    ctx.log('production: stopped');
  }
}
