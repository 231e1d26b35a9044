/**
 * `Spool`, the client: typed calls to the print-job API made from its OpenAPI document, with
 * idempotency keys, bounded retries, pages as async iterables and waiting for a job.
 */
import createClient, { type Client } from 'openapi-fetch';
import { type Answer, type CallOptions, type CreateOptions, keyHeader, unwrap } from './calls.js';
import { CodeNotShownError } from './errors.js';
import type { paths } from './generated/schema.js';
import { walkItems, walkPages } from './pages.js';
import { createTransport, type RetryOptions } from './transport.js';
import type {
  ChildOrg,
  ChildOrgPage,
  CreateChildOrgRequest,
  CreateEnrollmentRequest,
  CreateJobRequest,
  CreatePoolRequest,
  Enrollment,
  Job,
  JobDocument,
  JobPage,
  JobWithEvents,
  KeyInfo,
  ListChildOrgsQuery,
  ListJobsQuery,
  ListLocationsQuery,
  ListPoolsQuery,
  ListPrintersQuery,
  Location,
  LocationPage,
  MoveJobRequest,
  Pool,
  PoolPage,
  Printer,
  PrinterPage,
  ReprintRequest,
  UpdatePoolRequest,
  Upload,
  UploadType,
  UsageDay,
  UsageQuery,
} from './types.js';
import { usageQuery } from './usage.js';
import {
  type JobSource,
  type PollOptions,
  pollingSource,
  statusChanges,
  type WaitOptions,
  waitForJob,
} from './wait.js';

export type { CallOptions, CreateOptions } from './calls.js';

/** Options of {@link Spool}. The client reads nothing from the environment: pass what it needs. */
export interface SpoolOptions {
  /** An API key, `svc_live_…` or `svc_test_…`. */
  apiKey: string;
  /** Where Spool answers, such as `https://spool.example.com`; `http://localhost:8080` by default. */
  baseUrl?: string;
  /** The key's organization; asked of Spool once (`GET /v1/key`) when not given. */
  org?: string;
  /** How calls are retried (see {@link RetryOptions}). */
  retry?: RetryOptions;
  /** How `waitForJob` and `jobs.watch` poll. */
  poll?: PollOptions;
  /** The fetch to send requests with (a proxy agent, a test); `globalThis.fetch` by default. */
  fetch?: (request: Request) => Promise<Response>;
}

/**
 * A client of one Spool with one API key.
 *
 * ```ts
 * const spool = new Spool({ apiKey: process.env.SPOOL_API_KEY, baseUrl: 'https://spool.example.com' });
 * const job = await spool.jobs.create({ printer_id, content: { type: 'text', data: 'Hello' } });
 * await spool.waitForJob(job.id, { timeoutMs: 60_000 });
 * ```
 */
export class Spool {
  /**
   * The typed openapi-fetch client underneath, for any path of the API: `spool.api.GET(
   * '/v1/orgs/{org}/jobs', { params: { path: { org }, query: { status: 'queued' } } })` answers
   * `{data, error, response}` instead of throwing. It has the key, the retries and the
   * idempotency keys of this client.
   */
  readonly api: Client<paths>;
  /** Jobs: create, list, page through, get, cancel, retry, reprint, move, watch. */
  readonly jobs: JobsResource;
  /** Documents uploaded ahead of the jobs that print them. */
  readonly uploads: UploadsResource;
  /** The organization's printers. */
  readonly printers: PrintersResource;
  /** The organization's pools of printers. */
  readonly pools: PoolsResource;
  /** The organization's locations. */
  readonly locations: LocationsResource;
  /** Enrollment codes, which stations install themselves with. */
  readonly enrollments: EnrollmentsResource;
  /**
   * A platform's child organizations. To act on one, make a client of the same key for it:
   * `new Spool({ apiKey, baseUrl, org: child.id })`.
   */
  readonly children: ChildrenResource;
  /** How this client learns a job's changes (polling today). */
  readonly jobSource: JobSource;
  #org: Promise<string> | undefined;

  constructor(options: SpoolOptions) {
    if (typeof options?.apiKey !== 'string' || options.apiKey === '') {
      throw new TypeError('new Spool({apiKey}): an API key (svc_live_… or svc_test_…) is needed');
    }
    this.api = createClient<paths>({
      baseUrl: (options.baseUrl ?? 'http://localhost:8080').replace(/\/+$/, ''),
      headers: { authorization: `Bearer ${options.apiKey}` },
      fetch: createTransport(options.retry, options.fetch),
    });
    if (options.org !== undefined) this.#org = Promise.resolve(options.org);
    this.jobs = new JobsResource(this);
    this.uploads = new UploadsResource(this);
    this.printers = new PrintersResource(this);
    this.pools = new PoolsResource(this);
    this.locations = new LocationsResource(this);
    this.enrollments = new EnrollmentsResource(this);
    this.children = new ChildrenResource(this);
    this.jobSource = pollingSource(
      async (id, signal) => (await this.jobs.get(id, { signal })).job,
      options.poll,
    );
  }

  /** `GET /v1/key`: the calling key, its organization and scopes. */
  key(options: CallOptions = {}): Promise<KeyInfo> {
    return unwrap(this.api.GET('/v1/key', { signal: options.signal }));
  }

  /** The key's organization id: the one given, or else the one `GET /v1/key` names (asked once). */
  org(): Promise<string> {
    if (!this.#org) {
      const asked = this.key().then((key) => key.org_id);
      // A failed look-up is not remembered: the next call asks again.
      asked.catch(() => {
        if (this.#org === asked) this.#org = undefined;
      });
      this.#org = asked;
    }
    return this.#org;
  }

  /**
   * `GET /v1/orgs/{org}/usage`: each UTC day's jobs created, printed and failed, pages, bytes and
   * webhook deliveries (the last 30 days unless `from`/`to` say), with `children: true` each child
   * organization's too; days without activity are zeros.
   */
  async usage(query: UsageQuery = {}, options: CallOptions = {}): Promise<UsageDay[]> {
    const org = await this.org();
    const answer = await unwrap(
      this.api.GET('/v1/orgs/{org}/usage', {
        params: { path: { org }, query: usageQuery(query) },
        signal: options.signal,
      }),
    );
    return answer.items;
  }

  /**
   * Waits until job `id` is printed (or, with `until`, sent or finished): resolves with the job,
   * rejects with `JobNotPrintedError` (carrying the job) when it fails or is cancelled first, and
   * with `WaitTimeoutError` after `timeoutMs`.
   */
  waitForJob(id: string, options: WaitOptions = {}): Promise<Job> {
    return waitForJob(this.jobSource, id, options);
  }

  /** @internal */
  unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
    return unwrap(call);
  }
}

/** `spool.jobs`. */
export class JobsResource {
  readonly #spool: Spool;

  constructor(spool: Spool) {
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

/** `spool.uploads`. */
export class UploadsResource {
  readonly #spool: Spool;

  constructor(spool: Spool) {
    this.#spool = spool;
  }

  /**
   * `POST /v1/orgs/{org}/uploads`: stores a document's bytes (sent as they are, not as JSON) for
   * jobs to print with `{type: 'upload', upload_id}`; answers the upload.
   */
  async create(
    data: Uint8Array | ArrayBuffer | Blob | string,
    contentType: UploadType,
    options: CallOptions = {},
  ): Promise<Upload> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/uploads', {
        params: { path: { org } },
        // The generated type says string; any body fetch takes goes, untouched.
        body: data as unknown as string,
        bodySerializer: (body: unknown) => body as string,
        headers: { 'Content-Type': contentType },
        signal: options.signal,
      }),
    );
    return answer.upload;
  }
}

/** `spool.printers`. */
export class PrintersResource {
  readonly #spool: Spool;

  constructor(spool: Spool) {
    this.#spool = spool;
  }

  /** `GET /v1/orgs/{org}/printers`: one page of printers. */
  async list(query: ListPrintersQuery = {}, options: CallOptions = {}): Promise<PrinterPage> {
    const org = await this.#spool.org();
    return this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/printers', {
        params: { path: { org }, query },
        signal: options.signal,
      }),
    );
  }

  /** Every printer, across pages. */
  iterate(query: ListPrintersQuery = {}, options: CallOptions = {}): AsyncGenerator<Printer> {
    const pages = walkPages((cursor) =>
      this.list({ ...query, ...(cursor ? { cursor } : {}) }, options),
    );
    return walkItems(pages, (page) => page.printers);
  }
}

/** `spool.locations`. */
export class LocationsResource {
  readonly #spool: Spool;

  constructor(spool: Spool) {
    this.#spool = spool;
  }

  /** `GET /v1/orgs/{org}/locations`: one page of locations. */
  async list(query: ListLocationsQuery = {}, options: CallOptions = {}): Promise<LocationPage> {
    const org = await this.#spool.org();
    return this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/locations', {
        params: { path: { org }, query },
        signal: options.signal,
      }),
    );
  }

  /** Every location, across pages. */
  iterate(query: ListLocationsQuery = {}, options: CallOptions = {}): AsyncGenerator<Location> {
    const pages = walkPages((cursor) =>
      this.list({ ...query, ...(cursor ? { cursor } : {}) }, options),
    );
    return walkItems(pages, (page) => page.locations);
  }

  /** `GET /v1/orgs/{org}/locations/{id}`. */
  async get(id: string, options: CallOptions = {}): Promise<Location> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/locations/{id}', {
        params: { path: { org, id } },
        signal: options.signal,
      }),
    );
    return answer.location;
  }
}

/** `spool.pools`: pools of printers, which jobs name with `pool_id` instead of a printer. */
export class PoolsResource {
  readonly #spool: Spool;

  constructor(spool: Spool) {
    this.#spool = spool;
  }

  /** `POST /v1/orgs/{org}/pools`: creates a pool (scope `printers:write`); answers it. */
  async create(body: CreatePoolRequest, options: CreateOptions = {}): Promise<Pool> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/pools', {
        params: { path: { org } },
        body,
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    return answer.pool;
  }

  /** `GET /v1/orgs/{org}/pools`: one page of pools, oldest first. */
  async list(query: ListPoolsQuery = {}, options: CallOptions = {}): Promise<PoolPage> {
    const org = await this.#spool.org();
    return this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/pools', {
        params: { path: { org }, query },
        signal: options.signal,
      }),
    );
  }

  /** Every pool, across pages. */
  iterate(query: ListPoolsQuery = {}, options: CallOptions = {}): AsyncGenerator<Pool> {
    const pages = walkPages((cursor) =>
      this.list({ ...query, ...(cursor ? { cursor } : {}) }, options),
    );
    return walkItems(pages, (page) => page.items);
  }

  /** `GET /v1/orgs/{org}/pools/{id}`. */
  async get(id: string, options: CallOptions = {}): Promise<Pool> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/pools/{id}', {
        params: { path: { org, id } },
        signal: options.signal,
      }),
    );
    return answer.pool;
  }

  /** `PATCH /v1/orgs/{org}/pools/{id}`: changes the fields given; `printer_ids` replaces them all. */
  async update(id: string, body: UpdatePoolRequest, options: CallOptions = {}): Promise<Pool> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.PATCH('/v1/orgs/{org}/pools/{id}', {
        params: { path: { org, id } },
        body,
        signal: options.signal,
      }),
    );
    return answer.pool;
  }

  /**
   * `DELETE /v1/orgs/{org}/pools/{id}`; `ConflictError` while jobs of the pool wait for a member.
   */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    const org = await this.#spool.org();
    await this.#spool.unwrap(
      this.#spool.api.DELETE('/v1/orgs/{org}/pools/{id}', {
        params: { path: { org, id } },
        signal: options.signal,
      }),
    );
  }
}

/** `spool.enrollments`: one-use codes a station's agent exchanges for its device token. */
export class EnrollmentsResource {
  readonly #spool: Spool;

  constructor(spool: Spool) {
    this.#spool = spool;
  }

  /**
   * `POST /v1/orgs/{org}/enrollments`: a code for the station named (scope `stations:write`);
   * answers it with its `code`, shown this once. `CodeNotShownError` when the answer of the try
   * that made it was lost: create another.
   */
  async create(body: CreateEnrollmentRequest, options: CreateOptions = {}): Promise<Enrollment> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/enrollments', {
        params: { path: { org } },
        body,
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    if (answer.enrollment.code === undefined) throw new CodeNotShownError(answer.enrollment);
    return answer.enrollment;
  }
}

/**
 * `spool.children`: a platform's child organizations, one for each of its customers (scopes
 * `orgs:read` and `orgs:write`). The parent's key acts on a child's routes too: a client made with
 * `org: child.id` sends its jobs, reads its printers and manages its webhooks.
 */
export class ChildrenResource {
  readonly #spool: Spool;

  constructor(spool: Spool) {
    this.#spool = spool;
  }

  /**
   * `POST /v1/orgs/{org}/children`: creates a child organization; answers it. `ConflictError`
   * when the key's organization is itself a child (one level only).
   */
  async create(body: CreateChildOrgRequest, options: CreateOptions = {}): Promise<ChildOrg> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.POST('/v1/orgs/{org}/children', {
        params: { path: { org } },
        body,
        headers: keyHeader(options),
        signal: options.signal,
      }),
    );
    return answer.org;
  }

  /** `GET /v1/orgs/{org}/children`: one page of children, oldest first; `reference` filters. */
  async list(query: ListChildOrgsQuery = {}, options: CallOptions = {}): Promise<ChildOrgPage> {
    const org = await this.#spool.org();
    return this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/children', {
        params: { path: { org }, query },
        signal: options.signal,
      }),
    );
  }

  /** Every child organization of the list, across pages. */
  iterate(query: ListChildOrgsQuery = {}, options: CallOptions = {}): AsyncGenerator<ChildOrg> {
    const pages = walkPages((cursor) =>
      this.list({ ...query, ...(cursor ? { cursor } : {}) }, options),
    );
    return walkItems(pages, (page) => page.items);
  }

  /** `GET /v1/orgs/{org}/children/{id}`; `NotFoundError` for an organization not a child of it. */
  async get(id: string, options: CallOptions = {}): Promise<ChildOrg> {
    const org = await this.#spool.org();
    const answer = await this.#spool.unwrap(
      this.#spool.api.GET('/v1/orgs/{org}/children/{id}', {
        params: { path: { org, id } },
        signal: options.signal,
      }),
    );
    return answer.org;
  }

  /**
   * `DELETE /v1/orgs/{org}/children/{id}`: deletes the child and everything it has. A large one
   * takes more than one request (each answering 202 until the last's 204): this sends them until
   * it is gone.
   */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    const org = await this.#spool.org();
    for (;;) {
      const answer = await this.#spool.api.DELETE('/v1/orgs/{org}/children/{id}', {
        params: { path: { org, id } },
        signal: options.signal,
      });
      await this.#spool.unwrap(Promise.resolve(answer));
      if (answer.response.status !== 202) return;
    }
  }
}
