/**
 * The peer, BullMQ on a local Redis that appends every write to its log with `fsync` (run as two
 * processes, like Spool's load and agents: one producing, one working). The producer keeps
 * `window` jobs between `add()` and their `completed` event (read with QueueEvents, BullMQ's own
 * way to hear of completion), so its rate is measured the way Spool's end-to-end rate is.
 */
import { Queue, QueueEvents, Worker } from 'bullmq';
import { epochMs } from '../clock.js';
import { serve } from '../ipc.js';

interface RedisAt {
  host: string;
  port: number;
}

const connection = (r: RedisAt) => ({ host: r.host, port: r.port, maxRetriesPerRequest: null });

let worker: Worker | undefined;

/** What the job carries: about what a Spool job's request carries. */
const DATA = {
  printer_id: '5f1c0a52-3b4e-4a0e-9d0a-5e1b0c6f2a11',
  title: 'bench',
  reference: 'bench-0000',
  content: { type: 'text', data: 'Spool benchmark page\n'.repeat(4) },
};

/**
 * Opens the queue and its event reader, and waits until the reader sees a job complete: a
 * QueueEvents reads only events newer than its first read, so jobs added before it would never
 * be heard of.
 */
async function open(redis: RedisAt, name: string): Promise<{ queue: Queue; events: QueueEvents }> {
  const queue = new Queue(name, { connection: connection(redis) });
  const events = new QueueEvents(name, { connection: connection(redis) });
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
  for (let attempt = 1; ; attempt++) {
    const heard = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 2_000);
      events.once('completed', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    await queue.add('ready', DATA);
    if (await heard) return { queue, events };
    if (attempt === 5) throw new Error('QueueEvents heard no completion: is a worker running?');
  }
}

const handlers = {
  /** Starts a worker whose processor does nothing, as the simulated agents print to nowhere. */
  async startWorker(p: { redis: RedisAt; queue: string; concurrency: number }): Promise<void> {
    worker = new Worker(p.queue, async () => 'printed', {
      connection: connection(p.redis),
      concurrency: p.concurrency,
    });
    await worker.waitUntilReady();
  },

  async stopWorker(): Promise<void> {
    await worker?.close();
    worker = undefined;
  },

  /** Adds jobs for `durationMs` with `window` in flight; then waits for the last to complete. */
  async produce(p: {
    redis: RedisAt;
    queue: string;
    window: number;
    durationMs: number;
    settleMs: number;
  }) {
    const { queue, events } = await open(p.redis, p.queue);
    const waiters = new Map<string, () => void>();
    const completedEarly = new Set<string>();
    events.on('completed', ({ jobId }) => {
      const waiter = waiters.get(jobId);
      if (waiter) waiter();
      else completedEarly.add(jobId);
    });
    const latencies: number[] = [];
    let timedOut = 0;
    let lastDone = 0;
    const started = epochMs();
    const end = started + p.durationMs;
    const giveUp = end + p.settleMs;
    await Promise.all(
      Array.from({ length: p.window }, async () => {
        while (epochMs() < end) {
          const t0 = epochMs();
          const job = await queue.add('print', DATA);
          const id = job.id as string;
          const done =
            completedEarly.delete(id) ||
            (await new Promise<boolean>((resolve) => {
              const timer = setTimeout(() => resolve(false), Math.max(0, giveUp - epochMs()));
              waiters.set(id, () => {
                clearTimeout(timer);
                resolve(true);
              });
            }));
          waiters.delete(id);
          if (!done) {
            timedOut++;
            continue;
          }
          lastDone = epochMs();
          latencies.push(lastDone - t0);
        }
      }),
    );
    await events.close();
    await queue.close();
    const elapsedMs = lastDone - started;
    return {
      ops: latencies.length,
      timedOut,
      elapsedMs,
      rate: latencies.length / (elapsedMs / 1000),
      latencies,
    };
  },

  /**
   * Adds jobs at `rate` a second for `durationMs` and times each from when it was due to its
   * `completed` event: the peer's latency at the rate Spool's fixed-rate scenario runs.
   */
  async produceAtRate(p: {
    redis: RedisAt;
    queue: string;
    rate: number;
    durationMs: number;
    settleMs: number;
  }) {
    const { queue, events } = await open(p.redis, p.queue);
    const completedAt = new Map<string, number>();
    events.on('completed', ({ jobId }) => completedAt.set(jobId, epochMs()));
    const total = Math.max(1, Math.floor((p.rate * p.durationMs) / 1000));
    const interval = 1000 / p.rate;
    const started = epochMs() + 20;
    const added: Array<Promise<{ id: string; due: number }>> = [];
    for (let i = 0; i < total; i++) {
      const due = started + i * interval;
      const wait = due - epochMs();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      added.push(queue.add('print', DATA).then((job) => ({ id: job.id as string, due })));
    }
    const jobs = await Promise.all(added);
    const deadline = epochMs() + p.settleMs;
    while (jobs.some((j) => !completedAt.has(j.id)) && epochMs() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await events.close();
    await queue.close();
    const latencies = jobs
      .map((j) => (completedAt.get(j.id) ?? Number.NaN) - j.due)
      .filter((v) => Number.isFinite(v));
    return { ops: latencies.length, timedOut: jobs.length - latencies.length, latencies };
  },
};

export type BullmqApi = typeof handlers;

serve(handlers);
