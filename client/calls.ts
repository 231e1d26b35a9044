/**
 * What every call of the client shares: its options, the Idempotency-Key it sends, and the
 * typed error a failed answer throws.
 */
import { apiErrorFromAnswer } from './errors.js';
import { IDEMPOTENCY_HEADER } from './transport.js';

/** Options of one call. */
export interface CallOptions {
  /** Abandons the call (and its retries). */
  signal?: AbortSignal;
}

/** Options of a call that creates something. */
export interface CreateOptions extends CallOptions {
  /**
   * The `Idempotency-Key`: the same key and body within 24 hours answer what the first call did.
   * A random UUID by default, reused by the client's own retries; pass your own (an order number)
   * to make retries of your own, such as after a crash, safe too.
   */
  idempotencyKey?: string;
}

export interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** Throws the typed error of a failed answer; returns the data of a successful one. */
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw apiErrorFromAnswer(response.status, error, response.headers);
  return data as T;
}

/** What Spool takes as an Idempotency-Key, checked here so that a bad one is said plainly. */
const KEY = /^[\x21-\x7e]{1,255}$/;

export function keyHeader(options: CreateOptions): Record<string, string> {
  const key = options.idempotencyKey;
  if (key === undefined) return {};
  if (typeof key !== 'string' || !KEY.test(key)) {
    throw new TypeError(
      `idempotencyKey must be 1 to 255 visible ASCII characters, not ${JSON.stringify(key)}`,
    );
  }
  return { [IDEMPOTENCY_HEADER]: key };
}
