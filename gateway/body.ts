/**
 * Request bodies: JSON only, bounded in size, and checked against the route's schema so that a
 * malformed body, a wrong content type, an unknown field and a bad value each get their own clear
 * error from the catalogue.
 */
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors';
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { SpoolError } from '../lib/errors.js';
import type { GatewayState } from './state.js';

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checker<T extends TSchema>(schema: T): TypeCheck<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  return check as TypeCheck<T>;
}

/** `/opts/zz` → `opts.zz`, the form `param` takes in error bodies. */
function paramOf(path: string): string {
  return path.replace(/^\//, '').split('/').join('.');
}

/** Checks a value against a schema, throwing the first problem as a catalogue error. */
export function validate<T extends TSchema>(schema: T, value: unknown): Static<T> {
  const check = checker(schema);
  if (check.Check(value)) return value;
  let errors: ValueError[] = [...check.Errors(value)];
  let first = errors.find((e) => e.path !== '') ?? errors[0];
  // A value that one alternative of a union could be (an object where an object or null may
  // go) is explained by that alternative's own first problem, which names the field inside it.
  for (let variant = first && alternativeFor(first); first && variant; ) {
    const at = first.path;
    errors = [...checker(variant).Errors(first.value)].map((e) => ({ ...e, path: at + e.path }));
    first = errors.find((e) => e.path !== at) ?? errors[0];
    variant = first && alternativeFor(first);
  }
  const unknown = errors.find((e) => e.type === ValueErrorType.ObjectAdditionalProperties);
  if (unknown) {
    const param = paramOf(unknown.path);
    throw new SpoolError('unknown_field', `unknown field ${JSON.stringify(param)}`, { param });
  }
  if (!first || first.path === '')
    throw new SpoolError('invalid', 'the body must be a JSON object');
  const param = paramOf(first.path);
  if (first.type === ValueErrorType.ObjectRequiredProperty) {
    throw new SpoolError('invalid', `${param} is required`, { param });
  }
  if (first.value === null) {
    throw new SpoolError('invalid', `${param} cannot be null: leave the field out instead`, {
      param,
    });
  }
  const description = first.schema.description as string | undefined;
  const kind = KINDS[first.type];
  if (kind !== undefined) {
    throw new SpoolError(
      'invalid',
      `${param} must be ${kind}, not ${jsonKind(first.value)}${description ? ` (${description})` : ''}`,
      { param },
    );
  }
  const expected = expectation(first.schema, first.type);
  const alternatives = expected === undefined ? alternativesText(first.schema) : undefined;
  let message: string;
  if (alternatives !== undefined) {
    // No alternative of the union is of the value's JSON type: say what each would take.
    message = `${param} must be ${alternatives}, not ${jsonKind(first.value)}${description ? ` (${description})` : ''}`;
  } else if (expected === undefined) {
    message = `${param} is invalid: ${description ?? first.message.toLowerCase()}`;
  } else {
    // The description says what a number means; leave it out where it only repeats the range, and
    // for a choice, whose list says it all.
    const said =
      description === undefined ||
      expected.choice ||
      (expected.range !== undefined && description.includes(expected.range));
    message = `${param} must be ${expected.text}${said ? '' : ` (${description})`}`;
  }
  throw new SpoolError('invalid', message, { param });
}

/** The JSON Schema `type` a value has (`integer` schemas take numbers too). */
function schemaTypes(value: unknown): string[] {
  if (value === null) return ['null'];
  if (Array.isArray(value)) return ['array'];
  if (typeof value === 'number') return ['number', 'integer'];
  return [typeof value];
}

/**
 * The one alternative of a failed union that is of the value's JSON type, when there is exactly
 * one: `{"pricing": {"pro": -1}}` is a wrong price, not a wrong kind of `pricing`.
 */
function alternativeFor(error: ValueError): TSchema | undefined {
  if (error.type !== ValueErrorType.Union) return undefined;
  const kinds = schemaTypes(error.value);
  const fitting = ((error.schema.anyOf as TSchema[] | undefined) ?? []).filter(
    (s) => typeof s.type === 'string' && kinds.includes(s.type),
  );
  return fitting.length === 1 ? fitting[0] : undefined;
}

/** What a union's alternatives take, `an integer at least 0 or null`; undefined for no union. */
function alternativesText(schema: TSchema): string | undefined {
  const anyOf = schema.anyOf as TSchema[] | undefined;
  if (!anyOf || anyOf.length === 0) return undefined;
  const texts = anyOf.map((variant) => {
    if (variant.type === 'null') return 'null';
    return expectation(variant, ValueErrorType.Union)?.text ?? TYPE_NAMES[variant.type as string];
  });
  return texts.every((t) => t !== undefined) ? texts.join(' or ') : undefined;
}

/** A JSON Schema type, as an error names it. */
const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  array: 'an array',
  string: 'a string',
  boolean: 'true or false',
  integer: 'an integer',
  number: 'a number',
};

/** The errors that say a value is of the wrong JSON type, and the type it must be. */
const KINDS: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.String]: 'a string',
  [ValueErrorType.Boolean]: 'true or false',
  [ValueErrorType.Object]: 'an object',
  [ValueErrorType.Array]: 'an array',
};

/** A JSON value's type, as an error names it. */
function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      return 'an object';
  }
}

/**
 * What a schema accepts, in words a user can act on, for the schemas whose TypeBox messages do
 * not say it: a union of literals ("expected union value") lists its choices, and a number states
 * its whole range (TypeBox names only the bound that was crossed).
 */
function expectation(
  schema: TSchema,
  type: ValueErrorType,
): { text: string; range?: string; choice?: boolean } | undefined {
  if (type === ValueErrorType.StringMinLength || type === ValueErrorType.StringMaxLength) {
    const { minLength: min = 0, maxLength: max } = schema as {
      minLength?: number;
      maxLength?: number;
    };
    const range =
      max === undefined ? `at least ${min}` : min > 0 ? `${min} to ${max}` : `at most ${max}`;
    const unit = max === undefined && min === 1 ? 'character' : 'characters';
    return { text: `a string of ${range} ${unit}`, range };
  }
  const choices = (schema.anyOf as TSchema[] | undefined)?.map((s) => s.const);
  if (
    choices &&
    choices.length > 0 &&
    choices.every((c) => typeof c === 'string' || typeof c === 'number')
  ) {
    return { text: `one of: ${choices.join(', ')}`, choice: true };
  }
  if (schema.type !== 'integer' && schema.type !== 'number') return undefined;
  const noun = schema.type === 'integer' ? 'an integer' : 'a number';
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = schema as {
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    exclusiveMaximum?: number;
  };
  let range: string | undefined;
  if (minimum !== undefined && maximum !== undefined) {
    range = `from ${minimum} to ${maximum}`;
  } else {
    const bounds = [
      minimum === undefined ? undefined : `at least ${minimum}`,
      exclusiveMinimum === undefined ? undefined : `greater than ${exclusiveMinimum}`,
      maximum === undefined ? undefined : `at most ${maximum}`,
      exclusiveMaximum === undefined ? undefined : `less than ${exclusiveMaximum}`,
    ].filter((b) => b !== undefined);
    if (bounds.length > 0) range = bounds.join(' and ');
  }
  return range === undefined ? { text: noun } : { text: `${noun} ${range}`, range };
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i;

/**
 * Reads the request body as JSON, at most `limit` bytes. A request without a body reads as `{}` so
 * that routes whose fields are all optional accept an empty POST.
 */
export async function readJson(ctx: Context, limit: number): Promise<unknown> {
  const length = ctx.request.length;
  const chunked = ctx.get('transfer-encoding') !== '';
  if (!chunked && (length === undefined || length === 0)) return {};
  if (!JSON_TYPE.test(ctx.get('content-type'))) {
    throw new SpoolError(
      'unsupported_media_type',
      'send the body as JSON (Content-Type: application/json)',
    );
  }
  const raw = (await readRaw(ctx, limit)).toString('utf8');
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw);
  } catch (err) {
    throw new SpoolError(
      'malformed_json',
      `the body is not valid JSON: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
}

/** Reads and validates a route's body. */
export async function body<T extends TSchema>(
  ctx: Context,
  schema: T,
  limit: number,
): Promise<Static<T>> {
  return validate(schema, await readJson(ctx, limit));
}

/**
 * The body of a PATCH: the fields to change, checked against `schema`. An empty one changes
 * nothing, and would be answered (and audited) as a change, so it is a 400 naming the fields.
 */
export async function changes<T extends TObject>(
  ctx: Context,
  schema: T,
  limit: number,
): Promise<Static<T>> {
  const raw = await readJson(ctx, limit);
  // Named in the change's audit entry, refused or not, never with their values, but for a true
  // or false one, which says what was done (an endpoint enabled or disabled) and can hold nothing
  // secret. Only the schema's own names: a refused body's other keys are the caller's text.
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    (ctx.state as GatewayState).bodyFields = Object.entries(raw)
      .filter(([k]) => Object.hasOwn(schema.properties, k))
      .map(([k, v]) => (typeof v === 'boolean' ? `${k}=${v}` : k));
  }
  const value = validate(schema, raw);
  const fields = Object.keys(value as object);
  if (fields.length === 0) {
    throw new SpoolError(
      'invalid',
      `nothing to change: give at least one of ${Object.keys(schema.properties).join(', ')}`,
    );
  }
  return value;
}

/**
 * Reads a request body as raw bytes, at most `limit` of them. The bytes are kept on `ctx.state`,
 * so a middleware that needs them first (Idempotency-Key) and the handler both see them.
 */
export async function readRaw(ctx: Context, limit: number): Promise<Buffer> {
  const state = ctx.state as { rawBody?: Buffer };
  if (state.rawBody !== undefined) {
    if (state.rawBody.length > limit) {
      throw new SpoolError('payload_too_large', `the body is larger than ${limit} bytes`);
    }
    return state.rawBody;
  }
  try {
    state.rawBody = await getRawBody(ctx.req, { length: ctx.request.length, limit });
    return state.rawBody;
  } catch (err) {
    if ((err as { type?: string }).type === 'entity.too.large') {
      throw new SpoolError('payload_too_large', `the body is larger than ${limit} bytes`);
    }
    throw new SpoolError('invalid', 'the body could not be read', { cause: err });
  }
}
