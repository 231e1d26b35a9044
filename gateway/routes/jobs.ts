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
import { DEFAULT_PRIORITY, MAX_PRIORITY } from '../../lib/job-view.js';
import { parseRfc3339 } from '../../lib/time.js';
import { body, readRaw } from '../body.js';
import type { Backends } from '../clients.js';
import { JobCreations } from '../job-creations.js';
import {
  idParam,
  LIST_QUERY,
  type QueryParam,
  type QuerySpec,
  readQuery,
  rejectUnknownParams,
  single,
  textParam,
  timeQueryParam,
} from '../query.js';
import type { GatewayState } from '../state.js';
import { eventView, jobView, templateView, uploadView } from '../views.js';
import { actorOf, orgOf, param } from './context.js';
import { ContentBody, contentSource, DOCUMENT_TYPES } from './job-content.js';

/** The file name extension a job's saved content gets, by its type. */
const EXTENSIONS: Record<(typeof DOCUMENT_TYPES)[number], string> = {
  'application/pdf': 'pdf',
  'text/plain': 'txt',
  'application/octet-stream': 'bin',
};

const Text = (max: number, description: string) => Type.String({ maxLength: max, description });

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
    printer_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'the id of a printer of this organization; give it or pool_id, not both',
      }),
    ),
    pool_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          'instead of printer_id: the id of a pool of this organization, whose members Spool chooses from',
      }),
    ),
    priority: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_PRIORITY,
        description: `from 1 to ${MAX_PRIORITY} (default ${DEFAULT_PRIORITY}): of the jobs waiting for one printer, the highest priority is offered first, then the oldest`,
      }),
    ),
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

export const MoveJobBody = Type.Object(
  {
    printer_id: Type.String({
      maxLength: 64,
      description:
        'the id of another printer of this organization, which can honour the job options',
    }),
  },
  { additionalProperties: false },
);

const EmptyBody = Type.Object({}, { additionalProperties: false });

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

/** `status`: a comma list of job statuses, each checked. */
const STATUS_FILTER: QueryParam<string[]> = {
  description: `a comma list of statuses (${JOB_STATUSES.join(', ')})`,
  schema: {
    type: 'string',
    pattern: `^(${JOB_STATUSES.join('|')})(,(${JOB_STATUSES.join('|')}))*$`,
    examples: ['failed,held'],
  },
  read: (query, name) => {
    const status = single(query, name);
    const statuses = status ? status.split(',').map((s) => s.trim()) : [];
    for (const s of statuses) {
      if (!(JOB_STATUSES as readonly string[]).includes(s)) {
        throw invalid(
          `unknown status ${JSON.stringify(s)}; statuses are ${JOB_STATUSES.join(', ')}`,
          name,
        );
      }
    }
    return statuses;
  },
};

/** The query of a job list (the integrators' and the operator's): paging and the filters. */
export const JOB_LIST_QUERY = {
  ...LIST_QUERY,
  status: STATUS_FILTER,
  reference: textParam('the reference given at creation'),
  printer_id: idParam('printer', true),
  station_id: idParam('station', true),
  created_after: timeQueryParam('only jobs created after this RFC 3339 time'),
  created_before: timeQueryParam('only jobs created before this RFC 3339 time'),
} as const satisfies QuerySpec;

/**
 * The jobs service's `ListJobs` request for `GET …/jobs` of `orgId` (the integrators' and the
 * operator's), from its query, each filter checked.
 */
export function listJobsRequest(query: ParsedUrlQuery, orgId: string): ListJobsRequest {
  const q = readQuery(query, JOB_LIST_QUERY);
  return {
    orgId,
    limit: q.limit,
    cursor: q.cursor,
    statuses: q.status,
    reference: q.reference,
    printerId: q.printer_id,
    stationId: q.station_id,
    createdAfter: q.created_after,
    createdBefore: q.created_before,
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

  /** The jobs service's request for the job `POST …/jobs` (or its dry run) asks for. */
  async function creationRequest(ctx: Parameters<Handler>[0]): Promise<CreateJobRequest> {
    rejectUnknownParams(ctx.query, []);
    const req = await body(ctx, CreateJobBody, deps.jobBodyLimit);
    const source = contentSource(req.content);
    let scheduleAt: Date | undefined;
    if (req.schedule_at !== undefined) {
      scheduleAt = parseRfc3339(req.schedule_at);
      if (!scheduleAt) throw invalid('schedule_at must be an RFC 3339 time', 'schedule_at');
    }
    return {
      orgId: orgOf(ctx),
      actor: actorOf(ctx),
      live: ctx.state.key?.live ?? false,
      // Exactly one of the two, which the jobs service checks.
      printerId: req.printer_id ?? '',
      poolId: req.pool_id ?? '',
      priority: req.priority ?? 0,
      title: req.title ?? '',
      reference: req.reference ?? '',
      options: printOptions(req.options),
      ...source,
      scheduleAt,
      hold: req.hold ?? false,
      expireAfter: req.expire_after ?? 0,
      idempotency: undefined,
    };
  }
  return {
    'POST /v1/orgs/:org/jobs': async (ctx) => {
      const job = await creations.create({
        ...(await creationRequest(ctx)),
        idempotency: ctx.state.idempotency,
      });
      ctx.status = 201;
      ctx.body = { job: jobView(job) };
    },

    // A creation's dry run: the same body and the same checks, nothing created or counted.
    'POST /v1/orgs/:org/jobs/validate': async (ctx) => {
      const { printerId, poolId } = await jobs.validateJob(await creationRequest(ctx));
      ctx.body = { valid: true, ...(poolId ? { pool_id: poolId } : { printer_id: printerId }) };
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
      const extension = EXTENSIONS[res.contentType as (typeof DOCUMENT_TYPES)[number]] ?? 'bin';
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
      if (!(DOCUMENT_TYPES as readonly string[]).includes(contentType)) {
        throw new SpoolError(
          'unsupported_media_type',
          `send the document's bytes with Content-Type ${DOCUMENT_TYPES.join(', ')}`,
        );
      }
      const data = await readRaw(ctx, deps.maxDocumentBytes);
      const { upload } = await jobs.createUpload({ orgId: orgOf(ctx), contentType, data });
      ctx.status = 201;
      ctx.body = { upload: uploadView(upload) };
    },

    'GET /v1/orgs/:org/templates': async (ctx) => {
      const res = await jobs.listTemplates({
        orgId: orgOf(ctx),
        ...readQuery(ctx.query, LIST_QUERY),
      });
      ctx.body = { templates: res.items.map(templateView), next_cursor: res.nextCursor };
    },

    'POST /v1/orgs/:org/jobs/:id/move': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const req = await body(ctx, MoveJobBody, deps.bodyLimit);
      const { job } = await jobs.moveJob({
        orgId: orgOf(ctx),
        jobId: param(ctx, 'id'),
        printerId: req.printer_id,
        actor: actorOf(ctx),
      });
      ctx.body = { job: jobView(job) };
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
