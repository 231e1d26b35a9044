/**
 * What the accounts service publishes (through its outbox) when credentials end, and every gateway
 * replica hears to drop what it cached: `accounts.<org>.key.revoked` and
 * `accounts.<person>.session.revoked` (DESIGN §4).
 */

/** An API key revoked (or its organization being deleted). */
export interface KeyRevokedMessage {
  key_id: string;
  org_id: string;
}

/** Sessions to be looked up again: one signed out, or every one of a person whose memberships changed. */
export interface SessionRevokedMessage {
  person_id: string;
  /** The one session signed out; absent when every session of the person is affected. */
  session_id?: string;
}
