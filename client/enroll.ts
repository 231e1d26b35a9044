/**
 * `enroll(code)`: the public exchange of a station's enrollment code for the station and its
 * device token (`POST /v1/public/enroll`). It needs no API key: the code is the credential, and
 * works once. `spool agent enroll` makes the same exchange over the station link's address.
 */
import createClient from 'openapi-fetch';
import { apiErrorFromAnswer } from './errors.js';
import type { paths } from './generated/schema.js';
import { createTransport } from './transport.js';
import type { EnrolledStation } from './types.js';

/** Options of {@link enroll}. */
export interface EnrollOptions {
  /** Where Spool answers, such as `https://spool.example.com`; `http://localhost:8080` by default. */
  baseUrl?: string;
  /** The fetch to send the request with; `globalThis.fetch` by default. */
  fetch?: (request: Request) => Promise<Response>;
  signal?: AbortSignal;
}

/**
 * Exchanges `code` (`XXXX-XXXX-XX`; case, spaces and dashes do not matter) for the station it was
 * made for and its device token (`svc_dev_…`, shown once). Throws `NotFoundError` for a code that
 * does not exist, `GoneError` for one used or expired, `RateLimitedError` beyond 10 tries a minute
 * from one address. It is not retried: a try whose answer was lost may have used the code.
 */
export async function enroll(code: string, options: EnrollOptions = {}): Promise<EnrolledStation> {
  const api = createClient<paths>({
    baseUrl: (options.baseUrl ?? 'http://localhost:8080').replace(/\/+$/, ''),
    fetch: createTransport({ maxRetries: 0 }, options.fetch),
  });
  const { data, error, response } = await api.POST('/v1/public/enroll', {
    body: { code },
    signal: options.signal,
  });
  if (!response.ok || data === undefined) {
    throw apiErrorFromAnswer(response.status, error, response.headers);
  }
  return data;
}
