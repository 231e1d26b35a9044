/**
 * Following a job until it finishes. A {@link JobSource} says how changes are learned; the
 * client's is polling `GET …/jobs/{id}` with backoff ({@link pollingSource}). The event stream
 * (`GET /v1/orgs/{org}/stream`, read through `spool.api` with `parseAs: 'stream'`) could be
 * another source yielding the same jobs from `job.*` events, behind the same interface, so that
 * `waitForJob` and `watch` would stay as they are.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { JobNotPrintedError, WaitTimeoutError } from './errors.js';
import type { Job, JobStatus } from './types.js';

/** Statuses a job does not leave by itself. */
export const FINISHED_STATUSES: ReadonlySet<JobStatus> = new Set([
  'printed',
  'failed',
  'cancelled',
]);

/** Whether a job has finished: printed, failed or cancelled. */
export function isFinished(job: Pick<Job, 'status'>): boolean {
  return FINISHED_STATUSES.has(job.status);
}

/** Yields a job as it is now and again each time it may have changed, until aborted. */
export interface JobSource {
  observe(id: string, signal: AbortSignal): AsyncIterable<Job>;
}

/** How often {@link pollingSource} asks. */
export interface PollOptions {
  /** The first pause between two polls; 250 ms by default. */
  intervalMs?: number;
  /** The longest pause: pauses grow by half each poll without a change, up to this; 5 000 ms. */
  maxIntervalMs?: number;
}

/** A source that polls with `getJob`, quickly while the job moves and slower while it waits. */
export function pollingSource(
  getJob: (id: string, signal: AbortSignal) => Promise<Job>,
  options: PollOptions = {},
): JobSource {
  const first = options.intervalMs ?? 250;
  const longest = options.maxIntervalMs ?? 5_000;
  return {
    async *observe(id, signal) {
      let pause = first;
      let last: JobStatus | undefined;
      for (;;) {
        const job = await getJob(id, signal);
        pause = job.status === last ? Math.min(longest, pause * 1.5) : first;
        last = job.status;
        yield job;
        await sleep(pause, undefined, { signal });
      }
    },
  };
}

/**
 * Yields the job each time its status or its `status_detail` changes (the first time as it is),
 * and returns after yielding it finished. The detail changes without the status while a job
 * waits for its printer (`waiting: printer "desk" is offline`, then cleared).
 */
export async function* statusChanges(
  source: JobSource,
  id: string,
  signal: AbortSignal,
): AsyncGenerator<Job, void, undefined> {
  let last: Pick<Job, 'status' | 'status_detail'> | undefined;
  for await (const job of source.observe(id, signal)) {
    if (job.status === last?.status && job.status_detail === last.status_detail) continue;
    last = job;
    yield job;
    if (isFinished(job)) return;
  }
}

/** What {@link waitForJob} waits for. */
export type WaitUntil = 'printed' | 'sent' | 'finished';

/** Options of `waitForJob`. */
export interface WaitOptions {
  /**
   * `printed` (the default): resolves once printed, rejects with {@link JobNotPrintedError} when
   * the job fails or is cancelled first. `sent`: resolves once the station has it (or it
   * printed). `finished`: resolves with the job once printed, failed or cancelled.
   */
  until?: WaitUntil;
  /** Gives up with {@link WaitTimeoutError} after this long; no limit by default. */
  timeoutMs?: number;
  /** Stops waiting; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Called with the job at each change of its status or `status_detail` (the first time as it
   * is), such as for progress.
   */
  onChange?: (job: Job) => void;
}

const REACHED: Record<WaitUntil, ReadonlySet<JobStatus>> = {
  printed: new Set(['printed']),
  sent: new Set(['sent', 'printed']),
  finished: FINISHED_STATUSES,
};

/** Waits for job `id` in `source`; see {@link WaitOptions}. */
export async function waitForJob(
  source: JobSource,
  id: string,
  options: WaitOptions = {},
): Promise<Job> {
  const until = options.until ?? 'printed';
  // Said here, for callers without the types, rather than as a TypeError from deep inside.
  if (!Object.hasOwn(REACHED, until)) {
    throw new TypeError(
      `until must be one of ${Object.keys(REACHED).join(', ')}, not ${JSON.stringify(until)}`,
    );
  }
  const timeout =
    options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  const signals = [options.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
  // One controller ends the source's loop on return, on abort and on time-out alike.
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, ...signals]);
  let last: Job | undefined;
  try {
    for await (const job of statusChanges(source, id, signal)) {
      last = job;
      options.onChange?.(job);
      if (REACHED[until].has(job.status)) return job;
      if (isFinished(job)) throw new JobNotPrintedError(job, until);
    }
    throw new Error('unreachable: a job source ended before the job finished');
  } catch (err) {
    if (timeout?.aborted && !options.signal?.aborted) {
      throw new WaitTimeoutError(id, options.timeoutMs ?? 0, last);
    }
    // Whatever was in flight when the caller aborted (a fetch, a pause), it is the caller's reason.
    if (options.signal?.aborted) throw options.signal.reason;
    throw err;
  } finally {
    stop.abort();
  }
}
