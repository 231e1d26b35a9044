/**
 * What a job prints: checks that a document is what it claims to be, and renders templates.
 */
import type { Template, TemplateField } from '../../gen/spool/v1/jobs.js';
import { invalid } from '../../lib/errors.js';

export const CONTENT_TYPES = ['application/pdf', 'application/octet-stream', 'text/plain'] as const;

/** Template kinds and the content type of what they render to. */
export const TEMPLATE_KINDS: Record<string, string> = {
  text: 'text/plain',
  zpl: 'application/octet-stream',
  escpos: 'application/octet-stream',
};

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/**
 * Refuses a document that is not what its content type says, so that it is a 400 now rather than
 * a failed print later.
 */
export function checkDocument(contentType: string, document: Buffer, param: string): void {
  if (!(CONTENT_TYPES as readonly string[]).includes(contentType)) {
    throw invalid(`content type must be one of ${CONTENT_TYPES.join(', ')}`, param);
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
  const body = template.body.replace(PLACEHOLDER, (_m, name: string) => resolved.get(name) ?? '');
  return {
    contentType: TEMPLATE_KINDS[template.kind] ?? 'text/plain',
    document: Buffer.from(body, 'utf8'),
  };
}
