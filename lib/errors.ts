/**
 * The one error catalogue of Spool (DESIGN §4). Every error a client can see has a code here, with
 * its HTTP status and the gRPC status it travels as between services. Services throw
 * {@link SpoolError}; the gRPC boundary turns it into a status plus metadata, and the gateway turns
 * that back into the HTTP envelope. Nothing else decides a status or formats an error body.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';

export const ERROR_CATALOGUE = {
  invalid: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  unknown_field: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  malformed_json: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  unauthorized: { http: 401, grpc: GrpcStatus.UNAUTHENTICATED },
  forbidden: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED },
  not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND },
  method_not_allowed: { http: 405, grpc: GrpcStatus.UNIMPLEMENTED },
  conflict: { http: 409, grpc: GrpcStatus.FAILED_PRECONDITION },
  content_deleted: { http: 410, grpc: GrpcStatus.FAILED_PRECONDITION },
  gone: { http: 410, grpc: GrpcStatus.FAILED_PRECONDITION },
  payload_too_large: { http: 413, grpc: GrpcStatus.OUT_OF_RANGE },
  unsupported_media_type: { http: 415, grpc: GrpcStatus.INVALID_ARGUMENT },
  rate_limited: { http: 429, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  headers_too_large: { http: 431, grpc: GrpcStatus.INVALID_ARGUMENT },
  internal: { http: 500, grpc: GrpcStatus.INTERNAL },
  unavailable: { http: 503, grpc: GrpcStatus.UNAVAILABLE },
  timeout: { http: 504, grpc: GrpcStatus.DEADLINE_EXCEEDED },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CATALOGUE, value);
}

/** What a gRPC status means when the peer sent no catalogue code with it. */
const CODE_FOR_GRPC_STATUS: Partial<Record<GrpcStatus, ErrorCode>> = {
  [GrpcStatus.INVALID_ARGUMENT]: 'invalid',
  [GrpcStatus.UNAUTHENTICATED]: 'unauthorized',
  [GrpcStatus.PERMISSION_DENIED]: 'forbidden',
  [GrpcStatus.NOT_FOUND]: 'not_found',
  [GrpcStatus.ALREADY_EXISTS]: 'conflict',
  [GrpcStatus.FAILED_PRECONDITION]: 'conflict',
  [GrpcStatus.ABORTED]: 'conflict',
  [GrpcStatus.OUT_OF_RANGE]: 'payload_too_large',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'rate_limited',
  [GrpcStatus.UNAVAILABLE]: 'unavailable',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'timeout',
  [GrpcStatus.CANCELLED]: 'unavailable',
};

export function codeForGrpcStatus(status: number): ErrorCode {
  return CODE_FOR_GRPC_STATUS[status as GrpcStatus] ?? 'internal';
}

export interface SpoolErrorOptions {
  /** The request field the error is about (`param` in the envelope). */
  param?: string;
  /** Seconds a client should wait before trying again (`Retry-After`). */
  retryAfter?: number;
  cause?: unknown;
}

/**
 * An error whose message is safe to show to the caller. Anything thrown that is not a SpoolError is
 * reported as `internal` with a generic message, so no stray detail leaks out.
 */
export class SpoolError extends Error {
  readonly code: ErrorCode;
  readonly param: string | undefined;
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, message: string, options: SpoolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SpoolError';
    this.code = code;
    this.param = options.param;
    // Every 503 and 504 tells the client when to try again.
    this.retryAfter =
      options.retryAfter ?? (code === 'unavailable' || code === 'timeout' ? 1 : undefined);
  }

  get httpStatus(): number {
    return ERROR_CATALOGUE[this.code].http;
  }

  get grpcStatus(): GrpcStatus {
    return ERROR_CATALOGUE[this.code].grpc;
  }
}

export function isSpoolError(err: unknown): err is SpoolError {
  return err instanceof SpoolError;
}

export const invalid = (message: string, param?: string) =>
  new SpoolError('invalid', message, param === undefined ? {} : { param });
export const notFound = (message: string) => new SpoolError('not_found', message);

/** `text` trimmed, refused (400 naming `param`) when longer than `max` characters. */
export function trimmedText(text: string, max: number, param: string): string {
  const trimmed = text.trim();
  if (trimmed.length > max) throw invalid(`${param} must be at most ${max} characters`, param);
  return trimmed;
}

export const conflict = (message: string, param?: string) =>
  new SpoolError('conflict', message, param === undefined ? {} : { param });
/** What a change to an organization whose deletion began is told, wherever it is refused. */
export const orgDeleting = (orgId: string) =>
  conflict(
    `organization ${orgId} is being deleted: nothing can be added to it or changed; ` +
      `DELETE /admin/v1/orgs/${orgId} again finishes its deletion`,
  );
export const unauthorized = (message: string) => new SpoolError('unauthorized', message);
export const forbidden = (message: string) => new SpoolError('forbidden', message);
