/**
 * What a job prints: checks that a document is what it claims to be, and renders templates.
 */
import type { Template, TemplateField } from '../../gen/spool/v1/jobs.js';
import { invalid, SpoolError } from '../../lib/errors.js';

export const CONTENT_TYPES = ['application/pdf', 'application/octet-stream', 'text/plain'] as const;

/** Template kinds and the content type of what they render to. */
export const TEMPLATE_KINDS: Record<string, string> = {
  text: 'text/plain',
  zpl: 'application/octet-stream',
  escpos: 'application/octet-stream',
};

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** Refuses a document larger than `maxBytes`, `413 payload_too_large`. */
export function checkSize(size: number, maxBytes: number, param: string): void {
  if (size > maxBytes) {
    throw new SpoolError('payload_too_large', `the document is larger than ${maxBytes} bytes`, {
      param,
    });
  }
}

/**
 * Refuses a document that is not what its content type says, so that it is a 400 now rather than
 * a failed print later.
 */
export function checkDocument(contentType: string, document: Buffer, param: string): void {
  if (!(CONTENT_TYPES as readonly string[]).includes(contentType)) {
    throw invalid(`content type must be one of ${CONTENT_TYPES.join(', ')}`, param);
  }
  // A printer given nothing prints a blank page, or stops on an error, at best.
  if (document.length === 0) {
    throw invalid('the document is empty (0 bytes): there is nothing to print', param);
  }
  if (contentType === 'application/pdf' && !document.subarray(0, 1024).includes('%PDF-')) {
    throw invalid('the document is not a PDF (it does not start with %PDF-)', param);
  }
  if (contentType === 'text/plain' && !isUtf8(document)) {
    throw invalid('a text document must be UTF-8', param);
  }
}

function isUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** A C0 control character or DEL, but not a tab or a line feed, which are text in every kind. */
function isControl(c: string): boolean {
  const code = c.charCodeAt(0);
  return (code < 0x20 && c !== '\t' && c !== '\n') || code === 0x7f;
}

const hasControl = (value: string) => [...value].some(isControl);

/**
 * A field value as it may stand in a template of `kind`, so that it prints as text and can never
 * become a command of the printer's language (a value `^XZ^XA…` ending a ZPL label and starting
 * another, or an ESC sequence in ESC/POS):
 * - `zpl`: inside a field whose data follows `^FH` (hexadecimal escapes), the command prefixes
 *   (`^`, `~` and any the template sets with `^CC` or `^CT`), the escape character and control
 *   characters are written as escapes, so any value prints as given; elsewhere a value holding a
 *   command prefix or a control character is refused.
 * - `escpos`: a value holding a control character other than tab and line feed is refused.
 * - `text`: the value is printed as text; nothing in it is a command.
 */
function fieldValue(kind: string, body: string, at: number, name: string, value: string): string {
  const param = `content.fields.${name}`;
  if (kind === 'escpos' && hasControl(value)) {
    throw invalid(
      `template field ${JSON.stringify(name)} may not hold control characters in an ESC/POS template`,
      param,
    );
  }
  if (kind !== 'zpl') return value;
  const prefixes = zplPrefixes(body);
  const indicator = zplHexEscape(body, at, prefixes);
  if (indicator !== undefined) {
    const special = (c: string) => prefixes.has(c) || c === indicator || isControl(c);
    return [...value]
      .map((c) =>
        special(c)
          ? Buffer.from(c, 'utf8')
              .toString('hex')
              .toUpperCase()
              .replace(/../g, (pair) => `${indicator}${pair}`)
          : c,
      )
      .join('');
  }
  if ([...value].some((c) => prefixes.has(c)) || hasControl(value)) {
    const printable = [...prefixes].filter((c) => !isControl(c)).join(' ');
    throw invalid(
      `template field ${JSON.stringify(name)} may not hold ${printable} or control characters, which ZPL reads as commands; put ^FH before the field's ^FD in the template to print them`,
      param,
    );
  }
  return value;
}

// RS and DLE stand for ^ and ~ on a ZPL printer; they are control characters, refused in values.
const ZPL_DEFAULT_PREFIXES = ['^', '~', '\x1e', '\x10'];

/**
 * The characters that may begin a command anywhere in a ZPL body: `^` and `~`, and every
 * character a `^CC`/`~CC` (change caret) or `^CT`/`~CT` (change tilde) of the template names.
 * Where in the body each takes effect is not worked out: a value may hold none of them.
 */
function zplPrefixes(body: string): Set<string> {
  const prefixes = new Set(ZPL_DEFAULT_PREFIXES);
  // A lookahead, so that `^CC+` and a `+CT#` right after it are both seen.
  const change = /(?=(.)C[CT](.))/gis;
  for (let grew = true; grew; ) {
    grew = false;
    for (const m of body.matchAll(change)) {
      const [, by = '', to = ''] = m;
      if (prefixes.has(by) && !prefixes.has(to)) {
        prefixes.add(to);
        grew = true;
      }
    }
  }
  return prefixes;
}

/** A regular expression character class of `chars`, whatever they are. */
function charClass(chars: Iterable<string>): string {
  const escaped = [...chars].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `[${escaped.join('')}]`;
}

/**
 * The hexadecimal escape character in force at `at` in a ZPL body: set by a `^FH` (default `_`)
 * since the last `^FS` that ended a field; undefined when the field has no `^FH`. Commands are
 * matched in either case and with any of the body's command `prefixes`.
 */
function zplHexEscape(body: string, at: number, prefixes: Set<string>): string | undefined {
  const before = body.slice(0, at);
  const prefix = charClass(prefixes);
  const ends = [...before.matchAll(new RegExp(`${prefix}FS`, 'gi'))];
  const fieldStart = (ends.at(-1)?.index ?? -1) + 1;
  let found: string | undefined;
  // `.` without the s flag: a line break after ^FH is not an escape character (ZPL skips it).
  for (const m of before.slice(fieldStart).matchAll(new RegExp(`${prefix}FH(.?)`, 'gi'))) {
    const char = m[1] ?? '';
    found = char === '' || prefixes.has(char) ? '_' : char;
  }
  return found;
}

/** The placeholders a template body uses, in order of first use. */
export function placeholders(body: string): string[] {
  return [...new Set([...body.matchAll(PLACEHOLDER)].map((m) => m[1] as string))];
}

/**
 * Checks a new template: its kind, that its fields are unique, and that every placeholder in the
 * body is a declared field.
 */
export function checkTemplate(kind: string, body: string, fields: TemplateField[]): void {
  if (!(kind in TEMPLATE_KINDS)) {
    throw invalid(`kind must be one of ${Object.keys(TEMPLATE_KINDS).join(', ')}`, 'kind');
  }
  const names = new Set<string>();
  for (const field of fields) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field.name)) {
      throw invalid(
        `field name ${JSON.stringify(field.name)} must be letters, digits and _`,
        'fields',
      );
    }
    if (names.has(field.name)) throw invalid(`field ${field.name} is declared twice`, 'fields');
    names.add(field.name);
  }
  for (const name of placeholders(body)) {
    if (!names.has(name))
      throw invalid(`the body uses {{${name}}}, which is not a declared field`, 'body');
  }
}

/**
 * Renders a template with the given field values; a missing required field or an unknown field is
 * a 400 naming it.
 */
export function renderTemplate(
  template: Template,
  values: Record<string, string>,
): { contentType: string; document: Buffer } {
  const declared = new Map(template.fields.map((f) => [f.name, f]));
  for (const name of Object.keys(values)) {
    if (!declared.has(name)) {
      throw invalid(`unknown template field ${JSON.stringify(name)}`, `content.fields.${name}`);
    }
  }
  const resolved = new Map<string, string>();
  for (const field of template.fields) {
    const value = values[field.name] ?? (field.required ? undefined : field.defaultValue);
    if (value === undefined) {
      throw invalid(
        `template field ${JSON.stringify(field.name)} is required`,
        `content.fields.${field.name}`,
      );
    }
    resolved.set(field.name, value);
  }
  const body = template.body.replace(PLACEHOLDER, (_m, name: string, at: number) =>
    fieldValue(template.kind, template.body, at, name, resolved.get(name) ?? ''),
  );
  return {
    contentType: TEMPLATE_KINDS[template.kind] ?? 'text/plain',
    document: Buffer.from(body, 'utf8'),
  };
}
