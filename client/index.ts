/**
 * `@spool/client`: Spool's client for Node. {@link Spool} makes typed calls to the print-job API
 * (generated from its OpenAPI document), and {@link verifyWebhook} checks the signature of a
 * webhook delivery. README.md shows both.
 */

export { type EnrollOptions, enroll } from './enroll.js';
export {
  API_ERROR_CLASSES,
  type ApiErrorCode,
  apiErrorFromAnswer,
  CodeNotShownError,
  ConflictError,
  ContentDeletedError,
  ForbiddenError,
  GoneError,
  HeadersTooLargeError,
  InternalError,
  InvalidError,
  isSpoolApiError,
  JobNotPrintedError,
  MalformedJsonError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  parseRetryAfter,
  RateLimitedError,
  SecretNotShownError,
  ServiceTimeoutError,
  SpoolApiError,
  SpoolConnectionError,
  SpoolError,
  UnauthorizedError,
  UnavailableError,
  UnknownFieldError,
  UnsupportedMediaTypeError,
  WaitTimeoutError,
} from './errors.js';
export { walkItems, walkPages } from './pages.js';
export {
  type CallOptions,
  ChildrenResource,
  type CreateOptions,
  EnrollmentsResource,
  JobsResource,
  LocationsResource,
  PoolsResource,
  PrintersResource,
  Spool,
  type SpoolOptions,
  UploadsResource,
} from './spool.js';
export {
  createTransport,
  DEFAULT_RETRY,
  IDEMPOTENCY_HEADER,
  type RetryOptions,
} from './transport.js';
// Every shape of the API the client speaks, by the names the spec gives them.
export type * from './types.js';
export {
  FINISHED_STATUSES,
  isFinished,
  type JobSource,
  type PollOptions,
  pollingSource,
  statusChanges,
  type WaitOptions,
  type WaitUntil,
  waitForJob,
} from './wait.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  isWebhookVerificationError,
  parseSignatureHeader,
  type VerifyOptions,
  verifyWebhook,
  WEBHOOK_ERROR_CODES,
  type WebhookErrorCode,
  type WebhookEvent,
  WebhookVerificationError,
} from './webhooks.js';
