/**
 * Database rows to the services' shapes. Columns are snake_case and the generated protobuf types
 * camelCase; `camelRow` renames the keys of a row and nothing else, typed so that a renamed or
 * missing column is a compile error where the row is used. A mapper then only spells out what is
 * not a rename (a `null` that the message wants `undefined`, a derived field).
 */

/** `org_id` → `orgId`, at the type level. */
export type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/** A row with its keys in camelCase. */
export type Camel<T> = { [K in keyof T as K extends string ? CamelCase<K> : K]: T[K] };

const camelKeys = new Map<string, string>();

function camelKey(key: string): string {
  let camel = camelKeys.get(key);
  if (camel === undefined) {
    camel = key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    camelKeys.set(key, camel);
  }
  return camel;
}

/** The row with its snake_case keys renamed to camelCase; the values are the row's own. */
export function camelRow<T extends object>(row: T): Camel<T> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) out[camelKey(key)] = value;
  return out as Camel<T>;
}
