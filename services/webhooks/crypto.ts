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

/** Endpoints whose opened secrets {@link createSecretCache} keeps by default. */
export const SECRET_CACHE_ENDPOINTS = 10_000;

/**
 * A {@link SecretBox} that remembers what it opened, so that claiming deliveries does not run
 * AES-GCM for each claim. An entry is keyed by the endpoint and the exact ciphertext, which a
 * rotation replaces (a fresh IV each time), so a rotated secret is used from the next claim on,
 * and a ciphertext copied to another endpoint's row still fails to open. It keeps the last two
 * ciphertexts of an endpoint (the current secret and the previous one during a rotation's grace)
 * for at most `maxEndpoints` endpoints, dropping the least recently used. The secrets stay in this
 * process's memory only, as they do while a request is signed.
 */
export function createSecretCache(
  box: SecretBox,
  maxEndpoints: number = SECRET_CACHE_ENDPOINTS,
): SecretBox {
  const opened = new Map<string, Array<{ sealed: Buffer; secret: string }>>();
  return {
    seal: (secret, endpointId) => box.seal(secret, endpointId),
    open(sealed, endpointId) {
      const known = opened.get(endpointId) ?? [];
      const hit = known.find((k) => k.sealed.equals(sealed));
      let secret: string;
      if (hit) {
        secret = hit.secret;
      } else {
        secret = box.open(sealed, endpointId);
        known.unshift({ sealed: Buffer.from(sealed), secret });
        known.length = Math.min(known.length, 2);
      }
      // Maps iterate in insertion order: re-inserting keeps the least recently used first.
      opened.delete(endpointId);
      opened.set(endpointId, known);
      if (opened.size > maxEndpoints) {
        const oldest = opened.keys().next();
        if (!oldest.done) opened.delete(oldest.value);
      }
      return secret;
    },
  };
}
