/**
 * What every part of the console's API (console.ts) is built with: its dependencies, the router,
 * and the guards of its routes (a signed-in session, a role in the path's organization).
 */
import type { Router } from '@koa/router';
import type { Context, Middleware } from 'koa';
import { SpoolError } from '../../lib/errors.js';
import { hasRole, type Role, roleMessage } from '../../lib/roles.js';
import type { Backends } from '../clients.js';
import type { KeyCache } from '../key-cache.js';
import { authenticateSession, roleIn, type SessionOptions } from '../session-auth.js';
import type { GatewayState } from '../state.js';

export type Ctx = Context & { state: GatewayState };

export interface ConsoleDeps {
  backends: Backends;
  /** This gateway's API keys: a key revoked through it is forgotten at once, here. */
  keys: KeyCache;
  sessions: SessionOptions;
  /** The rate limit of a signed-in session's requests (KEY_RATE_LIMIT a minute, per replica). */
  sessionLimit: Middleware<GatewayState>;
  bodyLimit: number;
  /** The base of links the gateway hands out (PUBLIC_URL); else the request's origin. */
  publicUrl?: string | undefined;
}

/** The router a part adds its routes to, with the guards they share. */
export interface ConsoleKit {
  router: Router<GatewayState>;
  deps: ConsoleDeps;
  /** Requires a signed-in session (and CSRF on writes), then applies its rate limit. */
  signedIn: Middleware<GatewayState>;
  /** The person must be a member of the path's organization with at least `needed`. */
  role(needed: Role): Middleware<GatewayState>;
  /** The path's organization. */
  orgOf(ctx: Ctx): string;
  /** The signed-in person, as the accounts service's actor. */
  actorOf(ctx: Ctx): string;
}

export function consoleKit(router: Router<GatewayState>, deps: ConsoleDeps): ConsoleKit {
  const signedIn: Middleware<GatewayState> = async (ctx, next) => {
    await authenticateSession(ctx, deps.sessions);
    await deps.sessionLimit(ctx, next);
  };

  const role =
    (needed: Role): Middleware<GatewayState> =>
    async (ctx, next) => {
      const session = ctx.state.session;
      if (!session) throw new SpoolError('internal', 'no session on a signed-in route');
      const orgId = (ctx as unknown as { params: Record<string, string> }).params.org ?? '';
      const held = roleIn(session, orgId);
      session.role = held;
      if (!hasRole(held, needed)) throw new SpoolError('forbidden', roleMessage(needed, held));
      await next();
    };

  const orgOf = (ctx: Ctx) =>
    (ctx as unknown as { params: Record<string, string> }).params.org ?? '';
  const actorOf = (ctx: Ctx) => ctx.state.session?.personId ?? '';

  return { router, deps, signedIn, role, orgOf, actorOf };
}
