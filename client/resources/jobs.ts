import { type CallOptions, type CreateOptions, keyHeader } from '../calls.js';
import { walkItems, walkPages } from '../pages.js';
import type {
  CreateJobRequest,
  Job,
  JobDocument,
  JobPage,
  JobWithEvents,
  ListJobsQuery,
  MoveJobRequest,
  ReprintRequest,
} from '../types.js';
import { statusChanges } from '../wait.js';
import type { ResourceContext } from './context.js';

/** `spool.jobs`. */
export class JobsResource {
  readonly #spool: ResourceContext;

  constructor(spool: ResourceContext) {
    this.#spool = spool;
  }

  /** `POST /v1/orgs/{org}/jobs`: creates a job; answers it as created (usually `queued`). */
  async create(body: CreateJobRequest, options: CreateOptions = {}): Promise<Job> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/jobs', {
        params: { path: { org } },
        body,
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    return answer.job;
  }

  /**
   * `POST /v1/orgs/{org}/jobs/validate`: checks a job as `create` would, creating nothing;
   * answers `{valid: true, printer_id}` or `{valid: true, pool_id}`, or throws the error the
   * creation would.
   */
  async validate(
    body: CreateJobRequest,
    options: CallOptions = {},
  ): Promise<{ valid: true; printer_id: string } | { valid: true; pool_id: string }> {
    const org = await this.#spool.org();
    return this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/jobs/validate', {
        params: { path: { org } },
        body,
        signal: options.signal,
      }),
    );
  }

  /** `GET /v1/orgs/{org}/jobs`: one page of jobs, newest first, with `counts` by status. */
  async list(query: ListJobsQuery = {}, options: CallOptions = {}): Promise<JobPage> {
    const org = await this.#spool.org();
    return this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/jobs', {
        params: { path: { org }, query },
        signal: options.signal,
      }),
    );
  }

  /** Every page of the list for `query` (its `limit` is the page size), fetched as you go. */
  pages(query: ListJobsQuery = {}, options: CallOptions = {}): AsyncGenerator<JobPage> {
    return walkPages((cursor) => this.list({ ...query, ...(cursor ? { cursor } : {}) }, options));
  }

  /** Every job of the list, across pages: `for await (const job of spool.jobs.iterate({status: 'queued'}))`. */
  iterate(query: ListJobsQuery = {}, options: CallOptions = {}): AsyncGenerator<Job> {
    return walkItems(this.pages(query, options), (page) => page.items);
  }

  /** `GET /v1/orgs/{org}/jobs/{id}`: the job and its events. */
  async get(id: string, options: CallOptions = {}): Promise<JobWithEvents> {
    const org = await this.#spool.org();
    return this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/jobs/{id}', {
        params: { path: { org, id } },
        signal: options.signal,
      }),
    );
  }

  /** `POST …/jobs/{id}/cancel`: answers the job, now `cancelled`; `ConflictError` if it finished. */
  async cancel(id: string, options: CreateOptions = {}): Promise<Job> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/jobs/{id}/cancel', {
        params: { path: { org, id } },
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    return answer.job;
  }

  /** `POST …/jobs/{id}/retry`: queues a failed or held job again; answers the job. */
  async retry(id: string, options: CreateOptions = {}): Promise<Job> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/jobs/{id}/retry', {
        params: { path: { org, id } },
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    return answer.job;
  }

  /** `POST …/jobs/{id}/reprint`: a new job with the original's document; answers the new job. */
  async reprint(id: string, body: ReprintRequest = {}, options: CreateOptions = {}): Promise<Job> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/jobs/{id}/reprint', {
        params: { path: { org, id } },
        body,
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    return answer.job;
  }

  /**
   * `POST …/jobs/{id}/move`: sends a queued, scheduled or held job to another printer of the
   * organization; answers the job. `ConflictError` once a station has it or it finished.
   */
  async move(id: string, body: MoveJobRequest, options: CreateOptions = {}): Promise<Job> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/jobs/{id}/move', {
        params: { path: { org, id } },
        body,
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    return answer.job;
  }

  /**
   * `GET …/jobs/{id}/content`: the job's document, as it was sent; `ContentDeletedError` (410)
   * past retention, `ForbiddenError` (403) for sealed content.
   */
  content(id: string, options: CallOptions = {}): Promise<JobDocument> {
    return this.#document(id, 'content', options);
  }

  /**
   * `GET …/jobs/{id}/preview`: a PNG of a PDF's first page, or the start of a text document;
   * `NotFoundError` for a raw one.
   */
  preview(id: string, options: CallOptions = {}): Promise<JobDocument> {
    return this.#document(id, 'preview', options);
  }

  async #document(id: string, what: 'content' | 'preview', options: CallOptions) {
    const org = await this.#spool.org();
    const path = `/v1/orgs/{org}/jobs/{id}/${what}` as const;
    const answer = await this.#spool.api.GET(path, {
      params: { path: { org, id } },
      // Bytes, not JSON: a failed answer's envelope is still read as JSON.
      parseAs: 'arrayBuffer',
      signal: options.signal,
    });
    const data = await this.#spool.unwrap(Promise.resolve(answer));
    return {
      contentType: answer.response.headers.get('content-type') ?? 'application/octet-stream',
      data: new Uint8Array(data as ArrayBuffer),
    };
  }

  /**
   * Yields job `id` as it is, then again at each change of its status or `status_detail`, and ends
   * once it is printed, failed or cancelled:
   * `for await (const job of spool.jobs.watch(id)) console.log(job.status)`.
   */
  async *watch(id: string, options: CallOptions = {}): AsyncGenerator<Job, void, undefined> {
    const stop = new AbortController();
    const signal = options.signal ? AbortSignal.any([stop.signal, options.signal]) : stop.signal;
    try {
      yield* statusChanges(this.#spool.jobSource, id, signal);
    } finally {
      stop.abort();
    }
  }
}
