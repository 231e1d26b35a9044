/**
 * The signatures on a delivery. Spec §6 fixes `Service-Signature: t=<unix>,v1=<hex>` where the hex
 * is HMAC-SHA256 keyed with the whole secret text over `t + "." + body` (Stripe's scheme), made
 * with the current secret: "the new secret is used from the next delivery", and a receiver reading
 * the header's fields into a map must find that one. Spool also sends the Standard Webhooks
 * headers, whose signature is keyed with the secret's decoded bytes and covers the delivery id as
 * well: `v1,<base64 HMAC-SHA256 of "id.t.body">`, one entry per secret that signs (the current
 * one first, and during a rotation's grace period the previous one), which that scheme's
 * receivers try in turn. All are computed when an attempt is sent.
 */
import { createHmac } from 'node:crypto';
import { SECRET_PREFIX } from './crypto.js';

/** `v1` of `Service-Signature`: hex HMAC-SHA256(secret text, `t.body`). */
export function serviceSignature(secret: string, timestamp: number, body: Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The Standard Webhooks key: the bytes the secret's base64 part encodes. */
export function standardKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Buffer.from(encoded, 'base64');
}

/** A `webhook-signature` entry's signature: base64 HMAC-SHA256(key, `id.t.body`). */
export function standardSignature(
  secret: string,
  deliveryId: string,
  timestamp: number,
  body: Buffer,
): string {
  return createHmac('sha256', standardKey(secret))
    .update(`${deliveryId}.${timestamp}.`)
    .update(body)
    .digest('base64');
}

export interface SignatureInput {
  deliveryId: string;
  /** Unix seconds. */
  timestamp: number;
  body: Buffer;
  /** Every secret that signs now; the current one first. */
  secrets: readonly string[];
}

/** The signature headers of one attempt, lower-case names. */
export function signatureHeaders(input: SignatureInput): Record<string, string> {
  const { deliveryId, timestamp, body, secrets } = input;
  if (secrets.length === 0) throw new Error('a delivery needs at least one secret to sign with');
  const current = secrets[0] as string;
  const standard = secrets.map((s) => `v1,${standardSignature(s, deliveryId, timestamp, body)}`);
  return {
    'service-signature': `t=${timestamp},v1=${serviceSignature(current, timestamp, body)}`,
    'webhook-id': deliveryId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standard.join(' '),
  };
}
