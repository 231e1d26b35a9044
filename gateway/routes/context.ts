/** What `/v1` handlers read off an authenticated request. */
import type { Context } from 'koa';
import type { GatewayState } from '../state.js';

type Ctx = Context & { state: GatewayState };

/**
 * The organization the request acts on: the path's, once checked against the key (the key's own,
 * or a child of it that a parent's key acts on); the key's own on a route without one.
 */
export function orgOf(ctx: Ctx): string {
  return ctx.state.orgId ?? ctx.state.key?.orgId ?? '';
}

/** The request's `actor` in job events: `api_key:<id>`, or `person:<id>` for a signed-in session. */
export function actorOf(ctx: Ctx): string {
  if (ctx.state.session) return `person:${ctx.state.session.personId}`;
  return `api_key:${ctx.state.key?.id ?? ''}`;
}

/** A path parameter. */
export function param(ctx: Ctx, name: string): string {
  return (ctx as unknown as { params?: Record<string, string> }).params?.[name] ?? '';
}
