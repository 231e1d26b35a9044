import type { CallOptions } from '../calls.js';
import { walkItems, walkPages } from '../pages.js';
import type { ListLocationsQuery, Location, LocationPage } from '../types.js';
import type { ResourceContext } from './context.js';

/** `spool.locations`. */
export class LocationsResource {
  readonly #spool: ResourceContext;

  constructor(spool: ResourceContext) {
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
