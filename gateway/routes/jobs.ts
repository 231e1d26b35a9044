/** The job endpoints of `/v1` (spec §4, DESIGN §4). */
import { type Static, Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import type { PrintOptions } from '../../gen/spool/v1/stations.js';
import { invalid } from '../../lib/errors.js';
import { isUuid } from '../../lib/ids.js';
import { parseRfc3339 } from '../../lib/time.js';
import { JOB_STATUSES } from '../../services/jobs/machine.js';
import { body } from '../body.js';
import type { Backends } from '../clients.js';
import { listParams, rejectUnknownParams, single } from '../query.js';
import type { GatewayState } from '../state.js';
import { eventView, jobView } from '../views.js';

const Text = (max: number, description: string) => Type.String({ maxLength: max, description });

export const ContentBody = Type.Object(
  {
    type: Type.Union(
      [
        'pdf_base64',
        'raw_base64',
        'text',
        'pdf_uri',
        'raw_uri',
        'upload',
        'template',
        'sealed',
      ].map((t) => Type.Literal(t)),
      { description: 'one of pdf_base64, raw_base64, text' },
    ),
    data: Type.Optional(Type.String({ description: 'the document: base64, or the text itself' })),
  },
  { additionalProperties: false },
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
  },
  { additionalProperties: false },
);

const EmptyBody = Type.Object({}, { additionalProperties: false });

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function decodeContent(content: Static<typeof ContentBody>): {
  contentType: string;
  document: Buffer;
} {
  if (content.data === undefined) throw invalid('content.data is required', 'content.data');
  switch (content.type) {
    case 'text':
      return { contentType: 'text/plain', document: Buffer.from(content.data, 'utf8') };
    case 'pdf_base64':
    case 'raw_base64': {
      const data = content.data.replace(/\s+/g, '');
      if (!BASE64.test(data) || data.length % 4 === 1) {
        throw invalid('content.data must be base64', 'content.data');
      }
      const document = Buffer.from(data, 'base64');
      if (content.type === 'pdf_base64') {
        if (!document.subarray(0, 1024).includes('%PDF-')) {
          throw invalid('content.data is not a PDF (it does not start with %PDF-)', 'content.data');
        }
        return { contentType: 'application/pdf', document };
      }
      return { contentType: 'application/octet-stream', document };
    }
    default:
      throw invalid(`content type ${content.type} is not available yet`, 'content.type');
  }
}

function printOptions(o: Static<typeof OptionsBody> | undefined): PrintOptions {
  return {
    copies: o?.copies ?? 0,
    duplex: o?.duplex ?? '',
    color: o?.color ?? '',
    paper: o?.paper ?? '',
    tray: o?.tray ?? '',
    pages: o?.pages ?? '',
    fitToPage: o?.fit_to_page ?? false,
    rotate: o?.rotate ?? 0,
  };
}

function timeParam(raw: string | undefined, name: string): Date | undefined {
  if (raw === undefined) return undefined;
  const at = parseRfc3339(raw);
  if (!at) throw invalid(`${name} must be an RFC 3339 time`, name);
  return at;
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

export interface JobRouteDeps {
  backends: Backends;
  /** Largest JSON body of a job, whose document is inline (base64 grows it by a third). */
  jobBodyLimit: number;
  bodyLimit: number;
}

type Handler = Middleware<GatewayState>;

function actor(ctx: Parameters<Handler>[0]): string {
  return `api_key:${ctx.state.key?.id ?? ''}`;
}

function orgOf(ctx: Parameters<Handler>[0]): string {
  return ctx.state.key?.orgId ?? '';
}

function param(ctx: Parameters<Handler>[0], name: string): string {
  return (ctx as unknown as { params: Record<string, string> }).params[name] ?? '';
}

export function jobHandlers(deps: JobRouteDeps): Record<string, Handler> {
  const { jobs } = deps.backends;
  return {
    'POST /v1/orgs/:org/jobs': async (ctx) => {
      const req = await body(ctx, CreateJobBody, deps.jobBodyLimit);
      const { contentType, document } = decodeContent(req.content);
      const key = ctx.state.key;
      const { job } = await jobs.createJob({
        orgId: orgOf(ctx),
        actor: actor(ctx),
        live: key?.live ?? false,
        printerId: req.printer_id,
        title: req.title ?? '',
        reference: req.reference ?? '',
        contentType,
        document,
        options: printOptions(req.options),
      });
      ctx.status = 201;
      ctx.body = { job: jobView(job) };
    },

    'GET /v1/orgs/:org/jobs': async (ctx) => {
      rejectUnknownParams(ctx.query, LIST_PARAMS);
      const status = single(ctx.query, 'status');
      const statuses = status ? status.split(',').map((s) => s.trim()) : [];
      for (const s of statuses) {
        if (!(JOB_STATUSES as readonly string[]).includes(s)) {
          throw invalid(
            `unknown status ${JSON.stringify(s)}; statuses are ${JOB_STATUSES.join(', ')}`,
            'status',
          );
        }
      }
      const res = await jobs.listJobs({
        orgId: orgOf(ctx),
        ...listParams(ctx.query),
        statuses,
        reference: single(ctx.query, 'reference') ?? '',
        printerId: idParam(single(ctx.query, 'printer_id'), 'printer_id'),
        stationId: idParam(single(ctx.query, 'station_id'), 'station_id'),
        createdAfter: timeParam(single(ctx.query, 'created_after'), 'created_after'),
        createdBefore: timeParam(single(ctx.query, 'created_before'), 'created_before'),
      });
      ctx.body = {
        items: res.items.map(jobView),
        next_cursor: res.nextCursor,
        counts: res.counts,
      };
    },

    'GET /v1/orgs/:org/jobs/:id': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const res = await jobs.getJob({ orgId: orgOf(ctx), jobId: param(ctx, 'id') });
      ctx.body = { job: jobView(res.job), events: res.events.map(eventView) };
    },

    'POST /v1/orgs/:org/jobs/:id/cancel': async (ctx) => {
      await body(ctx, EmptyBody, deps.bodyLimit);
      const { job } = await jobs.cancelJob({
        orgId: orgOf(ctx),
        jobId: param(ctx, 'id'),
        actor: actor(ctx),
      });
      ctx.body = { job: jobView(job) };
    },

    'POST /v1/orgs/:org/jobs/:id/retry': async (ctx) => {
      await body(ctx, EmptyBody, deps.bodyLimit);
      const { job } = await jobs.retryJob({
        orgId: orgOf(ctx),
        jobId: param(ctx, 'id'),
        actor: actor(ctx),
      });
      ctx.body = { job: jobView(job) };
    },
  };
}
