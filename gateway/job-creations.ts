/**
 * The gateway's job creations, many to a call. A POST's creation goes to the jobs service at once
 * while fewer than `maxInFlight` calls are out; past that it waits, and each call that returns
 * takes everything that waited with it, as one `CreateJobs` call. A quiet gateway adds no delay,
 * and a busy one pays the gRPC round trip per group rather than per job, while the jobs service
 * commits each call's creations together.
 *
 * Each creation is still answered on its own: a job refused fails alone, and one whose call fails
 * as a whole gets that call's error (it is never sent again, since the jobs may exist). Creations
 * whose content is fetched from a URL go alone, so that a slow fetch holds up no one else's.
 */
import type { CreateJobRequest, Job } from '../gen/spool/v1/jobs.js';
import { fromItemError } from '../lib/grpc.js';
import { type TraceCarrier, traceCarrier } from '../lib/tracing.js';
import type { JobsClient } from './clients.js';

/**
 * Calls out at once before creations wait to go together. With 4, two jobs replicas each took
 * groups of about 4.5 creations at a deployment's rate; with 2, more creations go per call and
 * per commit (docs/performance.md, item 35).
 */
export const CREATION_CALLS_IN_FLIGHT = 2;
/** The most creations one call carries (the jobs service takes up to its `MAX_CREATIONS_PER_CALL`, 256). */
export const CREATIONS_PER_CALL = 128;

interface Waiting {
  request: CreateJobRequest;
  trace: TraceCarrier;
  resolve(job: Job): void;
  reject(err: unknown): void;
}

export class JobCreations {
  readonly #jobs: JobsClient;
  readonly #maxInFlight: number;
  readonly #queue: Waiting[] = [];
  #inFlight = 0;

  constructor(jobs: JobsClient, maxInFlight = CREATION_CALLS_IN_FLIGHT) {
    this.#jobs = jobs;
    this.#maxInFlight = maxInFlight;
  }

  /** Resolves with the job once the jobs service has committed it. */
  async create(request: CreateJobRequest): Promise<Job> {
    if (request.uri) {
      const { job } = await this.#jobs.createJob(request);
      if (!job) throw new Error('the jobs service answered no job');
      return job;
    }
    return new Promise<Job>((resolve, reject) => {
      this.#queue.push({ request, trace: traceCarrier(), resolve, reject });
      this.#next();
    });
  }

  #next(): void {
    while (this.#inFlight < this.#maxInFlight && this.#queue.length > 0) {
      const group = this.#queue.splice(0, CREATIONS_PER_CALL);
      this.#inFlight++;
      void this.#send(group).finally(() => {
        this.#inFlight--;
        this.#next();
      });
    }
  }

  /** Sends `group` in one call and answers each of its creations; never throws. */
  async #send(group: Waiting[]): Promise<void> {
    try {
      const { results } = await this.#jobs.createJobs({
        jobs: group.map((w) => ({ request: w.request, trace: w.trace as Record<string, string> })),
      });
      group.forEach((w, i) => {
        const result = results[i];
        if (result?.job) w.resolve(result.job);
        else if (result?.error) w.reject(fromItemError(result.error));
        else w.reject(new Error('the jobs service answered no job'));
      });
    } catch (err) {
      for (const w of group) w.reject(err);
    }
  }
}
