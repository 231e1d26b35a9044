/**
 * Pools (docs/jobs.md, "Pools and routing"): an organization of its own with 10 simulated agents
 * (bench/agents.ts, a process of its own, printing to a discard backend and claiming pool jobs as
 * the real agent does), on `spool dev`.
 *
 * Throughput: the end-to-end load (64 jobs between their POST and their `job.printed` webhook) sent
 * to a pool of the 10 printers (least_queued, the default) and, in the same run, to the same 10
 * printers named directly, round robin; the two alternate which goes first, run by run. Rate: jobs
 * whose webhook arrived ÷ (first POST → last webhook), as end to end; printed a second: jobs whose
 * `job.printed` event reached NATS ÷ (first POST → last such event); POST → printed; Spool CPU
 * per job.
 *
 * Failover: a second pool of 4 of the printers, `ordered` (its first member takes every job it
 * can), `failover_after` 2 s. Its first member's printer is made busy (its agent keeps the pool
 * jobs offered to it unclaimed, as behind a long job), 50 jobs are posted, and 3 s after it holds
 * them its agent reports the printer `out_of_paper`: the fault. Each job that then prints at another
 * member has moved; it is timed from the fault to its `job.printed` event. Spool withdraws from
 * the failed member each job it moves; the printer is then seen to (`ready`, no longer busy) and
 * claims whatever it still keeps, all of which moved meanwhile, so no claim may print.
 *
 * The run falls short (bench/shortfall.ts) when fewer jobs printed than were posted, when any job
 * printed twice (the stations' printed results are counted per job id, across the whole
 * scenario), or when no job moved off the failed member.
 */
import { request } from 'undici';
import type { AgentsApi, PrintedResult } from '../agents.js';
import { perJob } from '../checks.js';
import { epochMs, sleep } from '../clock.js';
import type { Context } from '../context.js';
import { type Child, startChild } from '../ipc.js';
import type { JobTarget } from '../jobs-client.js';
import { startCpuMeter } from '../proc.js';
import { type Figure, figure } from '../report/figures.js';
import { requireAll, requireFewErrors } from '../shortfall.js';
import { latency } from '../stats.js';
import { WINDOW, withoutWebhook } from './e2e.js';
import {
  type FailoverRun,
  failoverRun,
  printedPerJob,
  printedRate,
  requireFailover,
  requirePrintedOnce,
} from './pool-tally.js';

export const POOL_PRINTERS = 10;
export const FAILOVER_MEMBERS = 4;
export const FAILOVER_AFTER_S = 2;
export const FAILOVER_JOBS = 50;
/** Where the organization's `job.printed` webhooks arrive. */
const POOL_PATH = '/hooks/pool';
const SETTLE_MS = 30_000;
/** Each shape's load before the measured runs, unmeasured (see WARM_UP_MS in e2e.ts). */
const WARM_UP_MS = 5_000;
/** The longest the failed member is given to hold the failover jobs. */
const HOLD_WAIT_MS = 10_000;
/**
 * How long the member holds them, busy, before its fault: long enough for the router to have seen
 * it able to print while the jobs wait (it looks once a second at pools with jobs waiting), so the
 * fault is timed from a member last seen able, not from an earlier run's fault.
 */
const BUSY_MS = 3_000;
/** The longest the failover jobs are given to print, beyond failover_after. */
const PRINT_WAIT_MS = 30_000;
/** The longest the member seen to is given to have its claims answered. */
const CLAIMS_WAIT_MS = 10_000;

export interface PoolResult {
  figures: Figure[];
  details: Record<string, unknown>;
}

interface PoolOrg {
  orgId: string;
  key: string;
  printerIds: string[];
  poolId: string;
  failoverPoolId: string;
}

/** `POST /v1/orgs/{org}/pools` with the organization's key; returns the pool's id. */
async function createPool(ctx: Context, org: { orgId: string; key: string }, body: unknown) {
  const res = await request(`${ctx.servers.spoolUrl}/v1/orgs/${org.orgId}/pools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode !== 201) {
    throw new Error(`POST /v1/orgs/{org}/pools answered ${res.statusCode}: ${text.slice(0, 300)}`);
  }
  return (JSON.parse(text) as { pool: { id: string } }).pool.id;
}

async function setUp(ctx: Context, agents: Child<AgentsApi>): Promise<PoolOrg> {
  const { admin, servers } = ctx;
  const orgId = await admin.createOrg('bench pool');
  const [key, stations] = await Promise.all([
    admin.createKey(orgId, ['jobs:write', 'jobs:read', 'printers:read', 'printers:write']),
    admin.createStations(orgId, POOL_PRINTERS),
  ]);
  await admin.createWebhook(orgId, `http://127.0.0.1:${ctx.receiverPorts[0]}${POOL_PATH}`, [
    'job.printed',
  ]);
  const connected = await agents.call('connect', {
    address: servers.linkAddress,
    tokens: stations.map((s) => s.token),
    streamsPerChannel: 100,
    concurrency: 16,
    track: true,
  });
  const printerIds = connected.printerIds.filter(Boolean);
  requireAll('pool: agents connected', stations.length, printerIds.length, connected.errors);
  await ctx.load.call('watchPrinted', { natsUrl: servers.natsUrl, orgIds: [orgId] });
  const org = { orgId, key };
  const poolId = await createPool(ctx, org, { name: 'bench pool', printer_ids: printerIds });
  const failoverPoolId = await createPool(ctx, org, {
    name: 'bench failover',
    printer_ids: printerIds.slice(0, FAILOVER_MEMBERS),
    strategy: 'ordered',
    failover_after: FAILOVER_AFTER_S,
  });
  return { orgId, key, printerIds, poolId, failoverPoolId };
}

interface ShapeRun {
  jobs: number;
  rate: number;
  printedRate: number;
  printedP50: number;
  printedP99: number;
  cpuMs: number;
  /** Database commits and rollbacks per job, from the run's start until Spool is quiet after it. */
  commits: number;
  rollbacks: number;
}

/** One run of the end-to-end load to `target`, checked: every job printed once. */
async function throughput(
  ctx: Context,
  agents: Child<AgentsApi>,
  name: string,
  target: JobTarget,
  durationMs: number,
): Promise<ShapeRun> {
  const { load, checks } = ctx;
  await checks.quiesce();
  const dbBefore = await checks.dbCounters();
  const cpu = startCpuMeter(ctx.servers.spoolPid);
  const res = await load.call('pipeline', {
    target,
    window: WINDOW,
    durationMs,
    settleMs: SETTLE_MS,
    webhookPath: POOL_PATH,
  });
  const ok = res.jobs.filter((j) => j.id);
  const done = ok.filter((j) => j.webhookAt !== undefined);
  const cpuMs = cpu.perItemMs(done.length);
  requireFewErrors(
    `pool: ${name}: jobs printed with their webhook`,
    res.jobs.length,
    res.jobs.length - done.length,
    withoutWebhook(res.errors, ok.length - done.length, SETTLE_MS),
  );
  // Every `job.printed` event is published once Spool is quiet.
  await checks.quiesce();
  await sleep(200);
  const db = perJob(dbBefore, await checks.dbCounters(), ok.length);
  const printedAt = await load.call('printedTimes', { ids: ok.map((j) => j.id) });
  const printed = printedPerJob(await agents.call('takePrinted'));
  requirePrintedOnce(`pool: ${name}`, printed);
  const unprinted = ok.filter((j) => !printed.has(j.id)).length;
  requireFewErrors(`pool: ${name}: jobs a station printed`, ok.length, unprinted);
  const lastWebhook = done.reduce((last, j) => Math.max(last, j.webhookAt as number), 0);
  const lat = latency(
    ok.map((j, i) => (printedAt[i] ?? Number.NaN) - j.sentAt).filter((v) => Number.isFinite(v)),
  );
  return {
    jobs: ok.length,
    rate: done.length / ((lastWebhook - res.startedAt) / 1000),
    printedRate: printedRate(res.startedAt, printedAt).rate,
    printedP50: lat.p50,
    printedP99: lat.p99,
    cpuMs,
    commits: db.commits,
    rollbacks: db.rollbacks,
  };
}

interface Failover extends FailoverRun {
  posted: number;
  /** Jobs the failed member held unclaimed at the fault. */
  held: number;
  /** `job.rerouted` events the run added to the stream. */
  rerouted: number;
  /** Jobs withdrawn from the failed member from the fault on (the server withdraws what moves). */
  withdrawn: number;
  /** Claims the member sent once seen to, and those the server had not answered at the end. */
  claimedAfter: number;
  claimsUnanswered: number;
}

/** Takes the tracked printed results into `into` until `done` or `deadline`. */
async function collectPrinted(
  agents: Child<AgentsApi>,
  into: PrintedResult[],
  done: () => Promise<boolean>,
  deadline: number,
): Promise<void> {
  for (;;) {
    into.push(...(await agents.call('takePrinted')));
    if ((await done()) || epochMs() > deadline) return;
    await sleep(50);
  }
}

/** One fault of the failover pool's first member, as the top of this file tells. */
async function failover(ctx: Context, agents: Child<AgentsApi>, org: PoolOrg): Promise<Failover> {
  const { load, checks } = ctx;
  const faulty = org.printerIds[0] as string;
  const reroutedSubject = `events.${org.orgId}.job.rerouted`;
  await checks.quiesce();
  const reroutedBefore = await checks.stored('EVENTS', reroutedSubject);
  await agents.call('busy', { printerId: faulty, busy: true });
  const res = await load.call('burst', {
    target: {
      spoolUrl: ctx.servers.spoolUrl,
      key: org.key,
      orgId: org.orgId,
      printerIds: [],
      poolId: org.failoverPoolId,
    },
    count: FAILOVER_JOBS,
    concurrency: 8,
  });
  const ok = res.jobs.filter((j) => j.id);
  const ids = ok.map((j) => j.id);
  requireFewErrors('pool: failover: POST /jobs', res.jobs.length, res.jobs.length - ok.length, [
    ...res.errors,
  ]);

  // The failed member holds the jobs routed to it (the others print what they were given).
  const printed: PrintedResult[] = [];
  let held = 0;
  await collectPrinted(
    agents,
    printed,
    async () => {
      held = (await agents.call('holding', { printerId: faulty })).unclaimed;
      return held + new Set(printed.map((r) => r.jobId)).size >= ok.length;
    },
    epochMs() + HOLD_WAIT_MS,
  );
  await sleep(BUSY_MS);
  const before = await agents.call('status');
  const faultAt = await agents.call('printerStatus', { printerId: faulty, status: 'out_of_paper' });
  const wanted = new Set(ids);
  await collectPrinted(
    agents,
    printed,
    async () =>
      new Set(printed.map((r) => r.jobId).filter((id) => wanted.has(id))).size >= ids.length,
    epochMs() + FAILOVER_AFTER_S * 1000 + PRINT_WAIT_MS,
  );

  // Seen to: the member claims what it still keeps, which moved meanwhile: each claim must be
  // withdrawn, none accepted.
  const claimsBefore = (await agents.call('status')).claims;
  await agents.call('printerStatus', { printerId: faulty, status: 'ready' });
  await agents.call('busy', { printerId: faulty, busy: false });
  let claimsUnanswered = 0;
  await collectPrinted(
    agents,
    printed,
    async () => {
      const h = await agents.call('holding', { printerId: faulty });
      claimsUnanswered = h.claiming + h.unclaimed;
      return claimsUnanswered === 0;
    },
    epochMs() + CLAIMS_WAIT_MS,
  );
  await checks.quiesce();
  await sleep(200);
  printed.push(...(await agents.call('takePrinted')));
  const printedAt = await load.call('printedTimes', { ids });
  const perJob = printedPerJob(printed);
  requirePrintedOnce('pool: failover', perJob);
  const run = failoverRun({
    ids,
    faulty,
    faultAt,
    failoverAfterMs: FAILOVER_AFTER_S * 1000,
    printed: perJob,
    printedAt,
  });
  requireFailover('pool: failover', ids.length, run);
  const rerouted = (await checks.stored('EVENTS', reroutedSubject)) - reroutedBefore;
  const after = await agents.call('status');
  return {
    ...run,
    posted: ids.length,
    held,
    rerouted,
    withdrawn: after.withdrawn - before.withdrawn,
    claimedAfter: after.claims - claimsBefore,
    claimsUnanswered,
  };
}

export async function runPool(ctx: Context): Promise<PoolResult> {
  const agents = await startChild<AgentsApi>('agents.ts');
  try {
    return await measurePool(ctx, agents);
  } finally {
    await agents.call('disconnect').catch(() => undefined);
    await agents.stop();
  }
}

async function measurePool(ctx: Context, agents: Child<AgentsApi>): Promise<PoolResult> {
  const org = await setUp(ctx, agents);
  const base = { spoolUrl: ctx.servers.spoolUrl, key: org.key, orgId: org.orgId };
  const shapes = [
    {
      name: 'named directly',
      target: { ...base, printerIds: org.printerIds, pick: 'round-robin' } as JobTarget,
    },
    { name: 'pool', target: { ...base, printerIds: [], poolId: org.poolId } as JobTarget },
  ] as const;
  ctx.log('pool: warming up');
  for (const shape of shapes) await throughput(ctx, agents, shape.name, shape.target, WARM_UP_MS);

  const rows = {
    direct: [] as ShapeRun[],
    pool: [] as ShapeRun[],
    failover: [] as Failover[],
  };
  for (let run = 1; run <= ctx.options.repeats; run++) {
    // Alternately first, so that neither shape always runs on a Spool the other has just loaded.
    const order = run % 2 === 1 ? shapes : [...shapes].reverse();
    for (const shape of order) {
      const r = await throughput(ctx, agents, shape.name, shape.target, ctx.runMs);
      (shape.name === 'pool' ? rows.pool : rows.direct).push(r);
    }
    const d = rows.direct.at(-1) as ShapeRun;
    const p = rows.pool.at(-1) as ShapeRun;
    const f = await failover(ctx, agents, org);
    rows.failover.push(f);
    const fl = latency(f.times);
    ctx.log(
      `pool ${run}: pool of ${POOL_PRINTERS} ${p.rate.toFixed(0)} jobs/s (printed ${p.printedRate.toFixed(0)}/s, ` +
        `POST → printed p50 ${p.printedP50.toFixed(1)} ms, p99 ${p.printedP99.toFixed(1)} ms, ` +
        `${p.cpuMs.toFixed(2)} ms of Spool CPU each), named directly ${d.rate.toFixed(0)} jobs/s ` +
        `(printed ${d.printedRate.toFixed(0)}/s, p50 ${d.printedP50.toFixed(1)} ms, p99 ${d.printedP99.toFixed(1)} ms, ` +
        `${d.cpuMs.toFixed(2)} ms; commits per job ${p.commits} pool, ${d.commits} named directly), ratio ${(p.rate / d.rate).toFixed(2)}; failover: ${f.held} of ${f.posted} held by ` +
        `the failed member, ${f.moved} moved (${f.rerouted} job.rerouted events; ${f.withdrawn} withdrawn from it, ${f.claimedAfter} claimed by it once seen to), fault → printed elsewhere ` +
        `p50 ${fl.p50.toFixed(0)} ms, p99 ${fl.p99.toFixed(0)} ms (failover_after ${FAILOVER_AFTER_S} s)` +
        (f.early ? `, ${f.early} moved before failover_after had passed` : '') +
        (f.withoutEvent ? `, ${f.withoutEvent} timed by the station's result` : '') +
        (f.claimsUnanswered ? `, ${f.claimsUnanswered} claims unanswered at the end` : ''),
    );
  }
  return { figures: poolFigures(rows), details: { ...rows, settings: poolSettings() } };
}

export function poolSettings(): string {
  return (
    `${POOL_PRINTERS} simulated agents; the end-to-end load (${WINDOW} in flight) to a pool of their printers ` +
    `(least_queued) and to the same printers named directly; failover: a pool of ${FAILOVER_MEMBERS} of them, ` +
    `ordered, failover_after ${FAILOVER_AFTER_S} s, its first member holding ${FAILOVER_JOBS} jobs when its printer ` +
    'reports out_of_paper'
  );
}

function poolFigures(rows: { direct: ShapeRun[]; pool: ShapeRun[]; failover: Failover[] }) {
  const col = (runs: ShapeRun[], k: keyof ShapeRun) => runs.map((r) => r[k]);
  const direct = (k: keyof ShapeRun, unit: string) => ({
    label: `the same ${POOL_PRINTERS} printers named directly`,
    unit,
    values: col(rows.direct, k),
  });
  const pool = `pool of ${POOL_PRINTERS} printers`;
  const after = FAILOVER_AFTER_S * 1000;
  const failoverAfter = {
    label: 'failover_after',
    unit: 'ms',
    values: rows.failover.map(() => after),
  };
  const latencies = rows.failover.map((f) => latency(f.times));
  const earlyRuns = rows.failover.filter((f) => f.early > 0).length;
  const beyond = (f: Figure) => {
    const x = f.value.median - after;
    f.note = [
      x >= 0 ? `failover_after + ${x.toFixed(0)} ms` : 'less than failover_after',
      earlyRuns > 0
        ? `in ${earlyRuns} of ${rows.failover.length} runs jobs moved before failover_after had passed`
        : '',
    ]
      .filter(Boolean)
      .join('; ');
    return f;
  };
  return [
    figure(
      'pool',
      `jobs printed + webhook, ${pool} (least_queued)`,
      'jobs/s',
      col(rows.pool, 'rate'),
      direct('rate', 'jobs/s'),
    ),
    figure(
      'pool',
      `jobs printed a second (job.printed), ${pool}`,
      'jobs/s',
      col(rows.pool, 'printedRate'),
      direct('printedRate', 'jobs/s'),
    ),
    figure(
      'pool',
      `Spool CPU per printed and delivered job, ${pool}`,
      'ms',
      col(rows.pool, 'cpuMs'),
      direct('cpuMs', 'ms'),
    ),
    figure(
      'pool',
      `database commits per printed and delivered job, ${pool}`,
      'commits',
      col(rows.pool, 'commits'),
      direct('commits', 'commits'),
    ),
    figure(
      'pool',
      `POST → printed p50, ${pool}`,
      'ms',
      col(rows.pool, 'printedP50'),
      direct('printedP50', 'ms'),
    ),
    figure(
      'pool',
      `POST → printed p99, ${pool}`,
      'ms',
      col(rows.pool, 'printedP99'),
      direct('printedP99', 'ms'),
    ),
    beyond(
      figure(
        'pool',
        `printer fault → its jobs printed at another member p50 (failover_after ${FAILOVER_AFTER_S} s)`,
        'ms',
        latencies.map((l) => l.p50),
        failoverAfter,
      ),
    ),
    beyond(
      figure(
        'pool',
        `printer fault → its jobs printed at another member p99 (failover_after ${FAILOVER_AFTER_S} s)`,
        'ms',
        latencies.map((l) => l.p99),
        failoverAfter,
      ),
    ),
    figure(
      'pool',
      `jobs moved off the failed member, of ${FAILOVER_JOBS} posted`,
      'jobs',
      rows.failover.map((f) => f.moved),
    ),
  ];
}
