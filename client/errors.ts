/**
 * What the client throws. Every failed call is a {@link SpoolApiError} carrying the envelope
 * Spool answered (`{error: {code, message, param?, request_id}}`), as the subclass of its code
 * (`NotFoundError`, `ConflictError`…), so callers catch by class or test with
 * {@link isSpoolApiError}. A call that never got an answer is a {@link SpoolConnectionError}.
 */
import type { ErrorEnvelope, Job } from './types.js';

/** The codes of Spool's error catalogue (docs/api.md, Errors). */
export type ApiErrorCode = ErrorEnvelope['error']['code'];

/** Base of everything the client throws, so one `instanceof SpoolError` catches them all. */
export class SpoolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SpoolError';
  }
}

/** Spool answered with an error (any status of 400 and above). */
export class SpoolApiError extends SpoolError {
  /** The HTTP status. */
  readonly status: number;
  /** The catalogue code, such as `not_found`. */
  readonly code: ApiErrorCode;
  /** The request field the error is about, when there is one. */
  readonly param: string | undefined;
  /** Spool's id of the request (the `Request-Id` header); quote it when asking for help. */
  readonly requestId: string | undefined;
  /** Seconds Spool asked to wait before trying again (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined;
  /** The whole envelope as Spool sent it. */
  readonly envelope: ErrorEnvelope;

  constructor(status: number, envelope: ErrorEnvelope, retryAfter?: number) {
    super(envelope.error.message);
    // The subclass's name, for readable stack traces and logs: `NotFoundError: no job …`.
    this.name = new.target.name;
    this.status = status;
    this.code = envelope.error.code;
    this.param = envelope.error.param;
    this.requestId = envelope.error.request_id;
    this.retryAfter = retryAfter;
    this.envelope = envelope;
  }
}

/** 400 `invalid`: a value is missing or wrong; `param` names it. */
export class InvalidError extends SpoolApiError {}
/** 400 `unknown_field`: the body has a field the endpoint does not take; `param` names it. */
export class UnknownFieldError extends SpoolApiError {}
/** 400 `malformed_json`: the body is not JSON. */
export class MalformedJsonError extends SpoolApiError {}
/** 401 `unauthorized`: no key, or an unknown, revoked or expired one. */
export class UnauthorizedError extends SpoolApiError {}
/** 403 `forbidden`: the key lacks a scope, or is used from an address it does not allow. */
export class ForbiddenError extends SpoolApiError {}
/** 404 `not_found`: no such resource (or an organization other than the key's). */
export class NotFoundError extends SpoolApiError {}
/** 405 `method_not_allowed`: the path exists but not with this method. */
export class MethodNotAllowedError extends SpoolApiError {}
/** 409 `conflict`: the resource is in the wrong state for the action, or an idempotency clash. */
export class ConflictError extends SpoolApiError {}
/** 410 `content_deleted`: a job's document is past retention. */
export class ContentDeletedError extends SpoolApiError {}
/** 410 `gone`: it was there and is no more: an enrollment code used already, or expired. */
export class GoneError extends SpoolApiError {}
/** 413 `payload_too_large`: the body is over the endpoint's limit. */
export class PayloadTooLargeError extends SpoolApiError {}
/** 415 `unsupported_media_type`. */
export class UnsupportedMediaTypeError extends SpoolApiError {}
/** 429 `rate_limited`: `retryAfter` says when to try again. */
export class RateLimitedError extends SpoolApiError {}
/** 431 `headers_too_large`: the URL, query or headers are over the server's limit. */
export class HeadersTooLargeError extends SpoolApiError {}
/** 500 `internal`: a fault in Spool; `requestId` finds it in Spool's logs. */
export class InternalError extends SpoolApiError {}
/** 503 `unavailable`: a part of Spool is down or restarting; retrying the same call is safe. */
export class UnavailableError extends SpoolApiError {}
/**
 * 504 `timeout`: a part of Spool did not answer in time and may have done what was asked; the
 * client retries it with the same `Idempotency-Key`, which never does it twice.
 */
export class ServiceTimeoutError extends SpoolApiError {}

/** The class thrown for each code; `satisfies` makes a new catalogue code a build error here. */
export const API_ERROR_CLASSES = {
  invalid: InvalidError,
  unknown_field: UnknownFieldError,
  malformed_json: MalformedJsonError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  conflict: ConflictError,
  content_deleted: ContentDeletedError,
  gone: GoneError,
  payload_too_large: PayloadTooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  rate_limited: RateLimitedError,
  headers_too_large: HeadersTooLargeError,
  internal: InternalError,
  unavailable: UnavailableError,
  timeout: ServiceTimeoutError,
} as const satisfies Record<ApiErrorCode, typeof SpoolApiError>;

/** The status Spool uses for each code, for answers that carry no envelope (a proxy's 502…). */
const CODE_FOR_STATUS: Record<number, ApiErrorCode> = {
  400: 'invalid',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'content_deleted',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'unavailable',
  504: 'timeout',
};

function isEnvelope(body: unknown): body is ErrorEnvelope {
  const error = (body as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof error.code === 'string' &&
    Object.hasOwn(API_ERROR_CLASSES, error.code) &&
    typeof error.message === 'string'
  );
}

/**
 * The error for an answer of `status` with `body` (parsed JSON, or text when it was not JSON). An
 * answer without Spool's envelope (from a proxy in front of Spool) gets one made from its status.
 */
export function apiErrorFromAnswer(status: number, body: unknown, headers: Headers): SpoolApiError {
  const retryAfter = parseRetryAfter(headers.get('retry-after'));
  const envelope: ErrorEnvelope = isEnvelope(body)
    ? body
    : {
        error: {
          code: CODE_FOR_STATUS[status] ?? (status >= 500 ? 'unavailable' : 'invalid'),
          message:
            typeof body === 'string' && body.trim() !== ''
              ? `HTTP ${status}: ${body.trim().slice(0, 200)}`
              : `HTTP ${status} without an error body`,
          request_id: headers.get('request-id') ?? '',
        },
      };
  const Class = API_ERROR_CLASSES[envelope.error.code];
  return new Class(status, envelope, retryAfter);
}

/** `Retry-After` as seconds from now: delta-seconds or an HTTP date; undefined when absent. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Whether `err` is an API error, and, given `code`, one with that code:
 * `if (isSpoolApiError(err, 'not_found')) …`.
 */
export function isSpoolApiError(err: unknown, code?: ApiErrorCode): err is SpoolApiError {
  return err instanceof SpoolApiError && (code === undefined || err.code === code);
}

/** No answer came: Spool could not be reached, or the connection broke before it answered. */
/**
 * A webhook endpoint's creation, or its secret's rotation, was done by an earlier try of the same
 * call (its `Idempotency-Key`), whose answer, the only one to carry the signing secret, was lost.
 * Spool shows a secret once, so this answer has none: rotate the secret to get one to keep.
 */
export class SecretNotShownError extends SpoolError {
  /** The endpoint as Spool answered it, without its secret. */
  readonly endpoint: { id: string } & Record<string, unknown>;

  constructor(endpoint: { id: string } & Record<string, unknown>) {
    super(
      `webhook endpoint ${endpoint.id}: an earlier try of this call was done, but its answer, the only one with the signing secret, was lost; Spool shows a secret once, so rotate it (POST /v1/orgs/{org}/webhooks/${endpoint.id}/rotate) to get one`,
    );
    this.name = 'SecretNotShownError';
    this.endpoint = endpoint;
  }
}

/**
 * A station's enrollment code was made by an earlier try of the same call (its `Idempotency-Key`),
 * whose answer, the only one to carry the code, was lost. Spool keeps no code it can show again:
 * make another one.
 */
export class CodeNotShownError extends SpoolError {
  /** The enrollment as Spool answered it, without its code. */
  readonly enrollment: { id: string } & Record<string, unknown>;

  constructor(enrollment: { id: string } & Record<string, unknown>) {
    super(
      `enrollment ${enrollment.id}: an earlier try of this call made the code, but its answer, the only one with the code, was lost; Spool shows a code once, so create another`,
    );
    this.name = 'CodeNotShownError';
    this.enrollment = enrollment;
  }
}

export class SpoolConnectionError extends SpoolError {
  constructor(url: string, cause: unknown) {
    super(`could not reach Spool at ${url}${reason(cause)}`, { cause });
    this.name = 'SpoolConnectionError';
  }
}

/** The system error code (ECONNREFUSED…) or innermost message of a failed fetch. */
function reason(err: unknown): string {
  let e: unknown = err;
  let last: string | undefined;
  while (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('E')) return ` (${code})`;
    if (!(e instanceof TypeError)) last = e.message;
    e = e instanceof AggregateError && e.errors.length > 0 ? e.errors[0] : e.cause;
  }
  return last ? ` (${last})` : '';
}

/** `waitForJob`: the job finished without reaching what was awaited (it failed or was cancelled). */
export class JobNotPrintedError extends SpoolError {
  /** The job as it finished; `job.status_detail` says why it failed. */
  readonly job: Job;

  constructor(job: Job, awaited: string) {
    super(
      `job ${job.id} is ${job.status}${job.status_detail ? ` (${job.status_detail})` : ''}, not ${awaited}`,
    );
    this.name = 'JobNotPrintedError';
    this.job = job;
  }
}

/** `waitForJob`: `timeoutMs` passed first. `job` is the job as last seen. */
export class WaitTimeoutError extends SpoolError {
  readonly job: Job | undefined;

  constructor(id: string, timeoutMs: number, job: Job | undefined) {
    // Whole seconds read as seconds (the CLI's --timeout is in seconds), anything else in ms.
    const waited =
      timeoutMs % 1000 === 0 || timeoutMs >= 10_000
        ? `${Math.round(timeoutMs / 1000)} s`
        : `${timeoutMs} ms`;
    super(`job ${id} is still ${job?.status ?? 'unknown'} after ${waited}`);
    this.name = 'WaitTimeoutError';
    this.job = job;
  }
}
