/**
 * `npm run bench`: starts Spool (`spool dev`, or uses the one given), the servers it runs on, the
 * Redis of the BullMQ peer and the processes that make the load; measures the ceilings, the peer
 * and each scenario in turn, repeated; prints one table and writes it, with the machine's
 * description, to `bench/results/latest.{md,json,svg}`. docs/performance.md says what each figure
 * means.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from '../test/helpers/ports.js';
import { Admin } from './admin.js';
import type { AgentsApi } from './agents.js';
import type { CeilingsApi } from './ceilings.js';
import { Checks } from './checks.js';
import { epochMs } from './clock.js';
import type { Context } from './context.js';
import { type Child, startChild } from './ipc.js';
import type { LoadApi } from './load.js';
import { currentCommit, describeMachine } from './machine.js';
import { type Options, parseOptions, USAGE } from './options.js';
import type { BullmqApi } from './peer/bullmq.js';
import { descendants } from './proc.js';
import { renderChart, type Series } from './report/chart.js';
import type { Figure } from './report/figures.js';
import { type Results, resultsMarkdown, tableMarkdown } from './report/markdown.js';
import { type PipelineRuns, probeE2eRate, runE2e, WINDOW } from './scenarios/e2e.js';
import { runFanout } from './scenarios/fanout.js';
import {
  devFixedRate,
  type FixedRateResult,
  runFixedRate,
  SHARE_OF_E2E_MAXIMUM,
} from './scenarios/fixed-rate.js';
import { runFleet } from './scenarios/fleet.js';
import { INGEST_CONCURRENCY, PG_CONCURRENCY, runIngest } from './scenarios/ingest.js';
import { poolSettings, runPool } from './scenarios/pool.js';
import { runProduction } from './scenarios/production.js';
import { REGION_DELAY_MS, REGIONS_RATE, runRegions } from './scenarios/regions.js';
import { runStreams, STREAM_JOB_RATE, STREAMS } from './scenarios/streams.js';
import { type Servers, startServers } from './servers.js';
import { ENDPOINTS_PER_ORG, setUpOrgs } from './setup.js';
import { finiteMedian } from './stats.js';
import { harnessSignalled, markSignalled, removeHarnessDirs } from './stops.js';

async function redisVersion(redis: { host: string; port: number }): Promise<string> {
  const client = new Redis({ host: redis.host, port: redis.port, lazyConnect: true });
  try {
    await client.connect();
    return /redis_version:(\S+)/.exec(await client.info('server'))?.[1] ?? '?';
  } finally {
    client.disconnect();
  }
}

async function measure(
  ctx: Context,
): Promise<{ figures: Figure[]; series: Series[]; details: Record<string, unknown> }> {
  const { options } = ctx;
  const wants = (s: Options['only'][number]) => options.only.includes(s);
  const figures: Figure[] = [];
  const series: Series[] = [];
  const details: Record<string, unknown> = {};
  const needsOrgs = options.only.some(
    (s) => !['fleet', 'regions', 'production', 'pool'].includes(s),
  );
  const orgs = needsOrgs ? await setUpOrgs(ctx) : undefined;

  let dev: PipelineRuns | undefined;
  let insertRate: number[] | undefined;
  if (orgs && wants('ingest')) {
    const ingest = await runIngest(ctx, orgs);
    figures.push(...ingest.figures);
    details.ingest = ingest.details;
    insertRate = ingest.insertRate;
  }
  if (orgs && wants('e2e')) {
    const e2e = await runE2e(ctx, orgs);
    figures.push(...e2e.figures);
    details.e2e = e2e.details;
    dev = e2e.runs;
    series.push(
      { label: 'end to end: POST → printed', samples: e2e.samples.printed },
      { label: 'end to end: POST → webhook', samples: e2e.samples.webhook },
      { label: 'end to end: BullMQ add → processed', samples: e2e.samples.peer },
    );
  }
  // Beside e2e in the table: the same load on Spool deployed as in production, judged against
  // it; with fixed-rate also asked for, the fixed rate against that deployment while it is up.
  const production = wants('production')
    ? await runProduction(ctx, { dev, fixedRate: wants('fixed-rate') })
    : undefined;
  if (production) {
    figures.push(...production.figures);
    details.production = production.details;
    series.push(
      { label: 'production: POST → printed', samples: production.samples.printed },
      { label: 'production: POST → webhook', samples: production.samples.webhook },
    );
  }
  const fixedSeries = (prefix: string, fixed: FixedRateResult): Series[] => [
    { label: `${prefix}${fixed.rate}/s: POST`, samples: fixed.samples.post },
    { label: `${prefix}${fixed.rate}/s: POST → printed`, samples: fixed.samples.printed },
    { label: `${prefix}${fixed.rate}/s: POST → webhook`, samples: fixed.samples.webhook },
    { label: `${prefix}${fixed.rate}/s: BullMQ add → processed`, samples: fixed.samples.peer },
  ];
  if (orgs && wants('fixed-rate')) {
    let atMaximum = dev;
    if (atMaximum === undefined) {
      ctx.log('fixed rate: probing the end-to-end maximum');
      atMaximum = await probeE2eRate(ctx, orgs);
    }
    const maximum = finiteMedian(atMaximum.rate);
    const fixed = await runFixedRate(ctx, devFixedRate(ctx, orgs, maximum, atMaximum.cpuPerJob));
    figures.push(...fixed.figures);
    details.fixedRate = fixed.details;
    series.push(...fixedSeries('', fixed));
  }
  // Measured while the deployment was up, shown after `spool dev`'s fixed rate.
  if (production?.fixedRate) {
    figures.push(...production.fixedRate.figures);
    details.productionFixedRate = production.fixedRate.details;
    series.push(...fixedSeries('production ', production.fixedRate));
  }
  if (orgs && wants('fanout')) {
    const fanout = await runFanout(ctx, orgs);
    figures.push(...fanout.figures);
    details.fanout = fanout.details;
  }
  if (orgs && wants('streams')) {
    const streams = await runStreams(ctx, orgs);
    figures.push(...streams.figures);
    details.streams = streams.details;
    series.push({
      label: `${STREAMS} event streams: state change → event`,
      samples: streams.samples,
    });
  }
  if (wants('pool')) {
    const pool = await runPool(ctx);
    figures.push(...pool.figures);
    details.pool = pool.details;
  }
  if (wants('regions')) {
    const regions = await runRegions(ctx);
    figures.push(...regions.figures);
    details.regions = regions.details;
    series.push(
      { label: 'regions: one region alone, POST → printed', samples: regions.samples.alone },
      { label: 'regions: same region of two, POST → printed', samples: regions.samples.same },
      { label: 'regions: cross region, POST → printed', samples: regions.samples.cross },
    );
  }
  if (wants('fleet')) {
    const fleet = await runFleet(ctx, {
      ...(orgs ? { smallFleet: orgs.e2e } : {}),
      ...(insertRate ? { insertRate } : {}),
    });
    figures.push(...fleet.figures);
    details.fleet = fleet.details;
    series.push(
      { label: 'fleet: dispatch, links quiet', samples: fleet.samples.steady },
      { label: 'fleet: dispatch across the minute resync', samples: fleet.samples.resync },
    );
  }
  return { figures, series, details };
}

async function main(): Promise<void> {
  let options: Options | 'help';
  try {
    options = parseOptions(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (options === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const started = epochMs();
  const commit = currentCommit();
  const log = (line: string) =>
    process.stdout.write(`[${((epochMs() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

  // Before anything starts: a signal while the servers start stops them too.
  let servers: Servers | undefined;
  endWithSignal(async () => {
    await servers?.stop();
    await removeHarnessDirs();
  });
  servers = await startServers(options, log);
  const children: Array<Child<never>> = [];
  let checks: Checks | undefined;
  let admin: Admin | undefined;
  try {
    const receiverPorts: number[] = [];
    for (let i = 0; i < ENDPOINTS_PER_ORG; i++) receiverPorts.push(await freePort());
    const [load, agents, ceilings, bullWorker, bullProducer] = await Promise.all([
      startChild<LoadApi>('load.ts'),
      startChild<AgentsApi>('agents.ts'),
      startChild<CeilingsApi>('ceilings.ts'),
      startChild<BullmqApi>('peer/bullmq.ts'),
      startChild<BullmqApi>('peer/bullmq.ts'),
    ]);
    children.push(
      ...([load, agents, ceilings, bullWorker, bullProducer] as unknown as Array<Child<never>>),
    );
    await load.call('listen', { ports: receiverPorts });
    checks = await Checks.open(servers.databaseUrl, servers.natsUrl, log);
    admin = new Admin(servers.spoolUrl, servers.adminToken);
    const ctx: Context = {
      options,
      servers,
      admin,
      checks,
      load,
      agents,
      ceilings,
      bullWorker,
      bullProducer,
      receiverPorts,
      runMs: options.seconds * 1000,
      log,
    };
    const { figures, series, details } = await measure(ctx);

    const versions = await checks.serverVersions();
    const machine = describeMachine(
      {
        postgres: versions.postgres,
        natsServer: versions.nats,
        redis: await redisVersion(servers.redis),
      },
      commit,
    );
    const results: Results = {
      machine,
      settings: {
        'Spool under test': options.spoolUrl
          ? `given (${options.spoolUrl})`
          : '`spool dev`, KEY_RATE_LIMIT=0, other settings default',
        repeats: options.repeats,
        'seconds per run': options.seconds,
        'ingest connections': INGEST_CONCURRENCY,
        'SERIALIZABLE ceiling connections': PG_CONCURRENCY,
        'end-to-end window': WINDOW,
        'fixed rate': `${SHARE_OF_E2E_MAXIMUM} × the end-to-end maximum of \`spool dev\` and, when production runs too, of the production deployment; open loop`,
        production:
          '`spool serve` gateway, accounts, jobs ×2, stations, webhooks on a fresh database (`spool migrate`) and a nats-server of their own, KEY_RATE_LIMIT=0, LOG_LEVEL=warn, other settings default',
        agents: options.agents,
        'fleet links': options.fleetStations,
        'event streams': `${STREAMS} on a gateway of their own (STREAMS_PER_CREDENTIAL and STREAMS_PER_ORG ${STREAMS}), ${STREAM_JOB_RATE} jobs/s`,
        pools: poolSettings(),
        regions: `${REGIONS_RATE} jobs/s through region a, regions ${REGION_DELAY_MS} ms apart one way, each region's services in one process`,
        postgres: servers.postgresSettings,
        redis: 'appendonly yes, appendfsync always, no snapshots',
        'nats-server': 'JetStream, file store, default sync',
      },
      figures,
      details,
      durationS: (epochMs() - started) / 1000,
    };
    await mkdir(options.out, { recursive: true });
    const chartFile = 'latest.svg';
    await writeFile(
      join(options.out, chartFile),
      renderChart(
        figures,
        series,
        `Spool benchmark, ${machine.date.slice(0, 10)}, ${machine.cpus} cores: ${machine.cpuModel}`,
      ),
    );
    await writeFile(join(options.out, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    await writeFile(join(options.out, 'latest.md'), resultsMarkdown(results, chartFile));
    process.stdout.write(`\n${tableMarkdown(figures)}\n\n`);
    log(`written to ${join(options.out, 'latest.{md,json,svg}')}`);
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await admin?.close();
    await checks?.close();
    await servers.stop();
  }
  log('done');
}

/** How long the processes the harness started have to end after it was told to stop. */
const SIGNAL_GRACE_MS = 5_000;

let mainSettled: Promise<unknown> = Promise.resolve();

/**
 * A harness stopped by SIGINT or SIGTERM (Ctrl-C, a `timeout`, a cancelled job) stops what it
 * started rather than leaving it running: every process under it gets SIGTERM, and SIGKILL after
 * {@link SIGNAL_GRACE_MS}; then `cleanup` removes the servers' directories and every other
 * directory the harness made (`harnessDir`), whatever was starting in it, and the harness
 * exits once the run, failing for want of its processes, has run its own clean-up too.
 */
function endWithSignal(cleanup: () => Promise<void>): void {
  const end = async (signal: NodeJS.Signals) => {
    if (harnessSignalled()) return;
    markSignalled();
    process.stderr.write(`bench: ${signal}; stopping the processes it started\n`);
    const signalAll = (sig: NodeJS.Signals) => {
      const pids = descendants(process.pid);
      for (const pid of pids) {
        try {
          process.kill(pid, sig);
        } catch {
          // ended meanwhile
        }
      }
      return pids.length;
    };
    signalAll('SIGTERM');
    const until = Date.now() + SIGNAL_GRACE_MS;
    while (descendants(process.pid).length > 0 && Date.now() < until) await sleep(100);
    if (signalAll('SIGKILL') > 0) await sleep(500);
    await cleanup().catch(() => undefined);
    await Promise.race([mainSettled, sleep(30_000)]);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  // `on`, not `once`: the signal often comes twice (`timeout` sends it to the harness and to its
  // process group), and a second one without a listener would end the harness before it cleaned up.
  process.on('SIGINT', (signal) => void end(signal));
  process.on('SIGTERM', (signal) => void end(signal));
}

mainSettled = main().then(
  () => {
    if (!harnessSignalled()) process.exit(process.exitCode ?? 0);
  },
  (err: unknown) => {
    if (harnessSignalled()) return;
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
