import { type CallOptions, type CreateOptions, keyHeader } from '../calls.js';
import { walkItems, walkPages } from '../pages.js';
import type {
  CreatePoolRequest,
  ListPoolsQuery,
  Pool,
  PoolPage,
  UpdatePoolRequest,
} from '../types.js';
import type { ResourceContext } from './context.js';

/** `spool.pools`: pools of printers, which jobs name with `pool_id` instead of a printer. */
export class PoolsResource {
  readonly #spool: ResourceContext;

  constructor(spool: ResourceContext) {
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
