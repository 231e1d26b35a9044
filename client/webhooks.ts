/**
 * Verifying Spool's webhook deliveries on the receiving side (spec §6). Pass the request body
 * exactly as it arrived, before any JSON parsing: a body parsed and serialized again differs in
 * whitespace, key order or number formatting, and its signature no longer matches.
 *
 * ```ts
 * app.post('/spool', express.raw({ type: 'application/json' }), (req, res) => {
 *   let event;
 *   try {
 *     event = verifyWebhook(req.body, req.get('Service-Signature') ?? '', process.env.SPOOL_SECRET);
 *   } catch (err) {
 *     return res.status(400).end();
 *   }
 *   // trust event.type and event.data from here on
 *   res.status(204).end();
 * });
 * ```
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The spec's tolerance between the signature's timestamp and the receiver's clock: 5 minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export const WEBHOOK_ERROR_CODES = {
  /** The body was not given as a string or bytes (it was parsed already, most likely). */
  NotRawBody: 'not_raw_body',
  /** No `t=` or no `v1=` in the header, or a `t` that is not an integer. */
  MalformedHeader: 'malformed_header',
  /** `t` is further from the receiver's clock than the tolerance. */
  TimestampOutOfTolerance: 'timestamp_out_of_tolerance',
  /** No `v1` signature matches the body with the secret. */
  SignatureMismatch: 'signature_mismatch',
  /** The signature matched but the body is not a JSON object. */
  MalformedBody: 'malformed_body',
} as const;

export type WebhookErrorCode = (typeof WEBHOOK_ERROR_CODES)[keyof typeof WEBHOOK_ERROR_CODES];

/** Thrown when a delivery does not verify; answer 400 and do not trust the event. */
export class WebhookVerificationError extends Error {
  readonly code: WebhookErrorCode;

  constructor(code: WebhookErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebhookVerificationError';
    this.code = code;
  }
}

export function isWebhookVerificationError(err: unknown): err is WebhookVerificationError {
  return err instanceof WebhookVerificationError;
}

/** A delivery's body (spec §6). */
export interface WebhookEvent<T = Record<string, unknown>> {
  type: string;
  created_at: string;
  org_id: string;
  data: T;
}

export interface VerifyOptions {
  /** Seconds the signature's timestamp may be from `now`; 300 by default. */
  tolerance?: number;
  /** The receiver's clock in milliseconds since the epoch; `Date.now` by default. */
  now?: () => number;
}

/** Splits `t=…,v1=…,v1=…` into its timestamp and every `v1` signature; other schemes are ignored. */
export function parseSignatureHeader(header: string): { timestamp: number; signatures: string[] } {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (!/^\d+$/.test(value)) {
        throw new WebhookVerificationError(
          'malformed_header',
          'the signature timestamp is not an integer',
        );
      }
      timestamp = Number(value);
    } else if (key === 'v1' && /^[0-9a-f]+$/i.test(value)) {
      signatures.push(value.toLowerCase());
    }
  }
  if (timestamp === undefined) {
    throw new WebhookVerificationError('malformed_header', 'the signature header has no t=');
  }
  if (signatures.length === 0) {
    throw new WebhookVerificationError('malformed_header', 'the signature header has no v1=');
  }
  return { timestamp, signatures };
}

/**
 * Verifies a delivery with the five steps of spec §6 and returns its event. `header` is the
 * `Service-Signature` header; `secret` is the endpoint's `whsec_…` secret, or several (after a
 * rotation, the new one, which signs from the next delivery on, and the old one for deliveries
 * already on their way). Throws {@link WebhookVerificationError}.
 */
export function verifyWebhook<T = Record<string, unknown>>(
  rawBody: string | Buffer | Uint8Array,
  header: string,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): WebhookEvent<T> {
  // 1. The raw bytes, before JSON parsing.
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new WebhookVerificationError(
      'not_raw_body',
      'pass the raw request body (a string or Buffer), not a parsed object',
    );
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  // 2. Take t and v1 from the header.
  const { timestamp, signatures } = parseSignatureHeader(header ?? '');
  // 3. Reject a timestamp too far from the receiver's clock.
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE_SECONDS;
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(now - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_out_of_tolerance',
      `the signature timestamp is more than ${tolerance} seconds from now`,
    );
  }
  // 4. Compute the HMAC and compare in constant time with every v1 given.
  const secrets = typeof secret === 'string' ? [secret] : secret;
  const matched = secrets.some((s) => {
    const expected = createHmac('sha256', s).update(`${timestamp}.`).update(body).digest();
    return signatures.some((sig) => {
      const given = Buffer.from(sig, 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
  });
  // 5. On failure the receiver answers 400 and trusts nothing.
  if (!matched) {
    throw new WebhookVerificationError(
      'signature_mismatch',
      'no signature matches the body with the secret',
    );
  }
  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new WebhookVerificationError('malformed_body', 'the body is not JSON', { cause: err });
  }
  if (event === null || typeof event !== 'object' || Array.isArray(event)) {
    throw new WebhookVerificationError('malformed_body', 'the body is not a JSON object');
  }
  return event as WebhookEvent<T>;
}
