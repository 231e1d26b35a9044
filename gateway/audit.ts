/**
 * The audit log's writer (docs/audit.md). Every state-changing request to `/admin/v1` with the
 * operator token, every one to `/console/v1` or elsewhere with a live signed-in session, and every
 * sign-in or invitation acceptance that succeeds is recorded by the accounts service: who (the
 * operator, a person and their session), what (the method, the route template and the ids in the
 * path), when, from where (client address, user agent), the request id and the status answered.
 *
 * An authenticated request's entry is written twice, to one row: before the action runs, and with
 * its outcome before the answer leaves. When the first write fails the action does not run and
 * the caller gets 503, so no action happens without an entry; when the second fails the entry
 * keeps status 0 ("outcome not recorded") and the gateway logs the outcome at error level. Bodies
 * are never recorded, nor credentials, nor a path parameter that carries a token.
 */
import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import type { AuditEntry } from '../gen/spool/v1/accounts.js';
import { isSpoolError } from '../lib/errors.js';
import { isUuid } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { isTransient, unavailable } from '../lib/transient.js';
import { bearer, type OperatorToken, operatorMatcher } from './auth.js';
import type { Backends } from './clients.js';
import { authenticateSession, type SessionOptions, sessionCookie } from './session-auth.js';
import type { GatewayState } from './state.js';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Path parameters never recorded: they carry a credential (an invitation token). */
const SECRET_PARAM = /token|secret|password|credential/i;

type Ctx = Context & { state: GatewayState };

/** Who made the request, as far as the gateway has authenticated it. */
function actorOf(ctx: Ctx, operator: boolean): { actor: string; sessionId: string } {
  const session = ctx.state.session;
  if (session) return { actor: `person:${session.personId}`, sessionId: session.id };
  if (operator) return { actor: 'operator', sessionId: '' };
  return { actor: '', sessionId: '' };
}

/** The status the error middleware will answer for `err` (errors.ts decides it the same way). */
function statusOf(err: unknown): number {
  if (isSpoolError(err)) return err.httpStatus;
  if (isTransient(err)) return 503;
  return 500;
}

export function auditMiddleware(deps: {
  backends: Pick<Backends, 'accounts'>;
  operatorToken: OperatorToken;
  logger: Logger;
  sessions: SessionOptions;
}): Middleware<GatewayState> {
  const matches = operatorMatcher(deps.operatorToken);
  /** Whether the session cookie holds a live session (and, for a write, the CSRF token). */
  const signedIn = async (ctx: Ctx): Promise<boolean> => {
    try {
      await authenticateSession(ctx, deps.sessions);
      return true;
    } catch (err) {
      if (isSpoolError(err) && (err.code === 'unauthorized' || err.code === 'forbidden'))
        return false;
      throw err;
    }
  };
  const isOperator = (ctx: Ctx) => {
    const presented = bearer(ctx.get('authorization'));
    return presented !== undefined && matches(presented);
  };
  return async (ctx, next) => {
    if (READS.has(ctx.method)) return next();
    const admin = ctx.path.startsWith('/admin/v1/');
    const consolePath = ctx.path.startsWith('/console/v1/');
    // With an Authorization header the cookie is not the credential (/v1 takes the key then).
    const cookie = sessionCookie(ctx) !== undefined && ctx.get('authorization') === '';
    if (!admin && !consolePath && !cookie) return next();

    // Only an authenticated request gets its entry before it runs. One that is not changes
    // nothing (its router refuses it) and is in the access log only, so that nobody's noise can
    // fill the audit log; except that a sign-in or an accepted invitation that succeeds, which
    // has no credential before its answer, is recorded once after it, naming the person.
    let mode: 'before' | 'after' | 'none';
    const operator = admin && isOperator(ctx);
    if (admin) {
      mode = operator ? 'before' : 'none';
    } else if (cookie && (await signedIn(ctx))) {
      mode = 'before';
    } else {
      mode = consolePath ? 'after' : 'none';
    }
    if (mode === 'none') return next();

    const started: AuditEntry = {
      id: randomUUID(),
      at: undefined,
      ...actorOf(ctx, operator),
      orgId: '',
      method: ctx.method,
      route: '',
      target: {},
      status: 0,
      ip: ctx.ip,
      userAgent: ctx.get('user-agent'),
      requestId: ctx.state.requestId,
    };
    if (mode === 'before') {
      try {
        await deps.backends.accounts.recordAudit({ entry: started });
      } catch (err) {
        deps.logger.error(
          { err, request_id: ctx.state.requestId },
          'could not write the audit log; the action was refused',
        );
        throw unavailable(err);
      }
    }

    let status = 0;
    try {
      await next();
      status = ctx.status;
    } catch (err) {
      status = statusOf(err);
      throw err;
    } finally {
      const params = (ctx as unknown as { params?: Record<string, string> }).params ?? {};
      const target = Object.fromEntries(
        Object.entries(params).filter(([k]) => k !== 'org' && !SECRET_PARAM.test(k)),
      );
      // What a 201 created is named in its Location header (ids only), or, where it has no
      // address of its own to give (the console's invitations), by its id in the answer.
      const created = status === 201 ? ctx.response.get('location') : '';
      if (created) target.created = created;
      else if (status === 201) {
        const id = createdId(ctx.body);
        if (id) target.created = id;
      }
      // What a change set: the names of its fields, never their values.
      const fields = ctx.state.bodyFields;
      if (ctx.method === 'PATCH' && fields && fields.length > 0) target.fields = fields.join(',');
      const who = actorOf(ctx, operator);
      // An answer that signs a person in (sign-in, an accepted invitation) names them.
      const person = (ctx.body as { person?: { id?: unknown } } | undefined)?.person?.id;
      if (!who.actor && status === 200 && typeof person === 'string')
        who.actor = `person:${person}`;
      const outcome: AuditEntry = {
        ...started,
        ...who,
        // The organization of the path, its id in small letters as the `org` filter takes it,
        // however it was spelled; else one just created, which its entry is about.
        orgId:
          (params.org && isUuid(params.org) ? params.org.toLowerCase() : params.org) ??
          /^\/admin\/v1\/orgs\/([0-9a-f-]{36})$/.exec(created)?.[1] ??
          '',
        route: typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : '',
        target,
        status,
      };
      if (mode === 'before' || outcome.actor !== '') {
        try {
          await deps.backends.accounts.recordAudit({ entry: outcome });
        } catch (err) {
          // The entry stays with status 0 (or, after a sign-in, is missing); this line keeps
          // what it would have said.
          deps.logger.error(
            { err, audit: { ...outcome, at: undefined } },
            'could not record the outcome of an audited action',
          );
        }
      }
    }
  };
}

/** The id of the one resource an answer of a creation holds, as `{invitation: {id, …}, …}`. */
function createdId(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const ids = Object.values(body).flatMap((value) => {
    const id = (value as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? [id] : [];
  });
  return ids.length === 1 ? ids[0] : undefined;
}
