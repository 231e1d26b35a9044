/**
 * `spool admin …`: the operator's commands. Each sends one request to the gateway's `/admin/v1` and
 * prints the JSON it answers; an error prints the error body to stderr and exits 1.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { type Env, readConfig } from '../lib/config.js';
import type { Row } from './admin-tables.js';
import { adminClientConfig } from './config.js';
import type { Columns, Format } from './table.js';

/** Sends one admin request and prints its answer, or `empty` where the answer has no body. */
export type AdminCall = (
  method: string,
  path: string,
  body?: unknown,
  empty?: unknown,
) => Promise<void>;

/** Reads one page of a list, `{items, next_cursor}`, and prints it as JSON or a table. */
export type AdminList = (path: string, format: Format, columns: Columns<Row>) => Promise<void>;

export interface AdminClient {
  request(method: string, path: string, body?: unknown): Promise<unknown>;
  /** PUTs the file at `file` as the raw body (streamed, `contentType`) to `/admin/v1<path>`. */
  upload?(path: string, file: string, contentType: string): Promise<unknown>;
}

/** What every `spool admin` command is given to reach the gateway. */
export interface AdminContext {
  admin: AdminCall;
  list: AdminList;
  /** The client itself, for a command that sends several requests. */
  client(): Promise<AdminClient>;
}

/** The gateway answered an error: `body` is its JSON, `hint` what to do where the body cannot say. */
export class AdminError extends Error {
  readonly body: string;
  readonly status: number;
  readonly hint: string | undefined;

  constructor(status: number, body: string, hint?: string) {
    super(`the gateway answered ${status}`);
    this.name = 'AdminError';
    this.status = status;
    this.body = body;
    this.hint = hint;
  }
}

/** The gateway took longer than `SPOOL_ADMIN_TIMEOUT_MS` to answer. */
export class TimeoutError extends Error {
  constructor(url: string, timeoutMs: number) {
    super(
      `Spool at ${url} did not answer within ${timeoutMs} ms (SPOOL_ADMIN_TIMEOUT_MS): is the gateway, or what is in front of it, stuck?`,
    );
    this.name = 'TimeoutError';
  }
}

/** The gateway could not be reached at all: nothing answered at the URL. */
export class UnreachableError extends Error {
  constructor(url: string, cause: unknown, urlSource = 'SPOOL_URL') {
    const code = causeCode(cause);
    super(
      `could not reach Spool at ${url}${code ? ` (${code})` : ''}: is spool dev (or the gateway) running, and is ${urlSource} right?`,
      { cause },
    );
    this.name = 'UnreachableError';
  }
}

/**
 * Why undici's "fetch failed" failed: the system error code (ECONNREFUSED, ENOTFOUND…) or else the
 * innermost message (such as "bad port").
 */
function causeCode(err: unknown): string | undefined {
  let reason: string | undefined;
  let e: unknown = err;
  while (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.startsWith('E')) return code;
    if (!(e instanceof TypeError)) reason = e.message;
    // Several addresses were tried (IPv4 and IPv6 for localhost): the first says why.
    e = e instanceof AggregateError && e.errors.length > 0 ? e.errors[0] : e.cause;
  }
  return reason;
}

/** Whether an answer is JSON, as every answer with a body of the gateway's `/admin/v1` is. */
function isJson(res: Response): boolean {
  return /^application\/(problem\+)?json\b/i.test(res.headers.get('content-type') ?? '');
}

/** `--url` and `--token` of a `spool admin` command; they win over the environment. */
export interface AdminFlags {
  url?: string | undefined;
  token?: string | undefined;
}

/**
 * A client for `/admin/v1`. The token comes from `--token` or `SPOOL_ADMIN_TOKEN`, or else from the file spool
 * dev writes; `tokenSource` says which, so that a refused token can be traced to where it came from.
 */
export async function adminClient(
  env: Env,
  flags: AdminFlags = {},
): Promise<AdminClient & { tokenSource: string }> {
  const config = readConfig(
    {
      ...env,
      ...(flags.url === undefined ? {} : { SPOOL_URL: flags.url }),
      ...(flags.token === undefined ? {} : { SPOOL_ADMIN_TOKEN: flags.token }),
    },
    adminClientConfig,
  );
  let token = config.adminToken;
  let tokenSource = flags.token === undefined ? 'SPOOL_ADMIN_TOKEN' : '--token';
  if (!token) {
    const file = join(config.dataDir, 'admin-token');
    try {
      token = (await readFile(file, 'utf8')).trim();
      tokenSource = file;
      if (!token) throw new Error(`${file} is empty`);
    } catch {
      throw new Error(
        `no operator token: set SPOOL_ADMIN_TOKEN, or run spool admin where spool dev runs so that ${file} exists (or set SPOOL_DATA_DIR)`,
      );
    }
  }
  const base = config.url.replace(/\/$/, '');
  const urlSource = flags.url === undefined ? 'SPOOL_URL' : '--url';
  /** The answer's JSON, or the error a person can act on. */
  const answer = (res: Response, text: string): unknown => {
    if (text !== '' && !isJson(res)) {
      // Not Spool's gateway (another server, a proxy's error page): its body means nothing here.
      throw new AdminError(
        res.status,
        `(${res.headers.get('content-type') || 'a body without a type'}, ${text.length} bytes)`,
        `the server at ${base} answered ${res.status} with no JSON, as Spool's gateway never does: is ${urlSource} the address of a Spool?`,
      );
    }
    if (res.status === 401) {
      // The gateway cannot know where the token came from; the hint names it.
      throw new AdminError(
        res.status,
        text,
        `Spool at ${base} refused the operator token from ${tokenSource}: use the token this Spool printed at start (its SPOOL_ADMIN_TOKEN), or point SPOOL_URL at the Spool the token belongs to`,
      );
    }
    if (!res.ok) throw new AdminError(res.status, text);
    return text === '' ? undefined : JSON.parse(text);
  };
  return {
    tokenSource,
    async upload(path, file, contentType) {
      // No overall timeout: a 256 MiB tarball takes what the network takes.
      const size = (await stat(file)).size;
      let res: Response;
      let text: string;
      try {
        res = await fetch(`${base}/admin/v1${path}`, {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': contentType,
            'content-length': String(size),
          },
          body: Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>,
          duplex: 'half',
        } as RequestInit);
        text = await res.text();
      } catch (err) {
        throw new UnreachableError(base, err, urlSource);
      }
      return answer(res, text);
    },
    async request(method, path, body) {
      // The whole exchange, answer body included: a gateway (or a proxy) that accepts the
      // connection and never answers must not hang an operator's command.
      const signal = AbortSignal.timeout(config.timeoutMs);
      let res: Response;
      let text: string;
      try {
        res = await fetch(`${base}/admin/v1${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal,
        });
        text = await res.text();
      } catch (err) {
        if (signal.aborted) throw new TimeoutError(base, config.timeoutMs);
        throw new UnreachableError(base, err, urlSource);
      }
      return answer(res, text);
    },
  };
}
