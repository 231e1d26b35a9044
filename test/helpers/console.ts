/**
 * A browser's view of the console's HTTP side: a person who keeps the `spool_session` cookie the
 * gateway sets and sends the CSRF token on state-changing requests, as the console web app does.
 */
import { type Answer, call, OPERATOR_TOKEN } from './system.js';

export interface SignedIn {
  person: { id: string; email: string; display_name: string };
  orgs: { id: string; name: string; role: string }[];
  csrf_token: string;
}

export interface ErrorBody {
  error: { code: string; message: string; param?: string; request_id: string };
}

/** The `spool_session` value a Set-Cookie header sets, and the whole header. */
export function sessionCookieOf(headers: Headers): { value: string; header: string } | undefined {
  for (const header of headers.getSetCookie()) {
    const m = /^spool_session=([^;]*)/.exec(header);
    if (m) return { value: m[1] as string, header };
  }
  return undefined;
}

export class Browser {
  cookie = '';
  csrf = '';
  personId = '';

  constructor(public base: string) {}

  /** A request with the cookie; writes also carry X-CSRF-Token unless `csrf: false`. */
  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: { body?: unknown; csrf?: boolean; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookie) headers.cookie = `spool_session=${this.cookie}`;
    if (method !== 'GET' && options.csrf !== false && this.csrf) {
      headers['x-csrf-token'] = this.csrf;
    }
    const res = await call<T>(this.base, method, path, {
      headers,
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    const set = sessionCookieOf(res.headers);
    if (set) this.cookie = set.value;
    const body = res.body as unknown as Partial<SignedIn>;
    if (res.status === 200 && typeof body?.csrf_token === 'string') {
      this.csrf = body.csrf_token;
      this.personId = body.person?.id ?? '';
    }
    return res;
  }

  async signIn(email: string, password: string): Promise<Answer<SignedIn>> {
    return this.call<SignedIn>('POST', '/console/v1/sign-in', { body: { email, password } });
  }

  async accept(url: string, password: string, displayName = 'Ada Lovelace') {
    const token = tokenOf(url);
    return this.call<SignedIn>('POST', `/console/v1/invitations/${token}/accept`, {
      body: { display_name: displayName, password },
    });
  }
}

/** The invitation token in an invitation link's fragment. */
export function tokenOf(url: string): string {
  return new URL(url).hash.slice(1);
}

export interface InvitationAnswer {
  invitation: { id: string; email: string; role: string; expires_at: string };
  url: string;
}

/** The operator invites someone. */
export async function invite(
  base: string,
  orgId: string,
  email: string,
  role: string,
): Promise<InvitationAnswer> {
  const res = await call<InvitationAnswer>(base, 'POST', `/admin/v1/orgs/${orgId}/invitations`, {
    token: OPERATOR_TOKEN,
    body: { email, role },
  });
  if (res.status !== 201) {
    throw new Error(`invite answered ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body;
}

export const PASSWORD = 'correct horse battery staple';

/** A person of `orgId` with `role`, invited by the operator and signed in. */
export async function member(
  base: string,
  orgId: string,
  role: string,
  email = `${role}-${Math.random().toString(36).slice(2)}@example.com`,
): Promise<Browser> {
  const { url } = await invite(base, orgId, email, role);
  const browser = new Browser(base);
  // A busy accounts service refuses a password it has no time to hash now (429, nothing done),
  // or answers 504 when the accept may have been done: as a client would, the one is sent again
  // after its Retry-After, and after the other the person signs in if they did join.
  for (let tries = 1; ; tries++) {
    const res = await browser.accept(url, PASSWORD, `${role} person`);
    if (res.status === 200) return browser;
    const after = Number(res.headers.get('retry-after'));
    if ((res.status !== 429 && res.status !== 504) || !(after <= 3) || tries === 5)
      throw new Error(`accept answered ${res.status} ${JSON.stringify(res.body)}`);
    await new Promise((resolve) => setTimeout(resolve, after * 1000));
    if (res.status === 504 && (await isMember(base, orgId, email))) {
      const signedIn = await browser.signIn(email, PASSWORD);
      if (signedIn.status === 200) return browser;
    }
  }
}

/** Whether `email` is a member of `orgId`, as the operator sees it. */
async function isMember(base: string, orgId: string, email: string): Promise<boolean> {
  const res = await call<{ items: { email: string }[] }>(
    base,
    'GET',
    `/admin/v1/orgs/${orgId}/people`,
    { token: OPERATOR_TOKEN },
  );
  return res.status === 200 && res.body.items.some((m) => m.email === email);
}
