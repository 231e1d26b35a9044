/**
 * Event streams: 1,000 `GET /v1/orgs/{org}/stream` connections held open at once on one gateway
 * of its own (`spool serve gateway` in front of `spool dev`'s services, so that its memory and CPU
 * are the streams' and not the rest of Spool's), by a client process that reads them as browsers
 * would, each on its own socket. Jobs are posted through `spool dev`'s gateway to the printers of
 * the end-to-end organization at a fixed rate, so every job makes a `job.created` and a
 * `job.printed` event, each sent on all 1,000 streams.
 *
 * Measured, each run: the gateway's resident memory before and with the streams open; its CPU
 * while the streams are idle; its CPU while the jobs flow, beside the same flow with no stream open
 * (the reference, measured just before in the same run); and the delivery latency of every event
 * on every stream, from the state change (the job event's time in the jobs database, written by
 * the jobs service in the transaction that changed the state) to the event's `id:` line reaching
 * the client. Checked: every stream received every event of the run's jobs, once. Every one of
 * the 1,000 streams must open (the gateway is started with bounds that let one key hold them all)
 * and the jobs' POSTs must succeed, or the scenario fails (bench/shortfall.ts).
 */
import { epochMs, sleep } from '../clock.js';
import type { Context, Orgs } from '../context.js';
import { startChild } from '../ipc.js';
import { coresUsed, type ProcSample, sampleProcess } from '../proc.js';
import { type Figure, figure, requireCheck, valueAtMost } from '../report/figures.js';
import { requireAll, requireFewErrors } from '../shortfall.js';
import { latency } from '../stats.js';
import type { StreamsApi } from '../streams.js';

export const STREAMS = 1_000;
/** Jobs a second while the streams are measured: 2 events each, times STREAMS messages. */
export const STREAM_JOB_RATE = 10;
const HANDSHAKES_IN_FLIGHT = 50;
const IDLE_MS = 5_000;
const SETTLE_MS = 30_000;
const MiB = 2 ** 20;
/** The job states whose events are timed, and the event each one publishes. */
const EVENT_OF_STATUS: Record<string, string> = { queued: 'job.created', printed: 'job.printed' };

export interface StreamsResult {
  figures: Figure[];
  /** Latency samples of the middle run, for the chart. */
  samples: number[];
  details: Record<string, unknown>;
}

const mib = (s: ProcSample | undefined) => (s ? s.rssBytes / MiB : Number.NaN);

export async function runStreams(ctx: Context, orgs: Orgs): Promise<StreamsResult> {
  const { servers, checks, load } = ctx;
  // One key opens every stream: the replica's bounds (20 a key, 100 an organization by default)
  // are raised to let it.
  const gateway = await servers.startGateway?.({
    STREAMS_PER_CREDENTIAL: String(STREAMS),
    STREAMS_PER_ORG: String(STREAMS),
  });
  const url = gateway?.url ?? servers.spoolUrl;
  const pid = gateway?.pid ?? servers.spoolPid;
  const sample = () => (pid ? sampleProcess(pid) : undefined);
  ctx.log(
    gateway
      ? `streams: a gateway of their own at ${url} (pid ${pid})`
      : `streams: on the given gateway ${url}`,
  );
  const rows = {
    opened: [] as number[],
    openS: [] as number[],
    rssBeforeMiB: [] as number[],
    rssMiB: [] as number[],
    kibPerStream: [] as number[],
    idleCores: [] as number[],
    loadCores: [] as number[],
    loadCoresNoStreams: [] as number[],
    jobs: [] as number[],
    messages: [] as number[],
    missing: [] as number[],
    duplicates: [] as number[],
    p50: [] as number[],
    p90: [] as number[],
    p99: [] as number[],
    max: [] as number[],
    /** Each event's first arrival on any stream: the path up to the gateway's first write. */
    firstP50: [] as number[],
    firstP99: [] as number[],
    /** Each event's last arrival minus its first: the fan-out across the streams. */
    spreadP50: [] as number[],
    spreadP99: [] as number[],
    /** `job.printed`: the state change to the event reaching NATS, and NATS to the first stream. */
    toNatsP50: [] as number[],
    toNatsP99: [] as number[],
    natsToFirstP50: [] as number[],
    natsToFirstP99: [] as number[],
  };
  let samples: number[] = [];
  const middle = Math.ceil(ctx.options.repeats / 2);
  const flow = async () => {
    const before = sample();
    const started = epochMs();
    const res = await load.call('openLoop', {
      target: orgs.e2e,
      rate: STREAM_JOB_RATE,
      durationMs: ctx.runMs,
      connections: 8,
    });
    const jobs = res.jobs.filter((j) => j.id).map((j) => j.id);
    requireFewErrors(
      'event streams: POST /jobs',
      res.jobs.length,
      res.jobs.length - jobs.length,
      res.errors,
    );
    return { before, started, jobs };
  };
  try {
    for (let run = 1; run <= ctx.options.repeats; run++) {
      // The reference: the same flow of jobs, no stream open.
      await checks.quiesce();
      const bare = await flow();
      await checks.quiesce();
      rows.loadCoresNoStreams.push(
        coresUsed(bare.before as ProcSample, sample() as ProcSample, epochMs() - bare.started),
      );

      const clients = await startChild<StreamsApi>('streams.ts');
      try {
        const before = sample();
        const opened = await clients.call('open', {
          url: `${url}/v1/orgs/${orgs.e2e.orgId}/stream`,
          key: orgs.e2e.key,
          count: STREAMS,
          concurrency: HANDSHAKES_IN_FLIGHT,
        });
        requireAll('event streams: streams opened', STREAMS, opened.opened, opened.errors);
        await sleep(2_000);
        const idle0 = sample();
        await sleep(IDLE_MS);
        const idle1 = sample();
        await clients.call('reset');

        const loaded = await flow();
        const expected = loaded.jobs.length * 2 * opened.opened;
        const deadline = epochMs() + SETTLE_MS;
        while (epochMs() < deadline) {
          if ((await clients.call('status')).messages >= expected) break;
          await sleep(100);
        }
        const after = sample();
        const wallMs = epochMs() - loaded.started;

        const stateAt = new Map<string, number>();
        const { rows: changes } = await checks.pool.query<{
          job_id: string;
          status: string;
          at: Date;
        }>(
          `SELECT job_id, status, min(at) AS at FROM job_events
            WHERE job_id = ANY($1::uuid[]) AND status IN ('queued', 'printed')
            GROUP BY job_id, status`,
          [loaded.jobs],
        );
        for (const c of changes) {
          stateAt.set(`${c.job_id} ${EVENT_OF_STATUS[c.status]}`, c.at.getTime());
        }
        const jobs = new Set(loaded.jobs);
        const natsTimes = await load.call('printedTimes', { ids: loaded.jobs });
        const natsAt = new Map(loaded.jobs.map((id, i) => [id, natsTimes[i]]));
        const toNats: number[] = [];
        const natsToFirst: number[] = [];
        const runSamples: number[] = [];
        const firsts: number[] = [];
        const spreads: number[] = [];
        let messages = 0;
        let duplicates = 0;
        for (const a of await clients.call('arrivals')) {
          if (!jobs.has(a.jobId)) continue;
          const at = stateAt.get(`${a.jobId} ${a.type}`);
          if (at === undefined) continue;
          messages += a.at.length;
          duplicates += Math.max(0, a.at.length - opened.opened);
          for (const t of a.at) runSamples.push(t - at);
          const first = Math.min(...a.at);
          firsts.push(first - at);
          const nats = a.type === 'job.printed' ? natsAt.get(a.jobId) : undefined;
          if (nats) {
            toNats.push(nats - at);
            natsToFirst.push(first - nats);
          }
          spreads.push(Math.max(...a.at) - first);
        }
        const l = latency(runSamples);
        rows.opened.push(opened.opened);
        rows.openS.push(opened.ms / 1000);
        rows.rssBeforeMiB.push(mib(before));
        rows.rssMiB.push(mib(idle0));
        rows.kibPerStream.push(((mib(idle0) - mib(before)) * 1024) / Math.max(1, opened.opened));
        rows.idleCores.push(idle0 && idle1 ? coresUsed(idle0, idle1, IDLE_MS) : Number.NaN);
        rows.loadCores.push(
          loaded.before && after ? coresUsed(loaded.before, after, wallMs) : Number.NaN,
        );
        rows.jobs.push(loaded.jobs.length);
        rows.messages.push(messages);
        rows.missing.push(Math.max(0, expected - messages + duplicates));
        rows.duplicates.push(duplicates);
        rows.p50.push(l.p50);
        rows.p90.push(l.p90);
        rows.p99.push(l.p99);
        rows.max.push(l.max);
        const f = latency(firsts);
        const sp = latency(spreads);
        rows.firstP50.push(f.p50);
        rows.firstP99.push(f.p99);
        rows.spreadP50.push(sp.p50);
        rows.spreadP99.push(sp.p99);
        const n = latency(toNats);
        const nf = latency(natsToFirst);
        rows.toNatsP50.push(n.p50);
        rows.toNatsP99.push(n.p99);
        rows.natsToFirstP50.push(nf.p50);
        rows.natsToFirstP99.push(nf.p99);
        if (run === middle) samples = runSamples;
        ctx.log(
          `streams ${run}: ${opened.opened} open in ${(opened.ms / 1000).toFixed(1)} s; ` +
            `gateway ${mib(before).toFixed(0)} → ${mib(idle0).toFixed(0)} MiB, ` +
            `idle ${(rows.idleCores.at(-1) ?? 0).toFixed(3)} cores, ` +
            `${STREAM_JOB_RATE} jobs/s: ${(rows.loadCores.at(-1) ?? 0).toFixed(2)} cores ` +
            `(no streams: ${(rows.loadCoresNoStreams.at(-1) ?? 0).toFixed(2)}); ` +
            `${messages} of ${expected} messages, state change → stream p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms; ` +
            `first stream p50 ${f.p50} ms, p99 ${f.p99} ms; first → last stream p50 ${sp.p50} ms, p99 ${sp.p99} ms; ` +
            `job.printed: state change → NATS p50 ${n.p50} ms, p99 ${n.p99} ms, NATS → first stream p50 ${nf.p50} ms, p99 ${nf.p99} ms`,
        );
      } finally {
        await clients.call('close').catch(() => undefined);
        await clients.stop();
      }
    }
  } finally {
    await gateway?.stop();
  }

  const complete = rows.missing.every((m) => m === 0) && rows.duplicates.every((d) => d === 0);
  const scenario = 'event streams';
  const streams = `${STREAMS.toLocaleString('en')} streams`;
  const figures: Figure[] = [
    figure(scenario, `state change → event on ${streams}, p50`, 'ms', rows.p50),
    requireCheck(
      valueAtMost(
        figure(scenario, `state change → event on ${streams}, p99`, 'ms', rows.p99),
        100,
        '≤ 100 ms',
      ),
      complete,
      'every stream received every event once',
    ),
    figure(scenario, `gateway memory with ${streams} open`, 'MiB', rows.rssMiB, {
      label: 'no stream open',
      unit: 'MiB',
      values: rows.rssBeforeMiB,
    }),
    figure(scenario, `gateway CPU, ${streams} idle`, 'cores', rows.idleCores),
    figure(
      scenario,
      `gateway CPU, ${streams}, ${STREAM_JOB_RATE} jobs/s (${STREAM_JOB_RATE * 2} events/s)`,
      'cores',
      rows.loadCores,
      { label: 'no stream open', unit: 'cores', values: rows.loadCoresNoStreams },
    ),
  ];
  return { figures, samples, details: rows };
}
