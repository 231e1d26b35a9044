import { type CreateOptions, keyHeader } from '../calls.js';
import { CodeNotShownError } from '../errors.js';
import type { CreateEnrollmentRequest, Enrollment } from '../types.js';
import type { ResourceContext } from './context.js';

/** `spool.enrollments`: one-use codes a station's agent exchanges for its device token. */
export class EnrollmentsResource {
  readonly #spool: ResourceContext;

  constructor(spool: ResourceContext) {
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
