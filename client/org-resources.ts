/**
 * The resources of an organization's set-up: pools of printers, station enrollment codes, and a
 * platform's child organizations. Each acts through the {@link ApiContext} its client gives it.
 */
import {
  type ApiContext,
  type CallOptions,
  type CreateOptions,
  keyHeader,
  unwrap,
} from './calls.js';
import { CodeNotShownError } from './errors.js';
import { walkItems, walkPages } from './pages.js';
import type {
  ChildOrg,
  ChildOrgPage,
  CreateChildOrgRequest,
  CreateEnrollmentRequest,
  CreatePoolRequest,
  Enrollment,
  ListChildOrgsQuery,
  ListPoolsQuery,
  Pool,
  PoolPage,
  UpdatePoolRequest,
} from './types.js';

/** `spool.pools`: pools of printers, which jobs name with `pool_id` instead of a printer. */
export class PoolsResource {
  readonly #spool: ApiContext;

  constructor(spool: ApiContext) {
    this.#spool = spool;
  }

  /** `POST /v1/orgs/{org}/pools`: creates a pool (scope `printers:write`); answers it. */
  async create(body: CreatePoolRequest, options: CreateOptions = {}): Promise<Pool> {
    const org = await this.#spool.org();
    const answer = await unwrap(
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
    return unwrap(
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
    const answer = await unwrap(
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
    const answer = await unwrap(
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
    await unwrap(
      this.#spool.api.DELETE('/v1/orgs/{org}/pools/{id}', {
        params: { path: { org, id } },
        signal: options.signal,
      }),
    );
  }
}

/** `spool.enrollments`: one-use codes a station's agent exchanges for its device token. */
export class EnrollmentsResource {
  readonly #spool: ApiContext;

  constructor(spool: ApiContext) {
    this.#spool = spool;
  }

  /**
   * `POST /v1/orgs/{org}/enrollments`: a code for the station named (scope `stations:write`);
   * answers it with its `code`, shown this once. `CodeNotShownError` when the answer of the try
   * that made it was lost: create another.
   */
  async create(body: CreateEnrollmentRequest, options: CreateOptions = {}): Promise<Enrollment> {
    const org = await this.#spool.org();
    const answer = await unwrap(
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
  readonly #spool: ApiContext;

  constructor(spool: ApiContext) {
    this.#spool = spool;
  }

  /**
   * `POST /v1/orgs/{org}/children`: creates a child organization; answers it. `ConflictError`
   * when the key's organization is itself a child (one level only).
   */
  async create(body: CreateChildOrgRequest, options: CreateOptions = {}): Promise<ChildOrg> {
    const org = await this.#spool.org();
    const answer = await unwrap(
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
    return unwrap(
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
    const answer = await unwrap(
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
      await unwrap(Promise.resolve(answer));
      if (answer.response.status !== 202) return;
    }
  }
}
