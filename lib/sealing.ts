/**
 * Sealed content (DESIGN §4): integrators encrypt a document to the server's public key with HPKE
 * (RFC 9180) in base mode with DHKEM(X25519, HKDF-SHA256), HKDF-SHA256 and AES-256-GCM, info
 * `spool sealed content v1` and empty AAD. Only the jobs service holds the private keys. The HPKE
 * itself is @hpke/core's; this module only fixes the suite and the key formats (raw 32-byte X25519
 * keys in base64url without padding).
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';

export const SEALING_ALGORITHM = 'HPKE-Base-X25519-SHA256-AES256GCM';
export const SEALING_INFO = new TextEncoder().encode('spool sealed content v1');

const suite = new CipherSuite({
  kem: new DhkemX25519HkdfSha256(),
  kdf: new HkdfSha256(),
  aead: new Aes256Gcm(),
});

/** PKCS #8 and SPKI prefixes of an X25519 key, for Node's key objects. */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

export function fromBase64url(text: string, what: string): Buffer {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error(`${what} is not base64url`);
  return Buffer.from(text, 'base64url');
}

/** The public key of a raw X25519 private key. */
export function publicKeyOf(privateKey: Buffer): Buffer {
  if (privateKey.length !== 32) throw new Error('an X25519 private key is 32 bytes');
  const key = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, privateKey]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 32);
}

/** A new key pair, raw and base64url-encoded. */
export async function generateServerKeyPair(): Promise<{ publicKey: string; privateKey: string }> {
  const pair = await suite.kem.generateKeyPair();
  const privateKey = Buffer.from(await suite.kem.serializePrivateKey(pair.privateKey));
  return {
    privateKey: privateKey.toString('base64url'),
    publicKey: publicKeyOf(privateKey).toString('base64url'),
  };
}

/** Seals `plaintext` to a server public key; what `spool seal` and integrators do. */
export async function seal(
  publicKey: string,
  plaintext: Uint8Array,
): Promise<{ enc: string; ciphertext: string }> {
  const recipientPublicKey = await suite.kem.deserializePublicKey(
    toArrayBuffer(fromBase64url(publicKey, 'the public key')),
  );
  const { enc, ct } = await suite.seal(
    { recipientPublicKey, info: toArrayBuffer(SEALING_INFO) },
    toArrayBuffer(plaintext),
  );
  return {
    enc: Buffer.from(enc).toString('base64url'),
    ciphertext: Buffer.from(ct).toString('base64url'),
  };
}

/**
 * Opens sealed content with the first of `privateKeys` that can (the current key, then keys kept
 * for the rotation grace period). Throws when none can: tampered, or sealed to another key.
 */
export async function open(
  privateKeys: Buffer[],
  enc: string,
  ciphertext: string,
): Promise<Buffer> {
  const encBytes = toArrayBuffer(fromBase64url(enc, 'enc'));
  const ct = toArrayBuffer(fromBase64url(ciphertext, 'ciphertext'));
  for (const raw of privateKeys) {
    try {
      const recipientKey = await suite.kem.deserializePrivateKey(toArrayBuffer(raw));
      const pt = await suite.open(
        { recipientKey, enc: encBytes, info: toArrayBuffer(SEALING_INFO) },
        ct,
      );
      return Buffer.from(pt);
    } catch {
      // try the next key
    }
  }
  throw new Error('the sealed content cannot be opened: it was changed, or sealed to another key');
}

/**
 * The server keys from configuration: the current private key and, for the rotation grace period,
 * earlier ones (comma separated), each a raw 32-byte X25519 key in base64url.
 */
export function serverKeysFrom(
  current: string,
  previous = '',
): { publicKey: string; privateKeys: Buffer[] } {
  const keys = [current, ...previous.split(',')].map((k) => k.trim()).filter(Boolean);
  const privateKeys = keys.map((k) => {
    const raw = fromBase64url(k, 'a server key');
    if (raw.length !== 32) throw new Error('a server key is 32 bytes in base64url');
    return raw;
  });
  return { publicKey: publicKeyOf(privateKeys[0] as Buffer).toString('base64url'), privateKeys };
}
