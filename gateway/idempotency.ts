/**
 * `Idempotency-Key` on the API's POSTs (DESIGN §4): the same key with the same request within
 * 24 hours answers what the first answered, without doing the work again; the same key with
 * another request is a 409 naming the key; a request whose twin is still running is a 409 too, so
 * concurrent retries create one job. Answers below 500 are kept; a 5xx releases the key so that
 * the client's retry does the work.
 */
import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import { conflict, invalid, isSpoolError } from '../lib/errors.js';
import { readRaw } from './body.js';
import type { JobsClient } from './clients.js';
import { errorEnvelope } from './errors.js';
import type { GatewayState } from './state.js';

const KEY = /^[\x21-\x7e]{1,255}$/;

export function idempotency(jobs: JobsClient, bodyLimit: number): Middleware<GatewayState> {
  return async (ctx, next) => {
    const key = ctx.get('idempotency-key');
    if (key === '') return next();
    if (!KEY.test(key)) {
      throw invalid('Idempotency-Key must be 1 to 255 visible ASCII characters', 'Idempotency-Key');
    }
    const orgId = ctx.state.key?.orgId ?? '';
    const raw = await readRaw(ctx, bodyLimit);
    const fingerprint = createHash('sha256')
      .update(`${ctx.method} ${ctx.path}\n${ctx.get('content-type')}\n`)
      .update(raw)
      .digest('hex');
    const claim = await jobs.claimIdempotencyKey({ orgId, key, fingerprint });
    if (claim.state === 'completed') {
      ctx.status = claim.status;
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = JSON.parse(Buffer.from(claim.body).toString('utf8'));
      return;
    }
    if (claim.state === 'in_progress') {
      throw conflict(
        `a request with the Idempotency-Key ${JSON.stringify(key)} is still in progress; try again`,
        'Idempotency-Key',
      );
    }
    let status: number;
    let answer: unknown;
    try {
      await next();
      status = ctx.status;
      answer = ctx.body;
    } catch (err) {
      if (!isSpoolError(err) || err.httpStatus >= 500) {
        await jobs.releaseIdempotencyKey({ orgId, key }).catch(() => undefined);
        throw err;
      }
      await jobs.completeIdempotencyKey({
        orgId,
        key,
        status: err.httpStatus,
        body: Buffer.from(JSON.stringify(errorEnvelope(err, ctx.state.requestId))),
      });
      throw err;
    }
    if (status >= 500) {
      await jobs.releaseIdempotencyKey({ orgId, key }).catch(() => undefined);
      return;
    }
    await jobs.completeIdempotencyKey({
      orgId,
      key,
      status,
      body: Buffer.from(JSON.stringify(answer ?? {})),
    });
  };
}
