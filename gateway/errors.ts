/**
 * The one error middleware, at the head of the chain: whatever is thrown below it becomes the
 * catalogue's envelope `{error: {code, message, param?, request_id}}`. Only SpoolError messages are
 * shown; anything else is logged and answered as `internal` without detail.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Middleware } from 'koa';
import { ERROR_CATALOGUE, isSpoolError, SpoolError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { isTransient, unavailable } from '../lib/transient.js';
import type { GatewayState } from './state.js';

export function errorEnvelope(err: SpoolError, requestId: string) {
  return {
    error: {
      code: err.code,
      message: err.message,
      ...(err.param === undefined ? {} : { param: err.param }),
      request_id: requestId,
    },
  };
}

/**
 * Answers what Node's HTTP parser refuses before any middleware sees it (headers over its size
 * limit, a request that is not HTTP) in the catalogue's envelope too, rather than Node's bare
 * status line; the connection is then closed.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const refusal =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new SpoolError(
          'headers_too_large',
          'the request line and headers are too large (a long URL or query, or large cookies)',
        )
      : new SpoolError('invalid', 'the request is not valid HTTP/1.1');
  const requestId = randomUUID();
  const body = JSON.stringify(errorEnvelope(refusal, requestId));
  const status = ERROR_CATALOGUE[refusal.code].http;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

export function errorMiddleware(logger: Logger): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      let err: SpoolError;
      const request_id = ctx.state.requestId;
      if (isSpoolError(thrown)) {
        err = thrown;
        if (err.code === 'internal') logger.error({ err, request_id }, err.message);
        // A service that could not be reached, or answered that it could not serve: said once,
        // with what the transport or the service said, since the client's message is general.
        if (err.code === 'unavailable' || err.code === 'timeout') {
          logger.warn({ err, request_id }, err.message);
        }
      } else if (isTransient(thrown)) {
        logger.warn({ err: thrown, request_id }, 'a dependency is unavailable');
        err = unavailable(thrown);
      } else {
        logger.error({ err: thrown, request_id }, 'unhandled error');
        err = new SpoolError('internal', 'internal error');
      }
      ctx.status = err.httpStatus;
      if (err.retryAfter !== undefined) ctx.set('Retry-After', String(Math.ceil(err.retryAfter)));
      ctx.body = errorEnvelope(err, ctx.state.requestId);
    }
  };
}
