/**
 * Keyset paging shared by every list (DESIGN §4): `limit` defaults to 50 and may be at most 200;
 * `cursor` is opaque to clients (base64url of the last row's sort key) and `next_cursor` is empty
 * on the last page.
 */
import type { Queryable } from './db.js';
import { invalid } from './errors.js';
import { isUuid } from './ids.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export interface PageKey {
  /** The sort time of the last row, as an ISO string. */
  at: string;
  id: string;
}

/** A request's limit: 0 (unset) means the default. */
export function pageLimit(limit: number | undefined): number {
  if (limit === undefined || limit === 0) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw invalid(`limit must be a whole number from 1 to ${MAX_LIMIT}`, 'limit');
  }
  return limit;
}

export function encodeCursor(key: PageKey): string {
  return Buffer.from(JSON.stringify([key.at, key.id])).toString('base64url');
}

/** A sort time as {@link encodeCursor} writes it: `Date.toISOString()`. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The sort key a `cursor` carries; undefined for none. Anything but a cursor this API wrote, a
 * tampered one included, answers `400 invalid` here rather than reach the database.
 */
export function decodeCursor(cursor: string): PageKey | undefined {
  if (cursor === '') return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string' &&
      ISO_TIME.test(value[0]) &&
      new Date(value[0]).toISOString() === value[0] &&
      isUuid(value[1])
    ) {
      return { at: value[0], id: value[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw invalid('cursor is not a cursor this API returned', 'cursor');
}

/**
 * Given up to `limit + 1` rows fetched in order, returns the page and the cursor of the next one.
 */
export function page<T>(
  rows: T[],
  limit: number,
  keyOf: (row: T) => PageKey,
): { items: T[]; nextCursor: string } {
  if (rows.length <= limit) return { items: rows, nextCursor: '' };
  const items = rows.slice(0, limit);
  const last = items[items.length - 1] as T;
  return { items, nextCursor: encodeCursor(keyOf(last)) };
}

/**
 * One page of rows oldest first, after `cursor`: appends the keyset condition on
 * `(created_at, id)`, the order and the limit to `select … WHERE where`.
 */
export async function listOldestFirst<R extends { id: string; created_at: Date }>(
  db: { query: Queryable['query'] },
  query: { select: string; where: string; params: unknown[] },
  limit: number,
  cursor: string,
): Promise<{ items: R[]; nextCursor: string }> {
  const after = decodeCursor(cursor);
  const params = [...query.params];
  let where = query.where;
  if (after) {
    params.push(after.at, after.id);
    where += ` AND (created_at, id) > ($${params.length - 1}, $${params.length}::UUID)`;
  }
  params.push(limit + 1);
  const { rows } = await db.query<R>(
    `${query.select} WHERE ${where} ORDER BY created_at, id LIMIT $${params.length}`,
    params,
  );
  return page(rows, limit, (r) => ({ at: r.created_at.toISOString(), id: r.id }));
}
