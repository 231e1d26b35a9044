/**
 * What an operator may set for the webhooks service, in a module of its own so that the defaults
 * (defaults.ts), the configuration's variables and the service all read one declaration.
 */

/** What an operator may set (README's configuration table lists each variable). */
export interface WebhooksSettings {
  /** The AES-256 key secrets are encrypted under (`WEBHOOK_SECRET_KEY`). */
  secretKey: Buffer;
  /** Allow http:// and non-public addresses (`spool dev`, `SPOOL_WEBHOOKS_ALLOW_INSECURE`). */
  allowInsecure: boolean;
  /** Milliseconds a receiver has to answer (spec: 15 s). */
  timeoutMs: number;
  /** Waits between attempts (spec: 30 s … 12 h). */
  retryWaitsMs: readonly number[];
  /** How long the previous secret keeps signing after a rotation (24 h). */
  rotationGraceMs: number;
  /** Largest body sent; a larger event is logged as failed, unsent. */
  maxPayloadBytes: number;
  /** Attempts in flight at once, per replica. */
  concurrency: number;
  /** Attempts in flight at once to one endpoint, per replica. */
  endpointConcurrency: number;
  /** Attempts in flight at once to one organization's endpoints, per replica (half of all). */
  orgConcurrency?: number;
  /** How often the worker looks for due deliveries it was not told of. */
  pollMs: number;
  /**
   * How long a claim holds a delivery; by default twice the timeout plus 30 s (an attempt may wait
   * for one answer of its endpoint before it is sent).
   */
  leaseMs?: number;
  /** Fraction by which waits are lengthened at random. */
  jitter?: number;
}
