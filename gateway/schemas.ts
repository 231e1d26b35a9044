/**
 * The shapes of the `/v1` API's answers as JSON Schema (TypeBox), for the OpenAPI document. The
 * tests check every answer they receive against them, so they stay true to the views.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { ERROR_CATALOGUE } from '../lib/errors.js';
import { JOB_STATUSES } from '../services/jobs/machine.js';

const Time = Type.String({ format: 'date-time', description: 'RFC 3339, UTC' });
const NullableTime = Type.Union([Time, Type.Null()]);
const Id = Type.String({ format: 'uuid' });
const NullableId = Type.Union([Id, Type.Null()]);
const Cursor = Type.String({
  description: 'pass as cursor for the next page; empty on the last page',
});

export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.Union(Object.keys(ERROR_CATALOGUE).map((c) => Type.Literal(c))),
        message: Type.String(),
        param: Type.Optional(Type.String({ description: 'the field or parameter at fault' })),
        request_id: Type.String({ description: 'also in the Request-Id header' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const KeyInfoSchema = Type.Object(
  {
    id: Id,
    org_id: Id,
    org_name: Type.String(),
    live: Type.Boolean(),
    scopes: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);

export const JobSchema = Type.Object(
  {
    id: Id,
    org_id: Id,
    status: Type.Union(JOB_STATUSES.map((s) => Type.Literal(s))),
    status_detail: Type.String({ description: 'why the job failed; empty otherwise' }),
    reference: Type.String(),
    title: Type.String(),
    printer_id: Id,
    station_id: Id,
    live: Type.Boolean({ description: 'false for jobs made with a test key' }),
    options: Type.Object(
      {
        copies: Type.Optional(Type.Integer()),
        duplex: Type.Optional(Type.String()),
        color: Type.Optional(Type.String()),
        paper: Type.Optional(Type.String()),
        tray: Type.Optional(Type.String()),
        pages: Type.Optional(Type.String()),
        fit_to_page: Type.Optional(Type.Boolean()),
        rotate: Type.Optional(Type.Integer()),
      },
      { additionalProperties: false },
    ),
    content_type: Type.String(),
    size: Type.Integer({ minimum: 0 }),
    attempt: Type.Integer({ minimum: 1 }),
    schedule_at: NullableTime,
    expire_at: NullableTime,
    reprint_of: NullableId,
    content_deleted: Type.Boolean({ description: 'the document is past retention' }),
    created_at: Time,
    updated_at: Time,
  },
  { additionalProperties: false },
);

export const EventSchema = Type.Object(
  {
    at: Time,
    status: Type.String(),
    detail: Type.String(),
    actor: Type.String({ description: 'api_key:<id>, station:<id>, system or admin' }),
  },
  { additionalProperties: false },
);

export const PrinterSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    station_id: Id,
    location_id: NullableId,
    status: Type.String({
      description: 'ready, printing, out_of_paper, paper_jam, door_open, offline, error or unknown',
    }),
    detail: Type.String(),
    station_online: Type.Boolean(),
    capabilities: Type.Object(
      {
        paper_sizes: Type.Array(Type.String()),
        duplex: Type.Boolean(),
        color: Type.Boolean(),
        copies: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
    updated_at: NullableTime,
  },
  { additionalProperties: false },
);

export const LocationSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    address: Type.String(),
    timezone: Type.String(),
    created_at: NullableTime,
  },
  { additionalProperties: false },
);

export const TemplateSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    kind: Type.String({ description: 'text, zpl or escpos' }),
    body: Type.String(),
    fields: Type.Array(
      Type.Object(
        {
          name: Type.String(),
          required: Type.Boolean(),
          default: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
    created_at: NullableTime,
  },
  { additionalProperties: false },
);

export const UploadSchema = Type.Object(
  {
    id: Id,
    content_type: Type.String(),
    size: Type.Integer(),
    sha256: Type.String(),
    created_at: NullableTime,
  },
  { additionalProperties: false },
);

export const JobAnswer = Type.Object({ job: JobSchema }, { additionalProperties: false });

export const JobWithEvents = Type.Object(
  { job: JobSchema, events: Type.Array(EventSchema) },
  { additionalProperties: false },
);

export const JobList = Type.Object(
  {
    items: Type.Array(JobSchema),
    next_cursor: Cursor,
    counts: Type.Record(Type.String(), Type.Integer(), {
      description: 'jobs by status for the same filters, without the status filter',
    }),
  },
  { additionalProperties: false },
);

export function listOf(name: string, item: TSchema) {
  return Type.Object(
    { [name]: Type.Array(item), next_cursor: Cursor },
    { additionalProperties: false },
  );
}
