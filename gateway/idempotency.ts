/**
 * `Idempotency-Key` on the API's POSTs (DESIGN §4): the same key with the same request within
 * 24 hours, from any key of the organization of the same mode (lib/idempotency-keys.ts), answers
 * what the first answered, without doing the work again; the same key with another request is a
 * 409 naming the key; a request whose twin is still running is a 409 too, so concurrent retries
 * create one job. "The same request" compares the parsed JSON body, so whitespace and the order of
 * fields do not matter.
 *
 * Only successful answers are kept. An error did nothing, so it releases the key and the client's
 * retry does the work: one refused for a cause that has gone since (the test keys' daily limit, a
 * printer not yet linked, a service restarting) then succeeds, where a kept error would have been
 * replayed for a day. A request that creates a job hands its claim to the jobs service, which
 * completes it in the job's own transaction: a retry then finds the job even when the answer was
 * lost on its way back.
 */
import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import stringify from 'safe-stable-stringify';
import { invalid, SpoolError } from '../lib/errors.js';
import { recordedKey } from '../lib/idempotency-keys.js';
import { readRaw } from './body.js';
import type { JobsClient } from './clients.js';
import type { GatewayState } from './state.js';

const KEY = /^[\x21-\x7e]{1,255}$/;

export function idempotency(jobs: JobsClient, bodyLimit: number): Middleware<GatewayState> {
  return async (ctx, next) => {
    if (ctx.headers['idempotency-key'] === undefined) return next();
    const key = ctx.get('idempotency-key');
    if (!KEY.test(key)) {
      throw invalid('Idempotency-Key must be 1 to 255 visible ASCII characters', 'Idempotency-Key');
    }
    const orgId = ctx.state.orgId ?? ctx.state.key?.orgId ?? '';
    const raw = await readRaw(ctx, bodyLimit);
    const fingerprint = requestFingerprint(ctx.method, ctx.path, ctx.get('content-type'), raw);
    const scoped = recordedKey(key, ctx.state.key?.live === false && !ctx.state.session);
    const claim = await jobs.claimIdempotencyKey({ orgId, key: scoped, fingerprint });
    if (claim.state === 'completed') {
      ctx.status = claim.status;
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = JSON.parse(Buffer.from(claim.body).toString('utf8'));
      return;
    }
    if (claim.state === 'in_progress') {
      throw new SpoolError(
        'conflict',
        `a request with the Idempotency-Key ${JSON.stringify(key)} is still in progress; try again`,
        { param: 'Idempotency-Key', retryAfter: 1 },
      );
    }
    const held = { key: scoped, claim: claim.claim };
    ctx.state.idempotency = held;
    let status: number;
    let answer: unknown;
    const release = () => jobs.releaseIdempotencyKey({ orgId, ...held }).catch(() => undefined);
    try {
      await next();
      status = ctx.status;
      answer = ctx.body;
    } catch (err) {
      await release();
      throw err;
    }
    if (status >= 400) {
      await release();
      return;
    }
    // The work is done, so its answer goes out even if recording it fails: a job's creation has
    // recorded it already, and any other claim goes stale and lets a retry through.
    await jobs
      .completeIdempotencyKey({
        orgId,
        ...held,
        status,
        body: Buffer.from(JSON.stringify(withoutSecret(answer ?? {}))),
      })
      .catch(() => undefined);
  };
}

/**
 * The answer as its key's record keeps it: a secret shown once (a webhook endpoint's signing
 * secret, a station's enrollment code) is never stored outside its service, so a replay answers
 * without it.
 */
function withoutSecret(answer: unknown): unknown {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return answer;
  const { secret: _shownOnce, ...rest } = answer as Record<string, unknown>;
  const enrollment = rest.enrollment;
  if (typeof enrollment === 'object' && enrollment !== null) {
    const { code: _codeShownOnce, ...kept } = enrollment as Record<string, unknown>;
    rest.enrollment = kept;
  }
  return rest;
}

/** What makes two requests with one key the same request: method, path, media type and body. */
export function requestFingerprint(
  method: string,
  path: string,
  contentType: string,
  raw: Buffer,
): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${mediaType(contentType)}\n`)
    .update(canonical(raw))
    .digest('hex');
}

/** `application/json; charset=utf-8` → `application/json`. */
function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

/**
 * The body as compared between twins: JSON in one canonical form (keys sorted, no insignificant
 * white space), anything else (including JSON that does not parse, which the route refuses
 * anyway) as its bytes.
 */
function canonical(raw: Buffer): Buffer | string {
  if (raw.length === 0) return raw;
  try {
    return stringify(JSON.parse(raw.toString('utf8'))) ?? '';
  } catch {
    return raw;
  }
}
