/**
 * The one error middleware, at the head of the chain: whatever is thrown below it becomes the
 * catalogue's envelope `{error: {code, message, param?, request_id}}`. Only SpoolError messages are
 * shown; anything else is logged and answered as `internal` without detail.
 */
import type { Middleware } from 'koa';
import { isSpoolError, SpoolError } from '../lib/errors.js';
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
        if (err.code === 'unavailable') logger.warn({ err, request_id }, err.message);
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
