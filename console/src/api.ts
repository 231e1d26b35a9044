/**
 * The console talks only to the gateway's HTTP endpoints, with the session cookie, sending the
 * CSRF token on every state-changing request. Errors arrive in the catalogue's envelope; their
 * message is what the page shows.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

let csrfToken = '';
let onUnauthorized: (() => void) | null = null;
let onForbidden: (() => void) | null = null;

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Called when a request answers 401: the session ended (signed out elsewhere, or expired). */
export function setUnauthorizedHandler(handler: (() => void) | null): void {
  onUnauthorized = handler;
}

/**
 * Called when a request answers 403: the person's role may have changed since the session was
 * read, so that the pages offer what it no longer allows.
 */
export function setForbiddenHandler(handler: (() => void) | null): void {
  onForbidden = handler;
}

/** Tries of a request that may be sent again, while Spool answers that it is busy for a moment. */
const BUSY_TRIES = 3;
/** The longest `Retry-After` that is still "a moment"; a longer one is shown instead. */
const BUSY_WAIT_MAX_S = 3;

/**
 * How long to wait before sending again a request that Spool answered busy for a moment: `429`
 * with a short `Retry-After` (too many passwords being checked at once) or `503` (a service could
 * not be reached), which both did nothing, and `504` (a service did not answer in time, and may
 * have done it) when the request is harmless to repeat. Undefined for any other answer, and for a
 * refusal that lasts (too many failed sign-ins: minutes).
 */
function busyForMs(res: Response, repeatable: boolean): number | undefined {
  const nothingDone = res.status === 429 || res.status === 503;
  if (!nothingDone && !(res.status === 504 && repeatable)) return undefined;
  const after = Number(res.headers.get('Retry-After') ?? '1');
  if (!Number.isFinite(after) || after < 0 || after > BUSY_WAIT_MAX_S) return undefined;
  return Math.max(after, 0.25) * 1000;
}

/**
 * Whether to send a request again when Spool answers that it is busy: any request when nothing was
 * done (`429`, `503`); after a `504`, reads, and a write only when it says.
 */
export interface SendOptions {
  /** The write is harmless to repeat (signing in again makes one more session). */
  retry?: boolean;
}

async function send(
  method: string,
  path: string,
  body?: unknown,
  options: SendOptions = {},
): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const repeatable = method === 'GET' || options.retry === true;
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(path, {
        method,
        headers,
        credentials: 'same-origin',
        body: body === undefined ? null : JSON.stringify(body),
      });
    } catch {
      throw new ApiError(0, 'network', 'Spool could not be reached; check your connection.');
    }
    if (res.ok) return res;
    const wait = attempt < BUSY_TRIES ? busyForMs(res, repeatable) : undefined;
    if (wait === undefined) throw await errorOf(res);
    await res.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function errorOf(res: Response): Promise<ApiError> {
  let code = 'http';
  let message = `the request failed (${res.status} ${res.statusText})`;
  let param: string | undefined;
  try {
    const json = (await res.json()) as {
      error?: { code?: string; message?: string; param?: string };
    };
    if (json.error?.message) message = json.error.message;
    if (json.error?.code) code = json.error.code;
    if (json.error?.param) param = json.error.param;
  } catch {
    // Not the catalogue's envelope: keep the status line.
  }
  // The API's words for this tell a program to retry with its Idempotency-Key, which the console
  // does not send: a person is told what it means for them.
  if (code === 'timeout') {
    message =
      'Spool is busy and did not answer in time; what you asked may still have been done, so ' +
      'look again before you try again';
  }
  if (res.status === 401 && onUnauthorized) onUnauthorized();
  if (res.status === 403 && onForbidden) onForbidden();
  const retry = res.headers.get('Retry-After');
  // Said once: some refusals already say when (too many failed sign-ins).
  if (res.status === 429 && retry && !/try again in/.test(message)) {
    message = `${message} (try again in ${retry} s)`;
  }
  return new ApiError(res.status, code, message, param);
}

export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  options: SendOptions = {},
): Promise<T> {
  const res = await send(method, path, body, options);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}, options: SendOptions = {}) =>
  api<T>('POST', path, body, options);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = (path: string) => api<void>('DELETE', path);

/** A binary answer (a job's preview), as an object URL or text. */
export async function fetchBlob(path: string): Promise<Blob> {
  const res = await send('GET', path);
  return res.blob();
}

export function query(params: Record<string, string | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const enc = encodeURIComponent;
