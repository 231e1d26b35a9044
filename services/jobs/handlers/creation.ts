/**
 * Creating jobs: CreateJob, CreateJobs and ReprintJob. The document comes from whichever source
 * the request names (inline, an upload, a template, sealed, a URI); a large one is stored in the
 * object store before its job exists. GetServerKey gives the key sealed content is sealed to.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ServerUnaryCall } from '@grpc/grpc-js';
import { context, trace } from '@opentelemetry/api';
import { CreateJobRequest, type Job } from '../../../gen/spool/v1/jobs.js';
import { PrintOptions } from '../../../gen/spool/v1/stations.js';
import { invalid, SpoolError } from '../../../lib/errors.js';
import { toItemError } from '../../../lib/grpc.js';
import { isUuid, requireUuid } from '../../../lib/ids.js';
import { MAX_PRIORITY } from '../../../lib/job-view.js';
import { open as openSealed, SEALING_ALGORITHM } from '../../../lib/sealing.js';
import { contextFrom } from '../../../lib/tracing.js';
import { checkDocument, checkSize, renderTemplate } from '../content.js';
import type { Claim } from '../idempotency.js';
import { documentName, INLINE_DOCUMENT_BYTES, type NewJob, uploadName } from '../job-rows.js';
import { checkOptionsFor, checkPages } from '../options.js';
import { waitingDetail } from '../printer-waits.js';
import { canTakeJobs, chooseMember, membersFor, waitingForPool } from '../routing.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';
import { documentOf, readObject } from './documents.js';
import { printerOf, requirePrinterOf } from './printers.js';

export const MAX_TEXT_LENGTH = 1000;
/** The longest a job may wait undelivered, and the furthest it may be scheduled. */
export const MAX_EXPIRE_AFTER_S = 30 * 24 * 60 * 60;
export const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 60 * 60 * 1000;
/** Jobs one `CreateJobs` call may create. */
export const MAX_CREATIONS_PER_CALL = 256;

/** Sealed content, and the key it is sealed to, without the server's key pair. */
const sealingNotConfigured = () =>
  new SpoolError('unavailable', 'sealed content is not configured on this server');

/** The claim a creating request carries, for its job's transaction to complete. */
function claimOf(c: { key: string; claim: string } | undefined): { idempotency?: Claim } {
  if (!c?.key) return {};
  if (!isUuid(c.claim)) throw invalid('the Idempotency-Key claim is not valid', 'Idempotency-Key');
  return { idempotency: { key: c.key, claim: c.claim } };
}

/** The document a new job prints, from whichever source the request names. */
export async function resolveContent(deps: JobsServerDeps, req: CreateJobRequest, orgId: string) {
  const { store, maxDocumentBytes } = deps;
  if (req.inline) {
    checkSize(req.inline.data.length, maxDocumentBytes, 'content');
    const document = Buffer.from(req.inline.data);
    checkDocument(req.inline.contentType, document, 'content.data');
    return { contentType: req.inline.contentType, document };
  }
  if (req.uploadId !== undefined) {
    if (!isUuid(req.uploadId)) throw invalid('upload_id must be an id', 'content.upload_id');
    const upload = await store.getUpload(orgId, req.uploadId);
    return {
      contentType: upload.contentType,
      document: await readObject(deps.documents, uploadName(upload.id)),
    };
  }
  if (req.template) {
    const id = req.template.templateId;
    const template = isUuid(id) ? await store.getTemplate(orgId, id) : undefined;
    if (!template)
      throw invalid('template_id names no template of this organization', 'content.template_id');
    const rendered = renderTemplate(template, req.template.fields);
    checkSize(rendered.document.length, maxDocumentBytes, 'content');
    return rendered;
  }
  if (req.sealed) {
    const keys = deps.serverKeys;
    if (!keys) throw sealingNotConfigured();
    let document: Buffer;
    try {
      document = await openSealed(keys.privateKeys, req.sealed.enc, req.sealed.ciphertext);
    } catch {
      throw invalid(
        'the sealed content cannot be opened: it was changed, or sealed to another key (see GET /v1/public/server-key)',
        'content.ciphertext',
      );
    }
    checkSize(document.length, maxDocumentBytes, 'content');
    checkDocument(req.sealed.contentType, document, 'content.content_type');
    return { contentType: req.sealed.contentType, document };
  }
  if (req.uri) {
    const document = await deps.fetcher.fetch(req.uri.uri, maxDocumentBytes);
    checkDocument(req.uri.contentType, document, 'content.uri');
    return { contentType: req.uri.contentType, document };
  }
  throw invalid('content is required', 'content');
}

/** Where a new job goes: its printer, or the member of its pool chosen now, or none yet. */
type Place = Pick<NewJob, 'printerId' | 'stationId' | 'region' | 'waiting' | 'poolId'>;

/** The printer a job names, as it now is, checked against the job's options. */
async function printerPlace(
  deps: JobsServerDeps,
  req: Pick<NewJob, 'orgId' | 'printerId' | 'options' | 'contentType'>,
  call: ServerUnaryCall<unknown, unknown>,
): Promise<Place> {
  const printer = await printerOf(deps, req.orgId, req.printerId, call);
  if (!printer) throw invalid('printer_id names no printer of this organization', 'printer_id');
  checkOptionsFor(req.options, printer, req.contentType);
  // A printer that cannot print now says so on the job from the start.
  const waiting = waitingDetail(printer);
  return { printerId: printer.id, stationId: printer.stationId, region: printer.region, waiting };
}

/**
 * The member of the pool a job names that takes it now (docs/jobs.md, "Pools and routing"), or
 * none: the job then waits, queued, for the router. A job no member could ever print is refused.
 */
async function poolPlace(
  deps: JobsServerDeps,
  req: Pick<NewJob, 'orgId' | 'options' | 'contentType' | 'hold' | 'scheduleAt'> & {
    poolId: string;
  },
  call: ServerUnaryCall<unknown, unknown>,
): Promise<Place> {
  const pool = await deps.routing.poolOf(req.orgId, req.poolId);
  if (!pool) throw invalid('pool_id names no pool of this organization', 'pool_id');
  // The members as last read, kept honest by the stations service's events (printer-cache.ts).
  const byId = await deps.printers.getMany(req.orgId, pool.printerIds, async (missing) => {
    const printers = missing.map((printerId) => ({ orgId: req.orgId, printerId }));
    return (await deps.stations.printersOf({ printers, stations: [] }, { parent: call })).items;
  });
  const members = pool.printerIds.flatMap((id) => byId.get(id) ?? []);
  const printable = membersFor(pool, members, req);
  const unrouted: Place = {
    printerId: '',
    stationId: '',
    region: members[0]?.region ?? '',
    poolId: pool.id,
  };
  // A held or scheduled job is routed when it is queued.
  const later =
    req.scheduleAt !== undefined && req.scheduleAt.getTime() > deps.clock.now().getTime();
  if (req.hold || later) return unrouted;
  const able = printable.filter(canTakeJobs);
  const queued =
    pool.strategy === 'least_queued' && able.length > 1
      ? await deps.routing.unfinishedCounts(able)
      : new Map<string, number>();
  const to = chooseMember(pool, able, queued);
  if (!to) return { ...unrouted, waiting: waitingForPool(pool) };
  // The jobs created beside this one choose after it, from the same counts (routing-store.ts).
  queued.set(to.id, (queued.get(to.id) ?? 0) + 1);
  return {
    printerId: to.id,
    stationId: to.stationId,
    region: to.region,
    poolId: pool.id,
    waiting: '',
  };
}

/** Where a job naming `req`'s printer or pool goes now (or, for a pool, waits). */
export function placeOf(
  deps: JobsServerDeps,
  req: Pick<
    NewJob,
    'orgId' | 'printerId' | 'poolId' | 'options' | 'hold' | 'scheduleAt' | 'contentType'
  >,
  call: ServerUnaryCall<unknown, unknown>,
): Promise<Place> {
  return req.poolId
    ? poolPlace(deps, { ...req, poolId: req.poolId }, call)
    : printerPlace(deps, req, call);
}

/** Creates a job of `content` for the printer or pool `req` names, as it now is. */
async function createFrom(
  deps: JobsServerDeps,
  req: Omit<NewJob, 'id' | 'stationId' | 'region' | 'contentType' | 'size' | 'sha256'>,
  content: { contentType: string; document: Buffer },
  call: ServerUnaryCall<unknown, unknown>,
) {
  const place = await placeOf(deps, { ...req, contentType: content.contentType }, call);
  const id = randomUUID();
  const inline = content.document.length <= INLINE_DOCUMENT_BYTES;
  // A large document is stored before the job exists; a job whose commit fails leaves an object
  // that nothing refers to, never a job without its document.
  if (!inline) {
    await deps.documents.putBlob(
      { name: documentName(id), description: content.contentType },
      content.document,
    );
  }
  const job = await deps.store.create({
    ...(inline ? { document: content.document } : {}),
    ...req,
    ...place,
    id,
    contentType: content.contentType,
    size: content.document.length,
    sha256: createHash('sha256').update(content.document).digest('hex'),
  });
  return job;
}

/** A new job, as CreateJob asks for it. */
/**
 * What a creation checks of its request before it reads anything (content, printer, pool);
 * answers the organization.
 */
export function checkRequest(deps: Pick<JobsServerDeps, 'clock'>, req: CreateJobRequest): string {
  const orgId = requireUuid(req.orgId, 'organization');
  if (Boolean(req.printerId) === Boolean(req.poolId)) {
    throw invalid('a job names exactly one of printer_id and pool_id', 'printer_id');
  }
  if (req.printerId && !isUuid(req.printerId)) {
    throw invalid('printer_id must be the id of a printer', 'printer_id');
  }
  if (req.poolId && !isUuid(req.poolId))
    throw invalid('pool_id must be the id of a pool', 'pool_id');
  if (req.priority !== 0 && (req.priority < 1 || req.priority > MAX_PRIORITY)) {
    throw invalid(`priority must be 1 to ${MAX_PRIORITY}`, 'priority');
  }
  if (req.title.length > MAX_TEXT_LENGTH) throw invalid('title is too long', 'title');
  if (req.reference.length > MAX_TEXT_LENGTH) throw invalid('reference is too long', 'reference');
  if (req.hold && req.scheduleAt) throw invalid('a job cannot be both held and scheduled', 'hold');
  if (req.expireAfter > MAX_EXPIRE_AFTER_S) {
    throw invalid(`expire_after may be at most ${MAX_EXPIRE_AFTER_S} seconds`, 'expire_after');
  }
  const now = deps.clock.now().getTime();
  if (req.scheduleAt && req.scheduleAt.getTime() > now + MAX_SCHEDULE_AHEAD_MS) {
    throw invalid('schedule_at may be at most a year ahead', 'schedule_at');
  }
  checkPages(req.options?.pages ?? '');
  return orgId;
}

async function createOne(
  deps: JobsServerDeps,
  req: CreateJobRequest,
  call: ServerUnaryCall<unknown, unknown>,
): Promise<Job> {
  const orgId = checkRequest(deps, req);
  const content = await resolveContent(deps, req, orgId);
  return createFrom(
    deps,
    {
      orgId,
      printerId: req.printerId,
      ...(req.poolId ? { poolId: req.poolId } : {}),
      ...(req.priority ? { priority: req.priority } : {}),
      live: req.live,
      title: req.title,
      reference: req.reference,
      options: req.options ?? PrintOptions.fromPartial({}),
      actor: req.actor,
      ...(req.scheduleAt ? { scheduleAt: req.scheduleAt } : {}),
      hold: req.hold,
      expireAfter: req.expireAfter,
      sealed: req.sealed !== undefined,
      ...claimOf(req.idempotency),
    },
    content,
    call,
  );
}

export function creationHandlers(
  deps: JobsServerDeps,
): JobsHandlers<'createJob' | 'createJobs' | 'reprintJob' | 'getServerKey'> {
  return {
    async createJob(req, call) {
      return { job: await createOne(deps, req, call) };
    },

    async createJobs(req, call) {
      if (req.jobs.length > MAX_CREATIONS_PER_CALL) {
        throw invalid(`a call creates at most ${MAX_CREATIONS_PER_CALL} jobs`, 'jobs');
      }
      const callTrace = trace.getSpanContext(context.active())?.traceId;
      const settled = await Promise.allSettled(
        req.jobs.map((item) => {
          // Each job continues the trace of the request that asked for it; the request that sent
          // the call has the call's span in between.
          const asked = contextFrom(item.trace);
          const ctx = trace.getSpanContext(asked)?.traceId === callTrace ? context.active() : asked;
          return context.with(ctx, () =>
            createOne(deps, item.request ?? CreateJobRequest.fromPartial({}), call),
          );
        }),
      );
      return {
        results: settled.map((s) =>
          s.status === 'fulfilled'
            ? { job: s.value }
            : { error: toItemError(s.reason, deps.logger, 'createJobs') },
        ),
      };
    },

    async reprintJob(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      const original = await deps.store.withDocument(
        orgId,
        requireUuid(req.jobId, 'job'),
        'reprint',
      );
      // A pool job's reprint goes to the pool again; any other to the same printer.
      if (!original.poolId) await requirePrinterOf(deps, original, call);
      const document = await documentOf(deps, original);
      const job = await createFrom(
        deps,
        {
          orgId,
          printerId: original.poolId ? '' : original.printerId,
          ...(original.poolId ? { poolId: original.poolId } : {}),
          priority: original.priority,
          live: req.live,
          title: original.title,
          reference: original.reference,
          options: original.options ?? PrintOptions.fromPartial({}),
          actor: req.actor,
          reprintOf: original.id,
          sealed: original.sealed,
          ...claimOf(req.idempotency),
        },
        { contentType: original.contentType, document },
        call,
      );
      return { job };
    },

    async getServerKey() {
      if (!deps.serverKeys) throw sealingNotConfigured();
      return { publicKey: deps.serverKeys.publicKey, algorithm: SEALING_ALGORITHM };
    },
  };
}
