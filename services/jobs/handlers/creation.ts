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
import { open as openSealed, SEALING_ALGORITHM } from '../../../lib/sealing.js';
import { contextFrom } from '../../../lib/tracing.js';
import { checkDocument, checkSize, renderTemplate } from '../content.js';
import type { Claim } from '../idempotency.js';
import { documentName, INLINE_DOCUMENT_BYTES, type NewJob, uploadName } from '../job-rows.js';
import { checkOptionsFor, checkPages } from '../options.js';
import { waitingDetail } from '../printer-waits.js';
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
async function resolveContent(deps: JobsServerDeps, req: CreateJobRequest, orgId: string) {
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

/** Creates a job of `content` for the printer `req` names, as it now is. */
async function createFrom(
  deps: JobsServerDeps,
  req: Omit<NewJob, 'id' | 'stationId' | 'region' | 'contentType' | 'size' | 'sha256'>,
  content: { contentType: string; document: Buffer },
  call: ServerUnaryCall<unknown, unknown>,
) {
  const printer = await printerOf(deps, req.orgId, req.printerId, call);
  if (!printer) throw invalid('printer_id names no printer of this organization', 'printer_id');
  checkOptionsFor(req.options, printer);
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
    id,
    printerId: printer.id,
    stationId: printer.stationId,
    region: printer.region,
    contentType: content.contentType,
    size: content.document.length,
    sha256: createHash('sha256').update(content.document).digest('hex'),
    // A printer that cannot print now says so on the job from the start.
    waiting: waitingDetail(printer),
  });
  return job;
}

/** A new job, as CreateJob asks for it. */
async function createOne(
  deps: JobsServerDeps,
  req: CreateJobRequest,
  call: ServerUnaryCall<unknown, unknown>,
): Promise<Job> {
  const orgId = requireUuid(req.orgId, 'organization');
  if (!isUuid(req.printerId)) throw invalid('printer_id must be the id of a printer', 'printer_id');
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
  const content = await resolveContent(deps, req, orgId);
  return createFrom(
    deps,
    {
      orgId,
      printerId: req.printerId,
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
      await requirePrinterOf(deps, original, call);
      const document = await documentOf(deps, original);
      const job = await createFrom(
        deps,
        {
          orgId,
          printerId: original.printerId,
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
