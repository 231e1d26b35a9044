/** The job endpoints of `/v1` (spec §4, DESIGN §4). */
import type { ParsedUrlQuery } from 'node:querystring';
import { type Static, Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import type {
  CreateJobRequest,
  GetJobResponse,
  ListJobsRequest,
  ListJobsResponse,
} from '../../gen/spool/v1/jobs.js';
import { PrintOptions } from '../../gen/spool/v1/stations.js';
import { JOB_STATUSES } from '../../lib/contracts/job-status.js';
import { invalid, SpoolError } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { parseRfc3339 } from '../../lib/time.js';
import { body, readRaw } from '../body.js';
import type { Backends } from '../clients.js';
import { JobCreations } from '../job-creations.js';
import { listParams, rejectUnknownParams, single, timeParam } from '../query.js';
import type { GatewayState } from '../state.js';
import { eventView, jobView, templateView, uploadView } from '../views.js';
import { actorOf, orgOf, param } from './context.js';

/** The file name extension a job's saved content gets, by its type. */
const EXTENSIONS: Record<string, string> = {
  'application/pdf': 'pdf',
  'text/plain': 'txt',
  'application/octet-stream': 'bin',
};

const Text = (max: number, description: string) => Type.String({ maxLength: max, description });

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

export const OptionsBody = Type.Object(
  {
    copies: Type.Optional(Type.Integer({ minimum: 1, maximum: 999, description: 'from 1 to 999' })),
    duplex: Type.Optional(
      Type.Union(
        ['one_sided', 'two_sided_long_edge', 'two_sided_short_edge'].map((v) => Type.Literal(v)),
        { description: 'one_sided, two_sided_long_edge or two_sided_short_edge' },
      ),
    ),
    color: Type.Optional(
      Type.Union([Type.Literal('color'), Type.Literal('monochrome')], {
        description: 'color or monochrome',
      }),
    ),
    paper: Type.Optional(Text(64, 'a paper size such as A4 or Letter')),
    tray: Type.Optional(Text(64, 'a tray name')),
    pages: Type.Optional(
      Type.String({
        pattern: '^\\d+(-\\d+)?(,\\d+(-\\d+)?)*$',
        maxLength: 200,
        description: 'page ranges such as 1-3,5',
      }),
    ),
    fit_to_page: Type.Optional(Type.Boolean({ description: 'true or false' })),
    rotate: Type.Optional(
      Type.Union(
        [0, 90, 180, 270].map((v) => Type.Literal(v)),
        {
          description: '0, 90, 180 or 270',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

export const CreateJobBody = Type.Object(
  {
    printer_id: Type.String({ description: 'the id of a printer of this organization' }),
    title: Type.Optional(Text(1000, 'at most 1000 characters')),
    reference: Type.Optional(Text(1000, 'at most 1000 characters')),
    content: ContentBody,
    options: Type.Optional(OptionsBody),
    schedule_at: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'an RFC 3339 time: the job is scheduled until then',
      }),
    ),
    hold: Type.Optional(Type.Boolean({ description: 'true: the job is held until retried' })),
    expire_after: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 30 * 24 * 3600,
        description: 'seconds the job may wait undelivered before it fails as expired',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ReprintBody = Type.Object({}, { additionalProperties: false });

const EmptyBody = Type.Object({}, { additionalProperties: false });

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The fields each kind of content takes besides `type`. */
const KIND_FIELDS: Record<(typeof CONTENT_KINDS)[number], string[]> = {
  pdf_base64: ['data'],
  raw_base64: ['data'],
  text: ['data'],
  pdf_uri: ['uri'],
  raw_uri: ['uri'],
  upload: ['upload_id'],
  template: ['template_id', 'fields'],
  sealed: ['content_type', 'enc', 'ciphertext'],
};

const REQUIRED: Partial<Record<(typeof CONTENT_KINDS)[number], string[]>> = {
  template: ['template_id'],
};

type Content = Static<typeof ContentBody>;
type Source = Pick<CreateJobRequest, 'inline' | 'uploadId' | 'template' | 'uri' | 'sealed'>;

/** Turns the request's `content` into the job's document source for the jobs service. */
function contentSource(content: Content): Source {
  const allowed = KIND_FIELDS[content.type];
  for (const field of Object.keys(content)) {
    if (field !== 'type' && !allowed.includes(field)) {
      throw new SpoolError('unknown_field', `content of type ${content.type} takes no ${field}`, {
        param: `content.${field}`,
      });
    }
  }
  const required = REQUIRED[content.type] ?? allowed;
  for (const field of required) {
    if ((content as Record<string, unknown>)[field] === undefined) {
      throw invalid(
        `content.${field} is required for content of type ${content.type}`,
        `content.${field}`,
      );
    }
  }
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

function printOptions(o: Static<typeof OptionsBody> | undefined): PrintOptions {
  return PrintOptions.fromPartial({
    copies: o?.copies,
    duplex: o?.duplex,
    color: o?.color,
    paper: o?.paper,
    tray: o?.tray,
    pages: o?.pages,
    fitToPage: o?.fit_to_page,
    rotate: o?.rotate,
  });
}

function idParam(raw: string | undefined, name: string): string {
  if (raw === undefined) return '';
  if (!isUuid(raw)) throw invalid(`${name} must be an id`, name);
  return raw;
}

const LIST_PARAMS = [
  'limit',
  'cursor',
  'status',
  'reference',
  'printer_id',
  'station_id',
  'created_after',
  'created_before',
];

/**
 * The jobs service's `ListJobs` request for `GET …/jobs` of `orgId` (the integrators' and the
 * operator's), from its query, each filter checked.
 */
export function listJobsRequest(query: ParsedUrlQuery, orgId: string): ListJobsRequest {
  rejectUnknownParams(query, LIST_PARAMS);
  const status = single(query, 'status');
  const statuses = status ? status.split(',').map((s) => s.trim()) : [];
  for (const s of statuses) {
    if (!(JOB_STATUSES as readonly string[]).includes(s)) {
      throw invalid(
        `unknown status ${JSON.stringify(s)}; statuses are ${JOB_STATUSES.join(', ')}`,
        'status',
      );
    }
  }
  return {
    orgId,
    ...listParams(query),
    statuses,
    reference: single(query, 'reference') ?? '',
    printerId: idParam(single(query, 'printer_id'), 'printer_id'),
    stationId: idParam(single(query, 'station_id'), 'station_id'),
    createdAfter: timeParam(single(query, 'created_after'), 'created_after'),
    createdBefore: timeParam(single(query, 'created_before'), 'created_before'),
  };
}

/** The answer of `GET …/jobs`: a page of jobs and the counts by status. */
export const jobListView = (res: ListJobsResponse) => ({
  items: res.items.map(jobView),
  next_cursor: res.nextCursor,
  counts: res.counts,
});

/** The answer of `GET …/jobs/{id}`: the job and its events. */
export const jobWithEventsView = (res: GetJobResponse) => ({
  job: jobView(res.job),
  events: res.events.map(eventView),
});

export const UPLOAD_TYPES = ['application/pdf', 'application/octet-stream', 'text/plain'] as const;

export interface JobRouteDeps {
  backends: Backends;
  /** Largest document, in bytes (an upload's whole body). */
  maxDocumentBytes: number;
  /** Largest JSON body of a job, whose document is inline (base64 grows it by a third). */
  jobBodyLimit: number;
  bodyLimit: number;
}

type Handler = Middleware<GatewayState>;

export function jobHandlers(deps: JobRouteDeps): Record<string, Handler> {
  const { jobs } = deps.backends;
  const creations = new JobCreations(jobs);
  return {
    'POST /v1/orgs/:org/jobs': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, CreateJobBody, deps.jobBodyLimit);
      const source = contentSource(req.content);
      const key = ctx.state.key;
      let scheduleAt: Date | undefined;
      if (req.schedule_at !== undefined) {
        scheduleAt = parseRfc3339(req.schedule_at);
        if (!scheduleAt) throw invalid('schedule_at must be an RFC 3339 time', 'schedule_at');
      }
      const job = await creations.create({
        orgId: orgOf(ctx),
        actor: actorOf(ctx),
        live: key?.live ?? false,
        printerId: req.printer_id,
        title: req.title ?? '',
        reference: req.reference ?? '',
        options: printOptions(req.options),
        ...source,
        scheduleAt,
        hold: req.hold ?? false,
        expireAfter: req.expire_after ?? 0,
        idempotency: ctx.state.idempotency,
      });
      ctx.status = 201;
      ctx.body = { job: jobView(job) };
    },

    'GET /v1/orgs/:org/jobs': async (ctx) => {
      ctx.body = jobListView(await jobs.listJobs(listJobsRequest(ctx.query, orgOf(ctx))));
    },

    'GET /v1/orgs/:org/jobs/:id': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const res = await jobs.getJob({ orgId: orgOf(ctx), jobId: param(ctx, 'id') });
      ctx.body = jobWithEventsView(res);
    },

    'POST /v1/orgs/:org/jobs/:id/cancel': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      await body(ctx, EmptyBody, deps.bodyLimit);
      const { job } = await jobs.cancelJob({
        orgId: orgOf(ctx),
        jobId: param(ctx, 'id'),
        actor: actorOf(ctx),
      });
      ctx.body = { job: jobView(job) };
    },

    'POST /v1/orgs/:org/jobs/:id/reprint': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      await body(ctx, ReprintBody, deps.bodyLimit);
      const orgId = orgOf(ctx);
      const jobId = param(ctx, 'id');
      // A key's reprint is in the key's mode, as its jobs are. A signed-in person has no mode: the
      // copy keeps the original's, so that reprinting a test job from the console bills nothing.
      const live = ctx.state.session
        ? ((await jobs.getJob({ orgId, jobId })).job?.live ?? false)
        : (ctx.state.key?.live ?? false);
      const { job } = await jobs.reprintJob({
        orgId,
        jobId,
        actor: actorOf(ctx),
        live,
        idempotency: ctx.state.idempotency,
      });
      ctx.status = 201;
      ctx.body = { job: jobView(job) };
    },

    'GET /v1/orgs/:org/jobs/:id/content': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const res = await jobs.getJobContent({ orgId: orgOf(ctx), jobId: param(ctx, 'id') });
      ctx.type = res.contentType;
      // An integrator's bytes: saved, not shown at the API's origin, and run as nothing if shown.
      const extension = EXTENSIONS[res.contentType] ?? 'bin';
      ctx.set('Content-Disposition', `attachment; filename="${param(ctx, 'id')}.${extension}"`);
      ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
      ctx.body = Buffer.from(res.data);
    },

    'GET /v1/orgs/:org/jobs/:id/preview': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const res = await jobs.getJobPreview({ orgId: orgOf(ctx), jobId: param(ctx, 'id') });
      ctx.type = res.contentType;
      ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
      ctx.body = Buffer.from(res.data);
    },

    'POST /v1/orgs/:org/uploads': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const contentType = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
      if (!(UPLOAD_TYPES as readonly string[]).includes(contentType)) {
        throw new SpoolError(
          'unsupported_media_type',
          `send the document's bytes with Content-Type ${UPLOAD_TYPES.join(', ')}`,
        );
      }
      const data = await readRaw(ctx, deps.maxDocumentBytes);
      const { upload } = await jobs.createUpload({ orgId: orgOf(ctx), contentType, data });
      ctx.status = 201;
      ctx.body = { upload: uploadView(upload) };
    },

    'GET /v1/orgs/:org/templates': async (ctx) => {
      rejectUnknownParams(ctx.query, ['limit', 'cursor']);
      const res = await jobs.listTemplates({ orgId: orgOf(ctx), ...listParams(ctx.query) });
      ctx.body = { templates: res.items.map(templateView), next_cursor: res.nextCursor };
    },

    'POST /v1/orgs/:org/jobs/:id/retry': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      await body(ctx, EmptyBody, deps.bodyLimit);
      const { job } = await jobs.retryJob({
        orgId: orgOf(ctx),
        jobId: param(ctx, 'id'),
        actor: actorOf(ctx),
      });
      ctx.body = { job: jobView(job) };
    },
  };
}
