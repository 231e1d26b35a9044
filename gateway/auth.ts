/**
 * Authentication and authorisation of the key-based API (spec §4 rules 1–3, §5): bearer API keys,
 * 401 for a key that is unknown, revoked or expired, 403 naming a missing scope, 404 for an
 * organization other than the key's own or one of its children (DESIGN §5). The operator token
 * guards `/admin/v1`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Clock } from '../lib/clock.js';
import { credentialKind, hashCredential, ipAllowed, type Scope } from '../lib/credentials.js';
import { forbidden, notFound, SpoolError, unauthorized } from '../lib/errors.js';
import { roleForScope, roleMessage } from '../lib/roles.js';
import type { ParentLookup } from './child-orgs.js';
import type { KeyCache } from './key-cache.js';
import type { GatewayState } from './state.js';

/** The token of an `Authorization: Bearer <token>` header; undefined for any other header. */
export function bearer(header: string): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

export interface KeyAuthOptions {
  cache: KeyCache;
  clock: Clock;
  /** GET /v1/key answers a console session with 400 rather than 401 (spec §4 rule 1). */
  sessionIsInvalid?: boolean;
  /** Whether a credential is the operator token, so that its refusal can say what it is. */
  isOperator?: (presented: string) => boolean;
}

/** Requires a valid API key and leaves it on `ctx.state.key`. */
export function requireKey(options: KeyAuthOptions): Middleware<GatewayState> {
  return async (ctx, next) => {
    const token = bearer(ctx.get('authorization'));
    if (!token) {
      throw unauthorized('send an API key as Authorization: Bearer svc_live_… or svc_test_…');
    }
    const kind = credentialKind(token);
    if (kind === 'session') {
      if (options.sessionIsInvalid) {
        throw new SpoolError('invalid', 'this endpoint takes an API key, not a signed-in session');
      }
      throw unauthorized('the key-based API takes API keys, not signed-in sessions');
    }
    if (kind === 'device') {
      throw unauthorized('device tokens are for the station link, not the API');
    }
    if (kind !== 'live' && kind !== 'test') {
      if (options.isOperator?.(token)) {
        throw unauthorized(
          'this is the operator token, which the key-based API does not take: send an API key (svc_live_… or svc_test_…), or use the operator API, /admin/v1',
        );
      }
      throw unauthorized(
        'the API key is not valid: a key is svc_live_ or svc_test_ and 43 letters and digits; check that it was copied whole',
      );
    }
    const { key, orgName } = await options.cache.get(hashCredential(token));
    if (key.expiresAt && key.expiresAt.getTime() <= options.clock.now().getTime()) {
      throw unauthorized('the API key has expired');
    }
    if (!ipAllowed(ctx.ip, key.allowedIps)) {
      throw forbidden(`this API key may not be used from ${ctx.ip}`);
    }
    ctx.state.key = {
      id: key.id,
      orgId: key.orgId,
      orgName,
      live: key.live,
      scopes: key.scopes,
    };
    options.cache.uses?.note(key.orgId, key.id);
    await next();
  };
}

/** Ids as Spool writes them: a path that spells one otherwise names no organization. */
const CANONICAL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The `{org}` of the path must be the key's own organization or, for an API key, a child of it
 * (a platform acting on its customer's organization, with the key's scopes); any other, a parent
 * or a sibling of the key's organization included, answers 404 as an unknown one does. The
 * organization the request then acts on is left on `ctx.state.orgId`. A signed-in session is a
 * principal of the path's organization already (session-auth.ts), so it only ever matches.
 */
export function requireOwnOrg(children: ParentLookup): Middleware<GatewayState> {
  return async (ctx, next) => {
    const org = (ctx as unknown as { params?: Record<string, string> }).params?.org;
    if (org !== undefined) {
      const key = ctx.state.key;
      const own = key !== undefined && org === key.orgId;
      if (!own) {
        const child =
          key !== undefined &&
          !ctx.state.session &&
          CANONICAL_ID.test(org) &&
          (await children.parentOf(org)) === key.orgId;
        if (!child) throw notFound('no such organization');
      }
      ctx.state.orgId = org;
    }
    await next();
  };
}

export function requireScope(scope: Scope): Middleware<GatewayState> {
  return async (ctx, next) => {
    if (!ctx.state.key?.scopes.includes(scope)) {
      const session = ctx.state.session;
      if (session) throw forbidden(roleMessage(roleForScope(scope), session.role ?? 'viewer'));
      throw forbidden(`this API key lacks the ${scope} scope`);
    }
    await next();
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * The operator token, or during a rotation the new one and the one it replaces
 * (`SPOOL_ADMIN_TOKEN_PREVIOUS`), both accepted until the previous one is taken away.
 */
export type OperatorToken = string | readonly string[];

/** Whether `presented` is one of the operator tokens: every one compared, in constant time. */
export function operatorMatcher(tokens: OperatorToken): (presented: string) => boolean {
  const expected = (typeof tokens === 'string' ? [tokens] : tokens).map(digest);
  return (presented) => {
    const given = digest(presented);
    let match = false;
    for (const e of expected) match = timingSafeEqual(given, e) || match;
    return match;
  };
}

/**
 * Guards `/admin/v1` with the operator token, compared in constant time. A missing token and a
 * wrong one answer differently, since their fixes differ: send one, or send the right one.
 */
export function requireOperator(token: OperatorToken): Middleware<GatewayState> {
  const isOperator = operatorMatcher(token);
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    const presented = bearer(header);
    if (!presented) {
      throw unauthorized(
        header === ''
          ? 'no operator token: send it as Authorization: Bearer <token>'
          : 'the Authorization header is not a bearer token: send Authorization: Bearer <operator token>',
      );
    }
    if (!isOperator(presented)) {
      throw unauthorized(
        /^svc_(live|test)_/.test(presented)
          ? 'an API key is not an operator token: the operator API takes the operator token (SPOOL_ADMIN_TOKEN)'
          : "wrong operator token: it is not this Spool's operator token (SPOOL_ADMIN_TOKEN; spool dev writes its own to .spool/admin-token)",
      );
    }
    await next();
  };
}
