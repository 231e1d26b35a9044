/**
 * Enrollment codes as people type them: ten characters drawn uniformly by the crypto module from
 * an alphabet of 32 that leaves out 0, O, 1 and I (50 random bits), written `XXXX-XXXX-XX`.
 * Case, spaces and dashes do not matter when one is given back; only its SHA-256 is stored.
 */
import { createHash, randomInt } from 'node:crypto';

/** A to Z and 2 to 9, without the letters I and O. */
export const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 10;
const CANONICAL = new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`);

/** A new code, `XXXX-XXXX-XX`. */
export function newEnrollmentCode(): string {
  let raw = '';
  // randomInt draws without modulo bias.
  for (let i = 0; i < CODE_LENGTH; i++) raw += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${raw.slice(0, 4)}-${raw.slice(4, 8)}-${raw.slice(8)}`;
}

/**
 * The code's ten characters, upper case, without spaces and dashes; undefined when what was given
 * cannot be a code at all.
 */
export function canonicalCode(given: string): string | undefined {
  const raw = given.replace(/[\s-]/g, '').toUpperCase();
  return CANONICAL.test(raw) ? raw : undefined;
}

/** What is stored of a code (given in canonical form). */
export function hashCode(canonical: string): Buffer {
  return createHash('sha256').update(`enrollment:${canonical}`, 'utf8').digest();
}
