/**
 * The load generator, run as its own process (`bench/run.ts` forks it): posts jobs to Spool in a
 * closed loop, at a fixed rate or with a bounded number in the pipeline, hosts the webhook
 * receivers, and notes when each job's `job.printed` event reaches NATS. Every loop is bounded by
 * a count or a duration; all traffic stays on loopback.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { epochMs, sleep } from './clock.js';
import { serve } from './ipc.js';
import { JobPoster, type JobTarget, type Posted } from './jobs-client.js';
import { type Arrival, Receivers } from './receiver.js';

export interface TracedJob extends Posted {
  /** When the job's `job.printed` event reached NATS (the printed state is committed then). */
  printedAt?: number;
  /** When its `job.printed` webhook reached the receiver. */
  webhookAt?: number;
}

const receivers = new Receivers();
/** A connection to each NATS whose `job.printed` events are watched, by URL. */
const watching = new Map<string, NatsConnection>();
const printedAt = new Map<string, number>();

function firstErrors(jobs: Posted[]): string[] {
  return [...new Set(jobs.filter((j) => j.error).map((j) => `${j.status} ${j.error}`))].slice(0, 5);
}

const handlers = {
  async listen(p: { ports: number[] }): Promise<void> {
    await receivers.listen(p.ports);
  },

  /** Notes the time each `job.printed` event of `orgIds` reaches NATS. */
  async watchPrinted(p: { natsUrl: string; orgIds: string[] }): Promise<void> {
    let nc = watching.get(p.natsUrl);
    if (!nc) {
      nc = await connect({ servers: p.natsUrl.split(','), name: 'spool-bench-load' });
      watching.set(p.natsUrl, nc);
    }
    for (const orgId of p.orgIds) {
      nc.subscribe(`events.${orgId}.job.printed`, {
        callback: (_err, msg) => {
          const at = epochMs();
          try {
            const id = (msg.json() as { data: { job: { id: string } } }).data.job.id;
            if (!printedAt.has(id)) printedAt.set(id, at);
          } catch {
            // not an event of ours
          }
        },
      });
    }
  },

  /** Stops watching `natsUrl` (before its server stops). */
  async unwatchPrinted(p: { natsUrl: string }): Promise<void> {
    await watching.get(p.natsUrl)?.close();
    watching.delete(p.natsUrl);
  },

  /** `concurrency` POSTs always in flight for `durationMs`: the most the gateway takes. */
  async closedLoop(p: { target: JobTarget; concurrency: number; durationMs: number }) {
    const poster = new JobPoster(p.target, p.concurrency);
    const started = epochMs();
    const end = started + p.durationMs;
    const jobs: Posted[] = [];
    await Promise.all(
      Array.from({ length: p.concurrency }, async () => {
        while (epochMs() < end) jobs.push(await poster.post());
      }),
    );
    const ended = epochMs();
    await poster.close();
    const ok = jobs.filter((j) => j.status === 201);
    return {
      ok: ok.length,
      failed: jobs.length - ok.length,
      elapsedMs: ended - started,
      startedAt: started,
      latencies: ok.map((j) => j.answeredAt - j.sentAt),
      errors: firstErrors(jobs),
    };
  },

  /**
   * POSTs at `rate` a second for `durationMs`, each timed from when it was due (so a slow answer
   * does not hide the requests that should have been sent meanwhile).
   */
  async openLoop(p: { target: JobTarget; rate: number; durationMs: number; connections: number }) {
    const poster = new JobPoster(p.target, p.connections);
    const total = Math.max(1, Math.floor((p.rate * p.durationMs) / 1000));
    const interval = 1000 / p.rate;
    const started = epochMs() + 20;
    const inFlight: Array<Promise<Posted>> = [];
    for (let i = 0; i < total; i++) {
      const due = started + i * interval;
      const wait = due - epochMs();
      if (wait > 0) await sleep(wait);
      inFlight.push(poster.post(due));
    }
    const jobs = await Promise.all(inFlight);
    await poster.close();
    return { jobs, startedAt: started, errors: firstErrors(jobs) };
  },

  /**
   * Keeps `window` jobs between their POST and their `job.printed` webhook for `durationMs`, then
   * waits (at most `settleMs`) for the last ones: the end-to-end rate with a bounded queue.
   */
  async pipeline(p: {
    target: JobTarget;
    window: number;
    durationMs: number;
    settleMs: number;
    webhookPath: string;
  }) {
    const poster = new JobPoster(p.target, p.window);
    const webhookAt = new Map<string, number>();
    const waiters = new Map<string, () => void>();
    const stop = receivers.onArrival((a: Arrival) => {
      if (a.path !== p.webhookPath || a.type !== 'job.printed') return;
      if (!webhookAt.has(a.jobId)) webhookAt.set(a.jobId, a.at);
      waiters.get(a.jobId)?.();
    });
    const started = epochMs();
    const end = started + p.durationMs;
    const giveUp = end + p.settleMs;
    const jobs: TracedJob[] = [];
    let timedOut = 0;
    await Promise.all(
      Array.from({ length: p.window }, async () => {
        while (epochMs() < end) {
          const job: TracedJob = await poster.post();
          jobs.push(job);
          if (!job.id || webhookAt.has(job.id)) continue;
          const done = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(false), Math.max(0, giveUp - epochMs()));
            waiters.set(job.id, () => {
              clearTimeout(timer);
              resolve(true);
            });
          });
          waiters.delete(job.id);
          if (!done) timedOut++;
        }
      }),
    );
    stop();
    await poster.close();
    for (const job of jobs) {
      const w = webhookAt.get(job.id);
      if (w !== undefined) job.webhookAt = w;
    }
    receivers.take(p.webhookPath);
    return { jobs, startedAt: started, timedOut, errors: firstErrors(jobs) };
  },

  /** Posts `count` jobs with `concurrency` in flight, as fast as the gateway answers. */
  async burst(p: { target: JobTarget; count: number; concurrency: number }) {
    const poster = new JobPoster(p.target, p.concurrency);
    const jobs: Posted[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: p.concurrency }, async () => {
        while (next < p.count) {
          next++;
          jobs.push(await poster.post());
        }
      }),
    );
    await poster.close();
    return { jobs, errors: firstErrors(jobs) };
  },

  /** Waits until `count` arrivals on `path` (or `timeoutMs`), then hands them over. */
  async collect(p: { path: string; count: number; timeoutMs: number }): Promise<Arrival[]> {
    const deadline = epochMs() + p.timeoutMs;
    const onPath = () => receivers.arrivals.filter((a) => a.path === p.path).length;
    while (onPath() < p.count && epochMs() < deadline) await sleep(20);
    return receivers.take(p.path);
  },

  /** Forgets the arrivals on `path`; returns how many there were. */
  async discard(p: { path: string }): Promise<number> {
    return receivers.take(p.path).length;
  },

  /** When each job's `job.printed` event arrived; forgets them. */
  async printedTimes(p: { ids: string[] }): Promise<Array<number | null>> {
    const out = p.ids.map((id) => printedAt.get(id) ?? null);
    printedAt.clear();
    return out;
  },
};

export type LoadApi = typeof handlers;

serve(handlers);
