/**
 * The human-readable API reference: Redoc's standalone bundle, served from this install (no CDN,
 * so the page works where the gateway has no way out), rendering the document the gateway serves.
 * `GET /v1/docs` renders `/v1/openapi.json`; `GET /admin/v1/docs` renders `/admin/v1/openapi.json`.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Middleware } from 'koa';
import type { GatewayState } from './state.js';

/** Where the renderer's script is served, under each reference page. */
export const SCRIPT_NAME = 'redoc.standalone.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page that renders `specUrl` with the script at `scriptUrl`. */
export function docsHtml(title: string, specUrl: string, scriptUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="${escapeHtml(specUrl)}" hide-download-button="false"></redoc>
<script src="${escapeHtml(scriptUrl)}"></script>
</body>
</html>
`;
}

/**
 * Redoc builds its styles at run time and searches in a worker made from a blob, hence the
 * inline styles and blob workers; everything else, including every fetch, stays on this origin.
 */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

let script: Promise<Buffer> | undefined;

function redocScript(): Promise<Buffer> {
  script ??= readFile(createRequire(import.meta.url).resolve(`redoc/bundles/${SCRIPT_NAME}`)).catch(
    (err: unknown) => {
      script = undefined;
      throw err;
    },
  );
  return script;
}

/** Answers the reference pages of the given documents (`/v1/docs` → `/v1/openapi.json`). */
export function docsPages(pages: ReadonlyArray<{ path: string; title: string; spec: string }>) {
  const byPath = new Map(pages.map((p) => [p.path, p]));
  const middleware: Middleware<GatewayState> = async (ctx, next) => {
    if (ctx.method !== 'GET') return next();
    const page = byPath.get(ctx.path);
    if (page) {
      ctx.set('Content-Security-Policy', CSP);
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = docsHtml(page.title, page.spec, `${page.path}/${SCRIPT_NAME}`);
      return;
    }
    const base = ctx.path.slice(0, -(SCRIPT_NAME.length + 1));
    if (ctx.path.endsWith(`/${SCRIPT_NAME}`) && byPath.has(base)) {
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.type = 'application/javascript; charset=utf-8';
      ctx.body = await redocScript();
      return;
    }
    return next();
  };
  const paths = pages.flatMap((p) => [p.path, `${p.path}/${SCRIPT_NAME}`]);
  return { middleware, paths };
}
