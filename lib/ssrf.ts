/**
 * The guard against server-side request forgery, for every URL a customer chooses that Spool then
 * calls (webhook endpoints, content URIs): without it Spool could be made to reach its own
 * database, a cloud metadata service or anything else on its private network. Two checks: when a
 * URL is accepted (scheme, no credentials, no literal private address), and when a connection is
 * opened, against the address the name resolved to at that moment, so that a name which resolves
 * to a public address first and to a private one later (DNS rebinding) is still refused. Only
 * global unicast addresses pass; `spool dev` and the `…_ALLOW_INSECURE` settings turn the guard
 * off, and allow `http://` too.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import { buildConnector } from 'undici';
import { invalid } from './errors.js';

/** The longest URL an endpoint may have. */
export const MAX_URL_LENGTH = 2048;

/** Raised when a connection would go to an address that is not a public one. */
export class BlockedAddressError extends Error {
  readonly code = 'ERR_SPOOL_BLOCKED_ADDRESS';
  readonly address: string;

  constructor(host: string, address: string) {
    super(
      address === host
        ? `${address} is not a public address; Spool does not connect there`
        : `${host} resolves to ${address}, which is not a public address; Spool does not connect there`,
    );
    this.name = 'BlockedAddressError';
    this.address = address;
  }
}

export function isBlockedAddressError(err: unknown): err is BlockedAddressError {
  return err instanceof BlockedAddressError;
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * True for global unicast addresses only: not loopback, private, carrier-grade NAT, link-local,
 * unique-local, multicast, broadcast, unspecified, documentation or other reserved ranges, nor an
 * IPv6 form that embeds an IPv4 address (mapped, NAT64, 6to4, Teredo).
 */
export function isPublicAddress(address: string): boolean {
  const host = unbracket(address);
  if (!ipaddr.isValid(host)) return false;
  return ipaddr.process(host).range() === 'unicast';
}

/** A `dns.lookup` that refuses names resolving to any address that is not public. */
export function guardedLookup(
  hostname: string,
  options: { family?: number | string; all?: boolean; hints?: number },
  callback: (
    err: NodeJS.ErrnoException | null,
    address: string | LookupAddress[],
    family?: number,
  ) => void,
): void {
  const all: LookupAllOptions = { ...options, family: options.family as 0 | 4 | 6, all: true };
  dnsLookup(hostname, all, (err, addresses) => {
    if (err) return callback(err, options.all ? [] : '');
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked) return callback(new BlockedAddressError(hostname, blocked.address), '');
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(new Error(`${hostname} did not resolve`), '');
    callback(null, first.address, first.family);
  });
}

type Connector = buildConnector.connector;

/**
 * The connector undici opens sockets with. Guarded, it checks a literal address itself (Node does
 * not look those up) and resolves names through {@link guardedLookup}.
 */
export function createConnector(options: { guard: boolean; timeoutMs: number }): Connector {
  const base = buildConnector({
    timeout: options.timeoutMs,
    ...(options.guard ? { lookup: guardedLookup } : {}),
  });
  if (!options.guard) return base;
  return (opts, callback) => {
    const host = unbracket(opts.hostname);
    if (ipaddr.isValid(host) && !isPublicAddress(host)) {
      callback(new BlockedAddressError(host, host), null);
      return;
    }
    base(opts, callback as (err: Error | null, socket: Socket | null) => void);
  };
}

/**
 * Checks a URL when it is accepted: https (http too when insecure targets are allowed), no
 * credentials or fragment, and no literal address or `localhost` name that the connect-time guard
 * would refuse anyway. Returns the URL normalized.
 */
export function checkPublicUrl(raw: string, allowInsecure: boolean, param = 'url'): string {
  const text = raw.trim();
  if (text === '') throw invalid(`${param} is required`, param);
  if (text.length > MAX_URL_LENGTH) {
    throw invalid(`${param} must be at most ${MAX_URL_LENGTH} characters`, param);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`${param} must be an absolute https URL`, param);
  }
  const schemes = allowInsecure ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    throw invalid(`${param} must use ${allowInsecure ? 'https or http' : 'https'}`, param);
  }
  if (url.username !== '' || url.password !== '') {
    throw invalid(`${param} must not carry a user name or password`, param);
  }
  if (url.hash !== '') throw invalid(`${param} must not have a fragment`, param);
  if (!allowInsecure) {
    // A name may end with the root's dot (`localhost.`): the same name.
    const host = unbracket(url.hostname).toLowerCase().replace(/\.$/, '');
    const local = host === 'localhost' || host.endsWith('.localhost');
    if (local || (ipaddr.isValid(host) && !isPublicAddress(host))) {
      throw invalid(`${param} must point to a public address, not ${url.hostname}`, param);
    }
  }
  return url.toString();
}
