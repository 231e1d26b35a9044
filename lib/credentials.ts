/**
 * The credentials of DESIGN §4: API keys (`svc_live_…`, `svc_test_…`), station device tokens
 * (`svc_dev_…`), console sessions (`svc_sess_…`) and invitations to the console (`svc_inv_…`). A
 * secret is 43 base62 characters drawn uniformly (256 bits); only the SHA-256 of the whole
 * credential is ever stored.
 */
import { createHash, randomInt } from 'node:crypto';
import ipaddr from 'ipaddr.js';

export const CREDENTIAL_PREFIXES = {
  live: 'svc_live_',
  test: 'svc_test_',
  device: 'svc_dev_',
  session: 'svc_sess_',
  invitation: 'svc_inv_',
} as const;

export type CredentialKind = keyof typeof CREDENTIAL_PREFIXES;

export { isScope, SCOPES, type Scope } from './contracts/scopes.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 43;
const SECRET_PATTERN = /^[0-9A-Za-z]{43}$/;

/** A new credential of the given kind, e.g. `svc_live_` followed by 43 base62 characters. */
export function generateCredential(kind: CredentialKind): string {
  let secret = '';
  // randomInt draws without modulo bias.
  for (let i = 0; i < SECRET_LENGTH; i++) secret += BASE62[randomInt(62)];
  return CREDENTIAL_PREFIXES[kind] + secret;
}

/** Which kind of credential a presented string is, when it is well formed at all. */
export function credentialKind(credential: string): CredentialKind | undefined {
  for (const [kind, prefix] of Object.entries(CREDENTIAL_PREFIXES) as [CredentialKind, string][]) {
    if (credential.startsWith(prefix)) {
      return SECRET_PATTERN.test(credential.slice(prefix.length)) ? kind : undefined;
    }
  }
  return undefined;
}

export function hashCredential(credential: string): Buffer {
  return createHash('sha256').update(credential, 'utf8').digest();
}

/** What a listing shows to tell keys apart: the prefix and the last four characters. */
export function credentialHint(credential: string): string {
  const kind = credentialKind(credential);
  const prefix = kind ? CREDENTIAL_PREFIXES[kind] : '';
  return `${prefix}…${credential.slice(-4)}`;
}

/** Parses CIDR ranges (a bare address means just that address); throws naming a bad one. */
export function parseAllowedIps(ranges: string[]): string[] {
  return ranges.map((range) => {
    try {
      if (!range.includes('/')) {
        const addr = ipaddr.parse(range);
        return `${addr.toString()}/${addr.kind() === 'ipv4' ? 32 : 128}`;
      }
      const [addr, bits] = ipaddr.parseCIDR(range);
      return `${addr.toString()}/${bits}`;
    } catch {
      throw new Error(`${JSON.stringify(range)} is not an IP address or CIDR range`);
    }
  });
}

/** True when `ip` lies in one of `ranges`; an empty list admits every address. */
export function ipAllowed(ip: string, ranges: readonly string[]): boolean {
  if (ranges.length === 0) return true;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d; compare it as IPv4.
    addr = ipaddr.process(ip);
  } catch {
    return false;
  }
  return ranges.some((range) => {
    const [net, bits] = ipaddr.parseCIDR(range);
    return addr.kind() === net.kind() && addr.match(net, bits);
  });
}
