/** What the gateway's middleware leaves on `ctx.state` for the handlers after it. */
export interface AuthenticatedKey {
  id: string;
  orgId: string;
  orgName: string;
  live: boolean;
  scopes: readonly string[];
}

/** A signed-in person's session, set from the `spool_session` cookie (session-auth.ts). */
export interface AuthenticatedSession {
  id: string;
  personId: string;
  email: string;
  displayName: string;
  memberships: { orgId: string; orgName: string; role: string }[];
  /** The token state-changing requests must send as X-CSRF-Token. */
  csrfToken: string;
  /** SHA-256 of the session credential, for signing out. */
  credentialHash: Buffer;
  /** The member's role in the organization of the path, once checked. */
  role?: string;
}

export interface GatewayState {
  requestId: string;
  /**
   * Set by the API-key middleware on `/v1` routes that need a key; for a signed-in session, a
   * principal of the path's organization with the scopes of the member's role.
   */
  key?: AuthenticatedKey;
  /**
   * The organization of the path once `requireOwnOrg` let it through: the key's own, or a child
   * of it that a parent's key acts on. What `/v1` handlers act on (routes/context.ts `orgOf`).
   */
  orgId?: string;
  /** Set when a signed-in session (not an API key) authenticated the request. */
  session?: AuthenticatedSession;
  /** The Idempotency-Key claim the request holds, set by the idempotency middleware. */
  idempotency?: { key: string; claim: string };
  /** The request body's bytes, once something has read them. */
  rawBody?: Buffer;
  /**
   * The names of the fields a PATCH body set, once it is read and checked: never their values,
   * but for true or false ones (`enabled=false`).
   */
  bodyFields?: string[];
}
