/** What the gateway's middleware leaves on `ctx.state` for the handlers after it. */
export interface AuthenticatedKey {
  id: string;
  orgId: string;
  orgName: string;
  live: boolean;
  scopes: readonly string[];
}

export interface GatewayState {
  requestId: string;
  /** Set by the API-key middleware on `/v1` routes that need a key. */
  key?: AuthenticatedKey;
  /** The Idempotency-Key claim the request holds, set by the idempotency middleware. */
  idempotency?: { key: string; claim: string };
  /** The request body's bytes, once something has read them. */
  rawBody?: Buffer;
}
