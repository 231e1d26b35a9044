/** Query-string parameters: one value each, known names only, and the list parameters. */
import type { ParsedUrlQuery } from 'node:querystring';
import { invalid, SpoolError } from '../lib/errors.js';
import { MAX_LIMIT } from '../lib/paging.js';
import { parseRfc3339 } from '../lib/time.js';

/** The one value of a parameter, or undefined; a repeated parameter is a 400. */
export function single(query: ParsedUrlQuery, name: string): string | undefined {
  const raw = query[name];
  if (Array.isArray(raw)) throw invalid(`${name} may be given once`, name);
  return raw;
}

/** A `true` or `false` parameter, false when absent; anything else is a 400 naming it. */
export function booleanParam(query: ParsedUrlQuery, name: string): boolean {
  const raw = single(query, name);
  if (raw !== undefined && raw !== 'true' && raw !== 'false') {
    throw invalid(`${name} must be true or false`, name);
  }
  return raw === 'true';
}

/** An RFC 3339 time parameter, or undefined when absent; anything else is a 400 naming it. */
export function timeParam(raw: string | undefined, name: string): Date | undefined {
  if (raw === undefined) return undefined;
  const at = parseRfc3339(raw);
  if (!at) throw invalid(`${name} must be an RFC 3339 time`, name);
  return at;
}

/** A parameter the endpoint does not take is a 400 naming it, as an unknown body field is. */
export function rejectUnknownParams(query: ParsedUrlQuery, known: readonly string[]): void {
  for (const name of Object.keys(query)) {
    if (!known.includes(name)) {
      throw new SpoolError('unknown_field', `unknown query parameter ${JSON.stringify(name)}`, {
        param: name,
      });
    }
  }
}

/** `limit` (1 to 200; 0 sent on to a service means its default) and `cursor` of a list request. */
export function listParams(query: ParsedUrlQuery): { limit: number; cursor: string } {
  const limit = single(query, 'limit');
  if (limit !== undefined && (!/^\d{1,4}$/.test(limit) || +limit < 1 || +limit > MAX_LIMIT)) {
    throw invalid(`limit must be a whole number from 1 to ${MAX_LIMIT}`, 'limit');
  }
  return { limit: limit === undefined ? 0 : Number(limit), cursor: single(query, 'cursor') ?? '' };
}
