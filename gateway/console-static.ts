/**
 * Serves the console's web app (built by Vite from console/ into console/dist) at `/console/`:
 * the hashed files of `/console/assets/` with a year-long cache, and index.html for every other
 * path of the app (its router reads the path), except the console's API under `/console/v1/`.
 * Every answer carries a Content-Security-Policy that lets the page load and call only this
 * gateway. Without a build, the app's paths answer a page saying how to make one.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';
import { SpoolError } from '../lib/errors.js';
import type { GatewayState } from './state.js';

/** Where `npm run build:console` writes the app. */
export const CONSOLE_DIST = fileURLToPath(new URL('../console/dist', import.meta.url));

export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

// Vite names assets `name-HASH.ext`: one path segment of these characters, never `..`.
const ASSET = /^\/console\/assets\/([A-Za-z0-9_-][A-Za-z0-9._-]*)$/;

const NOT_BUILT = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Spool console: not built</title></head>
<body>
<h1>The console is not built</h1>
<p>This gateway serves the console from <code>console/dist</code>, which is missing.
<code>npm ci</code> (or <code>npm install</code>) builds it when dev dependencies are installed; to
build it, run</p>
<pre>npm run build:console</pre>
<p>in the Spool checkout, then reload this page. The container image has it built in.</p>
</body>
</html>
`;

function isAppPath(path: string): boolean {
  if (path === '/console' || path === '/console/v1' || path.startsWith('/console/v1/')) {
    return path === '/console';
  }
  return path.startsWith('/console/');
}

export function consoleStatic(dir: string = CONSOLE_DIST): Middleware<GatewayState> {
  return async (ctx, next) => {
    if (!isAppPath(ctx.path)) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    if (ctx.path === '/console') {
      ctx.status = 308;
      ctx.redirect(`/console/${ctx.querystring ? `?${ctx.querystring}` : ''}`);
      return;
    }
    const asset = ASSET.exec(ctx.path);
    if (!asset?.[1] && ctx.path.startsWith('/console/assets/')) {
      throw new SpoolError('not_found', `no console file ${ctx.path}`);
    }
    // index.html is read on every request (it is small): a rebuild is served without a restart.
    const file = asset?.[1] ? join(dir, 'assets', asset[1]) : join(dir, 'index.html');
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) {
      if (asset) throw new SpoolError('not_found', `no console file ${ctx.path}`);
      ctx.status = 503;
      ctx.type = 'text/html; charset=utf-8';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = NOT_BUILT;
      return;
    }
    ctx.status = 200;
    ctx.type = TYPES[extname(file)] ?? 'application/octet-stream';
    ctx.set('Cache-Control', asset ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (ctx.method === 'HEAD') {
      ctx.length = info.size;
      return;
    }
    ctx.body = asset ? createReadStream(file) : await readFile(file);
  };
}
