/**
 * Signed-in sessions at the gateway: the `spool_session` cookie, its CSRF token and the check of
 * state-changing requests, and the principal a session becomes on `/v1` (the scopes of the
 * member's role in the path's organization).
 *
 * CSRF: a cookie-authenticated POST, PUT, PATCH or DELETE must carry `X-CSRF-Token`, equal to
 * base64url(HMAC-SHA256(key = the session credential, "spool-csrf")), which any replica can check
 * without state; and its `Origin`, when sent, must be the gateway's own (or PUBLIC_URL's).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import type { Clock } from '../lib/clock.js';
import { credentialKind, hashCredential } from '../lib/credentials.js';
import { forbidden, notFound, SpoolError, unauthorized } from '../lib/errors.js';
import { type Role, scopesOfRole } from '../lib/roles.js';
import { bearer, type KeyAuthOptions, requireKey } from './auth.js';
import type { CachedSession, SessionCache } from './session-cache.js';
import type { AuthenticatedSession, GatewayState } from './state.js';

export const SESSION_COOKIE = 'spool_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface SessionOptions {
  cache: SessionCache;
  clock: Clock;
  /** Mark the cookie `Secure` (everywhere but `spool dev`). */
  secureCookies: boolean;
  /** The public base URL (PUBLIC_URL), whose origin may also send state-changing requests. */
  publicUrl?: string | undefined;
  /** The absolute session lifetime, the cookie's Max-Age. */
  absoluteMs?: number;
}

type Ctx = Context & { state: GatewayState };

export function csrfToken(credential: string): string {
  return createHmac('sha256', credential).update('spool-csrf').digest('base64url');
}

/** The session credential in the request's cookie, when there is a cookie of that name. */
export function sessionCookie(ctx: Ctx): string | undefined {
  const header = ctx.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function setSessionCookie(ctx: Ctx, options: SessionOptions, credential: string): void {
  const maxAge = Math.floor((options.absoluteMs ?? 7 * 24 * 60 * 60 * 1000) / 1000);
  ctx.append(
    'Set-Cookie',
    `${SESSION_COOKIE}=${credential}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${options.secureCookies ? '; Secure' : ''}`,
  );
}

export function clearSessionCookie(ctx: Ctx, options: SessionOptions): void {
  ctx.append(
    'Set-Cookie',
    `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${options.secureCookies ? '; Secure' : ''}`,
  );
}

/** This gateway's origin as the client addressed it (Koa's `ctx.origin` is the Origin header). */
export function ownOrigin(ctx: Ctx): string {
  return `${ctx.protocol}://${ctx.host}`;
}

/**
 * Refuses a request whose Origin header names another site: its host must be the one the request
 * was sent to (the scheme may differ behind a proxy that ends TLS), or PUBLIC_URL's origin.
 */
export function checkOrigin(ctx: Ctx, options: SessionOptions): void {
  const origin = ctx.get('origin');
  if (origin === '') return;
  if (options.publicUrl && origin === new URL(options.publicUrl).origin) return;
  let host: string | undefined;
  try {
    const url = new URL(origin);
    if (url.protocol === 'http:' || url.protocol === 'https:') host = url.host;
  } catch {
    // "null" (a sandboxed or privacy-sensitive context) or garbage: not this site.
  }
  if (host === undefined || host !== ctx.host.toLowerCase()) {
    throw forbidden(
      `cross-site request refused: the Origin ${origin} is not this console's (${ownOrigin(ctx)})`,
    );
  }
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function toState(credential: string, s: CachedSession): AuthenticatedSession {
  return {
    id: s.sessionId,
    personId: s.person.id,
    email: s.person.email,
    displayName: s.person.displayName,
    memberships: s.memberships,
    csrfToken: csrfToken(credential),
    credentialHash: hashCredential(credential),
  };
}

/** The signed-in session `credential` is, or 401 when it has ended or was never one. */
async function signedInSession(
  credential: string,
  options: SessionOptions,
): Promise<CachedSession> {
  try {
    return await options.cache.get(hashCredential(credential));
  } catch (err) {
    if (err instanceof SpoolError && err.code === 'unauthorized') {
      throw unauthorized('not signed in: the session has ended or was signed out; sign in again');
    }
    throw err;
  }
}

/**
 * The request's session from its cookie, or 401; for a state-changing method, also the CSRF
 * token and the Origin, or 403. Leaves the session on `ctx.state.session`.
 */
export async function authenticateSession(
  ctx: Ctx,
  options: SessionOptions,
): Promise<AuthenticatedSession> {
  const credential = sessionCookie(ctx);
  if (credential === undefined || credentialKind(credential) !== 'session') {
    throw unauthorized('not signed in: sign in at /console/');
  }
  const session = toState(credential, await signedInSession(credential, options));
  if (!SAFE_METHODS.has(ctx.method)) {
    checkOrigin(ctx, options);
    const presented = ctx.get('x-csrf-token');
    if (presented === '') {
      throw forbidden(
        'the X-CSRF-Token header is missing: send the csrf_token of GET /console/v1/session',
      );
    }
    if (!sameText(presented, session.csrfToken)) {
      throw forbidden(
        'the X-CSRF-Token header is wrong: send the csrf_token of GET /console/v1/session',
      );
    }
  }
  ctx.state.session = session;
  return session;
}

/** The member's role in the organization `orgId`; 404 when the person is not a member. */
export function roleIn(session: AuthenticatedSession, orgId: string): Role {
  const m = session.memberships.find((x) => x.orgId === orgId);
  if (!m) throw notFound('no such organization');
  return m.role as Role;
}

/**
 * `/v1` authentication: an API key in `Authorization: Bearer` (requireKey, unchanged), or else a
 * session cookie, which becomes a principal of the path's organization with its role's scopes.
 */
export function requireKeyOrSession(
  keyOptions: KeyAuthOptions,
  sessions: SessionOptions | undefined,
): Middleware<GatewayState> {
  const byKey = requireKey(keyOptions);
  const notASession = () =>
    new SpoolError('invalid', 'this endpoint takes an API key, not a signed-in session');
  return async (ctx, next) => {
    const token = bearer(ctx.get('authorization'));
    if (sessions && keyOptions.sessionIsInvalid && token && credentialKind(token) === 'session') {
      // Only a session that is signed in is a session; an ended or made-up one is nobody: 401.
      await signedInSession(token, sessions);
      throw notASession();
    }
    if (!sessions || ctx.get('authorization') !== '' || sessionCookie(ctx) === undefined) {
      return byKey(ctx, next);
    }
    const session = await authenticateSession(ctx, sessions);
    if (keyOptions.sessionIsInvalid) throw notASession();
    const orgId = (ctx as unknown as { params?: Record<string, string> }).params?.org ?? '';
    const role = roleIn(session, orgId);
    const membership = session.memberships.find((m) => m.orgId === orgId);
    session.role = role;
    ctx.state.key = {
      id: session.personId,
      orgId,
      orgName: membership?.orgName ?? '',
      live: true,
      scopes: scopesOfRole(role),
    };
    await next();
  };
}
