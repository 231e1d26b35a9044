/**
 * Signing secrets and their encryption at rest. A secret is `whsec_` followed by the base64 of 32
 * random bytes, the form Stripe and Standard Webhooks use, so receivers can hand it to either
 * ecosystem's libraries. The database holds only AES-256-GCM ciphertexts of secrets, under a key
 * from configuration (`WEBHOOK_SECRET_KEY`), bound to their endpoint so that a ciphertext copied to
 * another row does not open.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
export const SECRET_BYTES = 32;
export const SECRET_KEY_BYTES = 32;

/** A new signing secret, `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** A fresh key for {@link createSecretBox}, as `WEBHOOK_SECRET_KEY` takes it (base64). */
export function generateSecretKey(): string {
  return randomBytes(SECRET_KEY_BYTES).toString('base64');
}

/** Reads `WEBHOOK_SECRET_KEY`: the base64 of exactly 32 bytes. */
export function parseSecretKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || key.length !== SECRET_KEY_BYTES) {
    throw new Error(`must be the base64 of ${SECRET_KEY_BYTES} random bytes`);
  }
  return key;
}

/** The format byte in front of every ciphertext, so that a later format can be told apart. */
const FORMAT_V1 = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretBox {
  /** Encrypts an endpoint's secret: format byte, IV, tag, ciphertext. */
  seal(secret: string, endpointId: string): Buffer;
  /** Decrypts what {@link SecretBox.seal} made for the same endpoint; throws when it does not open. */
  open(sealed: Buffer, endpointId: string): string;
}

function aad(endpointId: string): Buffer {
  return Buffer.from(`spool webhook secret v1 ${endpointId}`, 'utf8');
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== SECRET_KEY_BYTES) throw new Error('the secret key must be 32 bytes');
  return {
    seal(secret, endpointId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aad(endpointId));
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.of(FORMAT_V1), iv, cipher.getAuthTag(), ciphertext]);
    },
    open(sealed, endpointId) {
      if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== FORMAT_V1) {
        throw new Error('not a sealed webhook secret');
      }
      const iv = sealed.subarray(1, 1 + IV_BYTES);
      const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(aad(endpointId));
      decipher.setAuthTag(tag);
      const data = sealed.subarray(1 + IV_BYTES + TAG_BYTES);
      return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
    },
  };
}
