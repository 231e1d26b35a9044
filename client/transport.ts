/**
 * The fetch the client sends every call through: it gives each creating call an
 * `Idempotency-Key`, and retries what is safe to retry, waiting as long as Spool's `Retry-After`
 * asks (within bounds), so one call survives a restart of a Spool component or a short overload.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseRetryAfter, SecretNotShownError, SpoolConnectionError } from './errors.js';

/** How the client retries. */
export interface RetryOptions {
  /** Retries after the first attempt (0 turns retrying off); 3 by default. */
  maxRetries?: number;
  /**
   * The longest the client waits before one retry, in milliseconds; 30 000 by default. An answer
   * asking for a longer wait (such as a test key's daily limit, until midnight UTC) is handed to
   * the caller as its error instead of being waited out.
   */
  maxDelayMs?: number;
  /** The first wait when the answer does not say (doubled each retry, with jitter); 500 ms. */
  baseDelayMs?: number;
}

/** The defaults of {@link RetryOptions}. */
export const DEFAULT_RETRY: Required<RetryOptions> = {
  maxRetries: 3,
  maxDelayMs: 30_000,
  baseDelayMs: 500,
};

/** The header that makes a repeated POST answer what the first one did (docs/jobs.md). */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** Methods that change nothing, so sending them twice is always safe. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The calls whose answer carries a webhook endpoint's signing secret, once: create and rotate. */
const SECRET_SHOWN_ONCE = /\/v1\/orgs\/[^/]+\/webhooks(?:\/[^/]+\/rotate)?$/;

/**
 * Throws when a call that shows a secret once answers from its `Idempotency-Key` record, which
 * keeps no secret: the try that made it was done, and its answer lost.
 */
async function checkSecretShown(req: Request, res: Response): Promise<void> {
  if (req.method !== 'POST' || !res.ok || res.headers.get('idempotent-replayed') !== 'true') return;
  if (!SECRET_SHOWN_ONCE.test(new URL(req.url).pathname)) return;
  const body = (await res
    .clone()
    .json()
    .catch(() => undefined)) as { secret?: unknown; endpoint?: { id: string } } | undefined;
  if (body?.endpoint && body.secret === undefined) throw new SecretNotShownError(body.endpoint);
}

/**
 * Whether the same request may be sent again: 429 and 503 say nothing was done, always; 504
 * (`timeout`) says it may have been, so only a request that cannot be done twice is sent again
 * (a GET, or a call with its `Idempotency-Key`); 409 with `Retry-After` is Spool saying the twin
 * of this idempotent request is still running, so the retry gets the twin's answer once it has one.
 */
function retryable(res: Response, idempotent: boolean): boolean {
  if (res.status === 429 || res.status === 503) return true;
  if (res.status === 504) return idempotent;
  return res.status === 409 && idempotent && res.headers.has('retry-after');
}

/**
 * Wraps `fetchImpl` (globalThis.fetch by default) into the client's fetch. POSTs without an
 * `Idempotency-Key` get a random UUID, which stays the same across the retries of one call.
 * Connection errors are retried only for calls that are safe to repeat: GETs and keyed POSTs.
 */
export function createTransport(
  options: RetryOptions = {},
  fetchImpl: (req: Request) => Promise<Response> = (req) => fetch(req),
): (request: Request) => Promise<Response> {
  const { maxRetries, maxDelayMs, baseDelayMs } = { ...DEFAULT_RETRY, ...options };
  const backoff = (retry: number) =>
    Math.min(maxDelayMs, baseDelayMs * 2 ** retry) * (0.5 + Math.random() / 2);

  return async (request) => {
    let req = request;
    if (req.method === 'POST' && !req.headers.has(IDEMPOTENCY_HEADER)) {
      const headers = new Headers(req.headers);
      headers.set(IDEMPOTENCY_HEADER, randomUUID());
      req = new Request(req, { headers });
    }
    const idempotent = SAFE_METHODS.has(req.method) || req.headers.has(IDEMPOTENCY_HEADER);
    for (let retry = 0; ; retry++) {
      let res: Response;
      try {
        // A clone per attempt: a body can be read only once.
        res = await fetchImpl(req.clone());
      } catch (err) {
        if (req.signal.aborted) throw req.signal.reason ?? err;
        if (!idempotent || retry >= maxRetries) {
          throw new SpoolConnectionError(new URL(req.url).origin, err);
        }
        await sleep(backoff(retry), undefined, { signal: req.signal });
        continue;
      }
      if (retry >= maxRetries || !retryable(res, idempotent)) {
        await checkSecretShown(req, res);
        return res;
      }
      const after = parseRetryAfter(res.headers.get('retry-after'));
      const delay = after === undefined ? backoff(retry) : after * 1000;
      if (delay > maxDelayMs) return res;
      // Free the connection: this answer's body is not needed.
      await res.body?.cancel();
      await sleep(delay, undefined, { signal: req.signal });
    }
  };
}
