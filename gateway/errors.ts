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
      if (isSpoolError(thrown)) {
        err = thrown;
        if (err.code === 'internal')
          logger.error({ err, requestId: ctx.state.requestId }, err.message);
      } else if (isTransient(thrown)) {
        logger.warn({ err: thrown, requestId: ctx.state.requestId }, 'a dependency is unavailable');
        err = unavailable(thrown);
      } else {
        logger.error({ err: thrown, requestId: ctx.state.requestId }, 'unhandled error');
        err = new SpoolError('internal', 'internal error');
      }
      ctx.status = err.httpStatus;
      if (err.retryAfter !== undefined) ctx.set('Retry-After', String(Math.ceil(err.retryAfter)));
      ctx.body = errorEnvelope(err, ctx.state.requestId);
    }
  };
}
