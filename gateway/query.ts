/**
 * Query-string parameters: one value each, known names only. A route states the parameters it
 * takes as a {@link QuerySpec}; the same object reads the request ({@link readQuery}) and is listed
 * in the OpenAPI documents, so what a route accepts and what its document says are one definition.
 */
import type { ParsedUrlQuery } from 'node:querystring';
import { invalid, SpoolError } from '../lib/errors.js';
import { isUuid } from '../lib/ids.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../lib/paging.js';
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

/** One query parameter a route takes: what its document says of it, and how the route reads it. */
export interface QueryParam<T> {
  description: string;
  /** The JSON Schema of its value, as the OpenAPI document gives it. */
  schema: Readonly<Record<string, unknown>>;
  /** Its value in `query`; a value the route refuses is a 400 naming `name`. */
  read(query: ParsedUrlQuery, name: string): T;
}

/** The query parameters of a route by name, in the order its document lists them. */
export type QuerySpec = Readonly<Record<string, QueryParam<unknown>>>;

/** What {@link readQuery} answers for a spec: each parameter's value by name. */
export type QueryValues<S extends QuerySpec> = {
  [K in keyof S]: S[K] extends QueryParam<infer T> ? T : never;
};

/** Refuses a parameter `spec` does not name, then reads each one it does. */
export function readQuery<S extends QuerySpec>(query: ParsedUrlQuery, spec: S): QueryValues<S> {
  rejectUnknownParams(query, Object.keys(spec));
  return Object.fromEntries(
    Object.entries(spec).map(([name, param]) => [name, param.read(query, name)]),
  ) as QueryValues<S>;
}

/** A string passed on as it is, empty when absent; the service behind checks what it must. */
export function textParam(
  description: string,
  schema: Record<string, unknown> = { type: 'string' },
): QueryParam<string> {
  return { description, schema, read: (query, name) => single(query, name) ?? '' };
}

/** One of `values`, passed on as it is (empty when absent) to the service, which checks it. */
export function choiceParam(description: string, values: readonly string[]): QueryParam<string> {
  return textParam(description, { type: 'string', enum: values });
}

/** `true` or `false`, false when absent. */
export function flagParam(description: string): QueryParam<boolean> {
  return {
    description,
    schema: { type: 'string', enum: ['true', 'false'] },
    read: booleanParam,
  };
}

/** An RFC 3339 time, undefined when absent. */
export function timeQueryParam(description: string): QueryParam<Date | undefined> {
  return {
    description,
    schema: { type: 'string', format: 'date-time' },
    read: (query, name) => timeParam(single(query, name), name),
  };
}

/**
 * The id of one `what` to keep, empty when absent. With `checked`, anything but an id is a 400
 * here; without, the value goes on as it is to the service, which refuses what is not an id.
 */
export function idParam(what: string, checked: boolean): QueryParam<string> {
  return {
    description: `only those of this ${what}`,
    schema: { type: 'string', format: 'uuid' },
    read: (query, name) => {
      const raw = single(query, name);
      if (raw === undefined) return '';
      if (checked && !isUuid(raw)) throw invalid(`${name} must be an id`, name);
      return raw;
    },
  };
}

/** `limit`: 1 to MAX_LIMIT; absent, 0, which a service reads as DEFAULT_LIMIT. */
const LIMIT: QueryParam<number> = {
  description: `page size, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`,
  schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  read: (query, name) => {
    const limit = single(query, name);
    if (limit !== undefined && (!/^\d{1,4}$/.test(limit) || +limit < 1 || +limit > MAX_LIMIT)) {
      throw invalid(`limit must be a whole number from 1 to ${MAX_LIMIT}`, name);
    }
    return limit === undefined ? 0 : Number(limit);
  },
};

/** The paging parameters every list takes. */
export const LIST_QUERY = {
  limit: LIMIT,
  cursor: textParam('next_cursor of the previous page'),
} as const satisfies QuerySpec;

/** `limit` (1 to 200; 0 sent on to a service means its default) and `cursor` of a list request. */
export function listParams(query: ParsedUrlQuery): { limit: number; cursor: string } {
  return {
    limit: LIST_QUERY.limit.read(query, 'limit'),
    cursor: LIST_QUERY.cursor.read(query, 'cursor'),
  };
}
