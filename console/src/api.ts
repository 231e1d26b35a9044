/**
 * The console talks only to the gateway's HTTP endpoints, with the session cookie, sending the
 * CSRF token on every state-changing request. Errors arrive in the catalogue's envelope; their
 * message is what the page shows.
 */

export type Role = 'viewer' | 'developer' | 'admin' | 'owner';
export const ROLES: readonly Role[] = ['viewer', 'developer', 'admin', 'owner'];

export interface Person {
  id: string;
  email: string;
  display_name: string;
}
export interface OrgMembership {
  id: string;
  name: string;
  role: Role;
}
export interface Session {
  person: Person;
  orgs: OrgMembership[];
  csrf_token: string;
}

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

async function send(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
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
  if (!res.ok) throw await errorOf(res);
  return res;
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
  if (res.status === 401 && onUnauthorized) onUnauthorized();
  if (res.status === 403 && onForbidden) onForbidden();
  const retry = res.headers.get('Retry-After');
  // Said once: some refusals already say when (too many failed sign-ins).
  if (res.status === 429 && retry && !/try again in/.test(message)) {
    message = `${message} (try again in ${retry} s)`;
  }
  return new ApiError(res.status, code, message, param);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await send(method, path, body);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
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

// Shapes of the API's answers, as docs/api.md, docs/jobs.md and docs/webhooks.md describe them.
export interface Job {
  id: string;
  org_id: string;
  status: string;
  status_detail: string;
  reference: string | null;
  title: string | null;
  printer_id: string;
  station_id: string;
  live: boolean;
  options: Record<string, unknown>;
  content_type: string;
  size: number;
  attempt: number;
  schedule_at: string | null;
  expire_at: string | null;
  reprint_of: string | null;
  content_deleted: boolean;
  created_at: string;
  updated_at: string;
}
export interface JobEvent {
  at: string;
  status: string;
  detail: string;
  actor: string;
}
export interface Printer {
  id: string;
  name: string;
  station_id: string;
  location_id: string | null;
  status: string;
  detail: string;
  station_online: boolean;
  /** The home region of its station; `default` in an installation of one region. */
  region: string;
  capabilities: { paper_sizes?: string[]; duplex?: boolean; color?: boolean; copies?: boolean };
  updated_at: string;
}
export interface Station {
  id: string;
  name: string;
  location_id: string | null;
  online: boolean;
  last_seen_at: string | null;
  region: string;
  /** When its device token was revoked: its agent is refused until a new token is made. */
  token_revoked_at: string | null;
  created_at: string;
}
export interface Location {
  id: string;
  name: string;
}
export interface ApiKey {
  id: string;
  name: string | null;
  live: boolean;
  scopes: string[];
  hint: string;
  allowed_ips: string[];
  expires_at: string | null;
  created_at: string;
  revoked_at: string | null;
  /** When a request was last let in with it, to about the minute; null if never. */
  last_used_at: string | null;
}
export interface Endpoint {
  id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: string | null;
  secret_rotated_at: string | null;
  created_at: string;
}
export interface Attempt {
  number: number;
  at: string;
  outcome: string;
  status_code: number | null;
  error: string;
  duration_ms: number | null;
}
export interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  state: string;
  attempt_count: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  created_at: string;
  finished_at: string | null;
  attempts: Attempt[];
}
export interface Member {
  person_id: string;
  email: string;
  display_name: string;
  role: Role;
  joined_at: string;
}
export interface Invitation {
  id: string;
  email: string;
  role: Role;
  expires_at: string;
}
