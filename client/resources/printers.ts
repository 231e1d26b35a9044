import type { CallOptions } from '../calls.js';
import { walkItems, walkPages } from '../pages.js';
import type { ListPrintersQuery, Printer, PrinterPage } from '../types.js';
import type { ResourceContext } from './context.js';

/** `spool.printers`. */
export class PrintersResource {
  readonly #spool: ResourceContext;

  constructor(spool: ResourceContext) {
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
