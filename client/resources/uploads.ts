import type { CallOptions } from '../calls.js';
import type { Upload, UploadType } from '../types.js';
import type { ResourceContext } from './context.js';

/** `spool.uploads`. */
export class UploadsResource {
  readonly #spool: ResourceContext;

  constructor(spool: ResourceContext) {
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
