/**
 * HTTP manners the gateway keeps on every route: a `Location` header on each 201 naming the new
 * resource, and `405 method_not_allowed` with an `Allow` header for a known path asked with a
 * method it does not take (rather than a 404 that would say the path does not exist).
 */
import type { Router } from '@koa/router';
import type { Middleware } from 'koa';
import { SpoolError } from '../lib/errors.js';
import type { GatewayState } from './state.js';

/**
 * What a route that answers 201 creates: the field of the answer that holds the new resource (an
 * object with an `id`) and the template of its URL, whose `{id}` is that id and whose other
 * `{param}`s are the request's path parameters.
 */
export interface Created {
  field: string;
  location: string;
}

/** The URL a 201 names, or undefined when the answer holds no such resource. */
export function locationOf(
  created: Created,
  params: Record<string, string | undefined>,
  body: unknown,
): string | undefined {
  const resource = (body as Record<string, unknown> | null)?.[created.field] as
    | { id?: unknown }
    | undefined;
  if (typeof resource?.id !== 'string') return undefined;
  const id = resource.id;
  return created.location.replace(/\{([a-z_]+)\}/g, (_, name: string) =>
    encodeURIComponent(name === 'id' ? id : (params[name] ?? '')),
  );
}

/**
 * Sets `Location` on a 201, including one replayed for an Idempotency-Key, so it goes first in
 * the route's chain.
 */
export function setLocation(created: Created): Middleware<GatewayState> {
  return async (ctx, next) => {
    await next();
    if (ctx.status !== 201 || ctx.response.get('Location')) return;
    const params = (ctx as unknown as { params?: Record<string, string> }).params ?? {};
    const url = locationOf(created, params, ctx.body);
    if (url !== undefined) ctx.set('Location', url);
  };
}

/** A path the gateway answers, with the methods it takes there. */
export interface KnownPath {
  methods: readonly string[];
  match(path: string): boolean;
}

/** The routes of a router (its `use` middleware has no methods and is left out). */
export function pathsOf(router: Router<GatewayState>): KnownPath[] {
  return router.stack
    .filter((layer) => layer.methods.length > 0)
    .map((layer) => ({ methods: layer.methods, match: (path: string) => layer.match(path) }));
}

/** One fixed path answered with the given methods. */
export function fixedPath(path: string, methods: readonly string[]): KnownPath {
  return { methods, match: (p) => p === path };
}

/**
 * Goes last before the 404: a request that reaches it with a path some route takes asked it with
 * the wrong method.
 */
export function methodNotAllowed(paths: readonly KnownPath[]): Middleware<GatewayState> {
  return async (ctx, next) => {
    const allowed = new Set(paths.filter((p) => p.match(ctx.path)).flatMap((p) => p.methods));
    if (allowed.size === 0) return next();
    const list = [...allowed].join(', ');
    ctx.set('Allow', list);
    throw new SpoolError(
      'method_not_allowed',
      `${ctx.method} is not allowed on ${ctx.path}; it takes ${list}`,
    );
  };
}
