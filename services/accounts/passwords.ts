/**
 * Password hashing with scrypt (memory-hard, from node:crypto). Each hash carries its own random
 * salt and the parameters it was made with, `scrypt$<log2 N>$<r>$<p>$<salt>$<hash>` (base64url), so
 * the cost can rise later without invalidating stored hashes. Verification compares in constant
 * time. Every hash of the process waits its turn in one bounded queue (hashing-queue.ts), so a
 * burst of them is answered `429 rate_limited` beyond what the CPU can do in time.
 */
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';
import { createHashingQueue, defaultHashingOptions } from './hashing-queue.js';

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 200;

const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;

/** One queue per process: the hashes share its CPU whichever request asked for them. */
const hashing = createHashingQueue(defaultHashingOptions());

function derive(password: string, salt: Buffer, logN: number, r: number, p: number) {
  const options: ScryptOptions = {
    N: 2 ** logN,
    r,
    p,
    // scrypt needs 128 · N · r bytes; leave room above it.
    maxmem: 256 * 2 ** logN * r,
  };
  return hashing.run(
    () =>
      new Promise<Buffer>((resolve, reject) => {
        scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) =>
          err ? reject(err) : resolve(key),
        );
      }),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await derive(password, salt, LOG_N, R, P);
  return ['scrypt', LOG_N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash of a random password, so that an unknown email costs as much time as a known one. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  if (decoy === undefined) {
    const made = hashPassword(randomBytes(16).toString('hex'));
    // Refused while the queue was full, it is made again by the next caller.
    made.catch(() => {
      if (decoy === made) decoy = undefined;
    });
    decoy = made;
  }
  return decoy;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![logN, r, p].every((n) => Number.isInteger(n) && n > 0) || logN > 22) return false;
  const salt = Buffer.from(parts[4] as string, 'base64url');
  const expected = Buffer.from(parts[5] as string, 'base64url');
  const key = await derive(password, salt, logN, r, p);
  return key.length === expected.length && timingSafeEqual(key, expected);
}
