import { type CallOptions, type CreateOptions, keyHeader } from '../calls.js';
import { walkItems, walkPages } from '../pages.js';
import type {
  ChildOrg,
  ChildOrgPage,
  CreateChildOrgRequest,
  ListChildOrgsQuery,
} from '../types.js';
import type { ResourceContext } from './context.js';

/**
 * `spool.children`: a platform's child organizations, one for each of its customers (scopes
 * `orgs:read` and `orgs:write`). The parent's key acts on a child's routes too: a client made with
 * `org: child.id` sends its jobs, reads its printers and manages its webhooks.
 */
export class ChildrenResource {
  readonly #spool: ResourceContext;

  constructor(spool: ResourceContext) {
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
