/**
 * The `content` of a job creation: the kinds of document it can name and, per kind, the fields it
 * takes. One table ({@link CONTENT_RULES}) is both what a request is checked against and what the
 * OpenAPI document gives as one schema per kind.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { CreateJobRequest } from '../../gen/spool/v1/jobs.js';
import { invalid, SpoolError } from '../../lib/errors.js';

/** The media types of a document: what an upload takes and what a job's content answers. */
export const DOCUMENT_TYPES = [
  'application/pdf',
  'application/octet-stream',
  'text/plain',
] as const;

export const CONTENT_KINDS = [
  'pdf_base64',
  'raw_base64',
  'text',
  'pdf_uri',
  'raw_uri',
  'upload',
  'template',
  'sealed',
] as const;

export type ContentKind = (typeof CONTENT_KINDS)[number];

export const ContentBody = Type.Object(
  {
    type: Type.Union(
      CONTENT_KINDS.map((t) => Type.Literal(t)),
      { description: `one of ${CONTENT_KINDS.join(', ')}` },
    ),
    data: Type.Optional(
      Type.String({
        description: 'pdf_base64, raw_base64: the document in base64; text: the text',
      }),
    ),
    uri: Type.Optional(
      Type.String({ maxLength: 2048, description: 'pdf_uri, raw_uri: an https URL' }),
    ),
    upload_id: Type.Optional(Type.String({ description: 'upload: the id of an upload' })),
    template_id: Type.Optional(Type.String({ description: 'template: the id of a template' })),
    fields: Type.Optional(
      Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 10_000 }), {
        description: 'template: the values of its fields, as strings',
      }),
    ),
    content_type: Type.Optional(
      Type.String({ maxLength: 100, description: 'sealed: what the plaintext is' }),
    ),
    enc: Type.Optional(
      Type.String({ description: 'sealed: the HPKE encapsulated key, base64url' }),
    ),
    ciphertext: Type.Optional(Type.String({ description: 'sealed: the ciphertext, base64url' })),
  },
  { additionalProperties: false, description: 'the document to print, by one of several kinds' },
);

type ContentField = Exclude<keyof typeof ContentBody.properties, 'type'>;

/** Per kind: the fields it takes besides `type`, those that may be left out, and its title. */
export const CONTENT_RULES: Record<
  ContentKind,
  { fields: readonly ContentField[]; optional?: readonly ContentField[]; title: string }
> = {
  pdf_base64: { fields: ['data'], title: 'A PDF, inline in base64' },
  raw_base64: {
    fields: ['data'],
    title: 'Printer-ready bytes (ZPL, ESC/POS, PCL…), inline in base64',
  },
  text: { fields: ['data'], title: 'Plain text, inline' },
  pdf_uri: { fields: ['uri'], title: 'A PDF that Spool fetches from an https URL' },
  raw_uri: { fields: ['uri'], title: 'Printer-ready bytes that Spool fetches from an https URL' },
  upload: {
    fields: ['upload_id'],
    title: 'A document uploaded before with POST /v1/orgs/{org}/uploads',
  },
  template: {
    fields: ['template_id', 'fields'],
    optional: ['fields'],
    title: 'A template filled with field values',
  },
  sealed: {
    fields: ['content_type', 'enc', 'ciphertext'],
    title: 'A document sealed to the server key (HPKE), opened only by the jobs service',
  },
};

/**
 * The schema of each kind of job content, by kind, as the OpenAPI document gives them: the request
 * validator takes one object with every field optional and checks the fields per kind after it
 * ({@link contentSource}); these say the same per kind, so generated clients get one type per
 * kind. Each field's schema is the validator's own.
 */
export const CONTENT_SCHEMAS = Object.fromEntries(
  CONTENT_KINDS.map((kind) => {
    const { fields, optional = [], title } = CONTENT_RULES[kind];
    const properties: Record<string, TSchema> = { type: Type.Literal(kind) };
    for (const field of fields) {
      const schema = ContentBody.properties[field];
      properties[field] = optional.includes(field) ? Type.Optional(schema) : schema;
    }
    return [kind, Type.Object(properties, { additionalProperties: false, title })];
  }),
) as unknown as Record<ContentKind, TSchema>;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

type Content = Static<typeof ContentBody>;

/** Where a job's document comes from, as the jobs service's `CreateJob` takes it. */
export type ContentSource = Pick<
  CreateJobRequest,
  'inline' | 'uploadId' | 'template' | 'uri' | 'sealed'
>;

/** Refuses a field `content`'s kind does not take and one it needs that is missing. */
function checkFields(content: Content): void {
  const { fields, optional = [] } = CONTENT_RULES[content.type];
  for (const field of Object.keys(content)) {
    if (field !== 'type' && !(fields as readonly string[]).includes(field)) {
      throw new SpoolError('unknown_field', `content of type ${content.type} takes no ${field}`, {
        param: `content.${field}`,
      });
    }
  }
  for (const field of fields) {
    if (!optional.includes(field) && content[field] === undefined) {
      throw invalid(
        `content.${field} is required for content of type ${content.type}`,
        `content.${field}`,
      );
    }
  }
}

/** Turns the request's `content` into the job's document source for the jobs service. */
export function contentSource(content: Content): ContentSource {
  checkFields(content);
  switch (content.type) {
    case 'text':
      return {
        inline: { contentType: 'text/plain', data: Buffer.from(content.data ?? '', 'utf8') },
      };
    case 'pdf_base64':
    case 'raw_base64': {
      const data = (content.data ?? '').replace(/\s+/g, '');
      if (!BASE64.test(data) || data.length % 4 === 1) {
        throw invalid('content.data must be base64', 'content.data');
      }
      const contentType =
        content.type === 'pdf_base64' ? 'application/pdf' : 'application/octet-stream';
      return { inline: { contentType, data: Buffer.from(data, 'base64') } };
    }
    case 'upload':
      return { uploadId: content.upload_id ?? '' };
    case 'template':
      return { template: { templateId: content.template_id ?? '', fields: content.fields ?? {} } };
    case 'pdf_uri':
    case 'raw_uri':
      return {
        uri: {
          uri: content.uri ?? '',
          contentType: content.type === 'pdf_uri' ? 'application/pdf' : 'application/octet-stream',
        },
      };
    case 'sealed':
      return {
        sealed: {
          contentType: content.content_type ?? '',
          enc: content.enc ?? '',
          ciphertext: content.ciphertext ?? '',
        },
      };
    default:
      throw invalid(`content of type ${content.type} is not available yet`, 'content.type');
  }
}
