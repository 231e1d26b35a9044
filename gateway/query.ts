/** Query-string parameters shared by list endpoints (`limit`, `cursor`). */
import type { ParsedUrlQuery } from 'node:querystring';
import { invalid } from '../lib/errors.js';
import { MAX_LIMIT } from '../lib/paging.js';

function single(query: ParsedUrlQuery, name: string): string | undefined {
  const raw = query[name];
  if (Array.isArray(raw)) throw invalid(`${name} may be given once`, name);
  return raw;
}

/** `limit` (1 to 200; 0 sent on to a service means its default) and `cursor` of a list request. */
export function listParams(query: ParsedUrlQuery): { limit: number; cursor: string } {
  const limit = single(query, 'limit');
  if (limit !== undefined && (!/^\d{1,4}$/.test(limit) || +limit < 1 || +limit > MAX_LIMIT)) {
    throw invalid(`limit must be a whole number from 1 to ${MAX_LIMIT}`, 'limit');
  }
  return { limit: limit === undefined ? 0 : Number(limit), cursor: single(query, 'cursor') ?? '' };
}
