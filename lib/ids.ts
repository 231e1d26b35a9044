import { notFound } from './errors.js';

/** Identifiers are v4 UUIDs (random keys spread writes across CockroachDB ranges). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * `value` when it is an id; otherwise NOT_FOUND `no such <what>`, as for an id that names nothing:
 * a path's id that cannot be one is an unknown resource, not a malformed request.
 */
export function requireUuid(value: string, what: string): string {
  if (!isUuid(value)) throw notFound(`no such ${what}`);
  return value;
}

/** An (organization, id) pair as a map key, in lower case as ids are stored. */
export function orgKey(orgId: string, id: string): string {
  return `${orgId}/${id}`.toLowerCase();
}
