/**
 * `Spool`, the client: typed calls to the print-job API made from its OpenAPI document, with
 * idempotency keys, bounded retries, pages as async iterables and waiting for a job.
 */
import createClient, { type Client } from 'openapi-fetch';
import { type Answer, type CallOptions, unwrap } from './calls.js';
import type { paths } from './generated/schema.js';
import { ChildrenResource } from './resources/children.js';
import { EnrollmentsResource } from './resources/enrollments.js';
import { JobsResource } from './resources/jobs.js';
import { LocationsResource } from './resources/locations.js';
import { PoolsResource } from './resources/pools.js';
import { PrintersResource } from './resources/printers.js';
import { UploadsResource } from './resources/uploads.js';
import { createTransport, type RetryOptions } from './transport.js';
import type { Job, KeyInfo, UsageDay, UsageQuery } from './types.js';
import { usageQuery } from './usage.js';
import {
  type JobSource,
  type PollOptions,
  pollingSource,
  type WaitOptions,
  waitForJob,
} from './wait.js';

export type { CallOptions, CreateOptions } from './calls.js';
export {
  ChildrenResource,
  EnrollmentsResource,
  JobsResource,
  LocationsResource,
  PoolsResource,
  PrintersResource,
  UploadsResource,
};

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
