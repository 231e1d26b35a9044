/**
 * The jobs gRPC service: creates jobs from every kind of content (storing the document in the
 * object store first), answers job queries, applies the API's actions through the state machine,
 * and keeps uploads, templates and Idempotency-Key records.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ServerUnaryCall } from '@grpc/grpc-js';
import type { ObjectStore } from '@nats-io/obj';
import { context, trace } from '@opentelemetry/api';
import { CreateJobRequest, type Job, type JobsServiceServer } from '../../gen/spool/v1/jobs.js';
import {
  type Printer,
  PrintOptions,
  type StationsServiceClient,
} from '../../gen/spool/v1/stations.js';
import { conflict, invalid, notFound, SpoolError } from '../../lib/errors.js';
import { type AsyncClient, type AsyncServer, toItemError } from '../../lib/grpc.js';
import { isUuid, requireUuid } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { pageLimit } from '../../lib/paging.js';
import { open as openSealed, SEALING_ALGORITHM } from '../../lib/sealing.js';
import { contextFrom } from '../../lib/tracing.js';
import { checkDocument, checkTemplate, renderTemplate } from './content.js';
import type { Fetcher } from './fetch.js';
import type { Claim, IdempotencyStore } from './idempotency.js';
import { documentName, INLINE_DOCUMENT_BYTES, type NewJob, uploadName } from './job-rows.js';
import { isJobStatus, JOB_STATUSES } from './machine.js';
import { checkOptionsFor, checkPages } from './options.js';
import { createPdfPreviews, type PreviewLimits } from './previews.js';
import type { PrinterCache } from './printer-cache.js';
import { waitingDetail } from './printer-waits.js';
import type { JobStore } from './store.js';

export const MAX_TEXT_LENGTH = 1000;
/** The longest a job may wait undelivered, and the furthest it may be scheduled. */
export const MAX_EXPIRE_AFTER_S = 30 * 24 * 60 * 60;
export const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 60 * 60 * 1000;
/** Jobs one `CreateJobs` call may create. */
export const MAX_CREATIONS_PER_CALL = 256;
/** Stations one `PendingJobsForStations` call may ask about. */
export const MAX_STATIONS_PER_CALL = 1000;
/** How much text a text preview shows. */
export const TEXT_PREVIEW_BYTES = 64 * 1024;
/** Jobs, uploads, and Idempotency-Keys, one `PurgeOrg` call deletes at most. */
export const PURGE_BATCH = 500;
/** Stored documents a `PurgeOrg` call deletes from the object store at once. */
const PURGE_OBJECTS_AT_ONCE = 32;

export interface JobsServerDeps {
  store: JobStore;
  idempotency: IdempotencyStore;
  documents: ObjectStore;
  stations: AsyncClient<StationsServiceClient>;
  /** Largest document accepted, in bytes. */
  maxDocumentBytes: number;
  /** Bytes of one organization's uploads kept at once. */
  uploadQuotaBytes: number;
  clock: { now(): Date };
  /** The server key pair for sealed content; undefined when sealing is not configured. */
  serverKeys?: ServerKeys;
  /** Fetches `pdf_uri` and `raw_uri` content. */
  fetcher: Fetcher;
  /** The printers jobs are created for, as last read from the stations service. */
  printers: PrinterCache;
  logger: Logger;
  /** How many PDF previews are made at once, wait, and are kept (previews.ts). */
  previews?: PreviewLimits;
}

export interface ServerKeys {
  /** base64url of the current public key. */
  publicKey: string;
  /** The current private key first, then earlier ones still accepted after a rotation. */
  privateKeys: Buffer[];
}

async function readObject(documents: ObjectStore, name: string): Promise<Buffer> {
  const data = await documents.getBlob(name);
  if (!data) throw new SpoolError('content_deleted', 'the document is no longer stored');
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The claim a creating request carries, for its job's transaction to complete. */
function claimOf(c: { key: string; claim: string } | undefined): { idempotency?: Claim } {
  if (!c?.key) return {};
  if (!isUuid(c.claim)) throw invalid('the Idempotency-Key claim is not valid', 'Idempotency-Key');
  return { idempotency: { key: c.key, claim: c.claim } };
}

export function createJobsServer(deps: JobsServerDeps): AsyncServer<JobsServiceServer> {
  const { store, documents } = deps;
  const previews = createPdfPreviews(deps.logger, deps.previews);

  function checkSize(size: number, param: string): void {
    if (size > deps.maxDocumentBytes) {
      throw new SpoolError(
        'payload_too_large',
        `the document is larger than ${deps.maxDocumentBytes} bytes`,
        {
          param,
        },
      );
    }
  }

  /** The document a new job prints, from whichever source the request names. */
  async function resolveContent(req: CreateJobRequest, orgId: string) {
    if (req.inline) {
      checkSize(req.inline.data.length, 'content');
      const document = Buffer.from(req.inline.data);
      checkDocument(req.inline.contentType, document, 'content.data');
      return { contentType: req.inline.contentType, document };
    }
    if (req.uploadId !== undefined) {
      if (!isUuid(req.uploadId)) throw invalid('upload_id must be an id', 'content.upload_id');
      const upload = await store.getUpload(orgId, req.uploadId);
      return {
        contentType: upload.contentType,
        document: await readObject(documents, uploadName(upload.id)),
      };
    }
    if (req.template) {
      const id = req.template.templateId;
      const template = isUuid(id) ? await store.getTemplate(orgId, id) : undefined;
      if (!template)
        throw invalid('template_id names no template of this organization', 'content.template_id');
      const rendered = renderTemplate(template, req.template.fields);
      checkSize(rendered.document.length, 'content');
      return rendered;
    }
    if (req.sealed) {
      const keys = deps.serverKeys;
      if (!keys)
        throw new SpoolError('unavailable', 'sealed content is not configured on this server');
      let document: Buffer;
      try {
        document = await openSealed(keys.privateKeys, req.sealed.enc, req.sealed.ciphertext);
      } catch {
        throw invalid(
          'the sealed content cannot be opened: it was changed, or sealed to another key (see GET /v1/public/server-key)',
          'content.ciphertext',
        );
      }
      checkSize(document.length, 'content');
      checkDocument(req.sealed.contentType, document, 'content.content_type');
      return { contentType: req.sealed.contentType, document };
    }
    if (req.uri) {
      const document = await deps.fetcher.fetch(req.uri.uri, deps.maxDocumentBytes);
      checkDocument(req.uri.contentType, document, 'content.uri');
      return { contentType: req.uri.contentType, document };
    }
    throw invalid('content is required', 'content');
  }

  /** A job's document, kept with it or in the object store. */
  async function documentOf(job: Job): Promise<Buffer> {
    if (!job.documentInline) return readObject(documents, documentName(job.id));
    const data = await store.inlineDocument(job.orgId, job.id);
    if (!data) throw new SpoolError('content_deleted', 'the document is no longer stored');
    return data;
  }

  /** The organization's printer, from the cache or the stations service; undefined if none. */
  async function printerOf(
    orgId: string,
    printerId: string,
    call: ServerUnaryCall<unknown, unknown>,
  ): Promise<Printer | undefined> {
    try {
      return await deps.printers.get(
        orgId,
        printerId,
        async () =>
          (await deps.stations.getPrinter({ orgId, printerId }, { parent: call })).printer,
      );
    } catch (err) {
      if ((err as SpoolError).code === 'not_found') return undefined;
      throw err;
    }
  }

  /** Retry and reprint send a job to its printer again, which must still be there. */
  async function requirePrinterOf(job: Job, call: ServerUnaryCall<unknown, unknown>) {
    if (!(await printerOf(job.orgId, job.printerId, call))) {
      throw conflict(
        "this job's printer was deleted (or its station): send a new job to another printer",
      );
    }
  }

  async function createFrom(
    req: Omit<NewJob, 'id' | 'stationId' | 'region' | 'contentType' | 'size' | 'sha256'>,
    content: { contentType: string; document: Buffer },
    call: ServerUnaryCall<unknown, unknown>,
  ) {
    const printer = await printerOf(req.orgId, req.printerId, call);
    if (!printer) throw invalid('printer_id names no printer of this organization', 'printer_id');
    checkOptionsFor(req.options, printer);
    const id = randomUUID();
    const inline = content.document.length <= INLINE_DOCUMENT_BYTES;
    // A large document is stored before the job exists; a job whose commit fails leaves an object
    // that nothing refers to, never a job without its document.
    if (!inline) {
      await documents.putBlob(
        { name: documentName(id), description: content.contentType },
        content.document,
      );
    }
    const job = await store.create({
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
    req: CreateJobRequest,
    call: ServerUnaryCall<unknown, unknown>,
  ): Promise<Job> {
    const orgId = requireUuid(req.orgId, 'organization');
    if (!isUuid(req.printerId))
      throw invalid('printer_id must be the id of a printer', 'printer_id');
    if (req.title.length > MAX_TEXT_LENGTH) throw invalid('title is too long', 'title');
    if (req.reference.length > MAX_TEXT_LENGTH) throw invalid('reference is too long', 'reference');
    if (req.hold && req.scheduleAt)
      throw invalid('a job cannot be both held and scheduled', 'hold');
    if (req.expireAfter > MAX_EXPIRE_AFTER_S) {
      throw invalid(`expire_after may be at most ${MAX_EXPIRE_AFTER_S} seconds`, 'expire_after');
    }
    const now = deps.clock.now().getTime();
    if (req.scheduleAt && req.scheduleAt.getTime() > now + MAX_SCHEDULE_AHEAD_MS) {
      throw invalid('schedule_at may be at most a year ahead', 'schedule_at');
    }
    checkPages(req.options?.pages ?? '');
    const content = await resolveContent(req, orgId);
    return createFrom(
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

  return {
    async createJob(req, call) {
      return { job: await createOne(req, call) };
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
            createOne(item.request ?? CreateJobRequest.fromPartial({}), call),
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
      const original = await store.withDocument(orgId, requireUuid(req.jobId, 'job'), 'reprint');
      await requirePrinterOf(original, call);
      const document = await documentOf(original);
      const job = await createFrom(
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

    async getJob(req) {
      return store.get(requireUuid(req.orgId, 'organization'), requireUuid(req.jobId, 'job'));
    },

    async getJobDocument(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const jobId = requireUuid(req.jobId, 'job');
      // A re-offer asks for a document kept with its job: one read. Anything else (a document in
      // the object store, one past retention) goes the long way, which says why.
      const inline = await store.inlineDocument(orgId, jobId);
      if (inline) return { data: inline };
      return { data: await documentOf(await store.withDocument(orgId, jobId, 'print')) };
    },

    async getJobContent(req) {
      const job = await store.withDocument(
        requireUuid(req.orgId, 'organization'),
        requireUuid(req.jobId, 'job'),
        'serve',
      );
      return {
        contentType: job.contentType,
        data: await documentOf(job),
      };
    },

    async getJobPreview(req) {
      const job = await store.withDocument(
        requireUuid(req.orgId, 'organization'),
        requireUuid(req.jobId, 'job'),
        'serve',
      );
      if (job.contentType === 'application/pdf') {
        const png = await previews.firstPage(job.id, () => documentOf(job));
        return { contentType: 'image/png', data: png };
      }
      if (job.contentType === 'text/plain') {
        return {
          contentType: 'text/plain; charset=utf-8',
          data: (await documentOf(job)).subarray(0, TEXT_PREVIEW_BYTES),
        };
      }
      throw notFound('raw documents have no preview; GET …/content has the bytes');
    },

    async listJobs(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      for (const status of req.statuses) {
        if (!isJobStatus(status)) {
          throw invalid(
            `unknown status ${JSON.stringify(status)}; statuses are ${JOB_STATUSES.join(', ')}`,
            'status',
          );
        }
      }
      for (const [param, value] of [
        ['printer_id', req.printerId],
        ['station_id', req.stationId],
      ] as const) {
        if (value && !isUuid(value)) throw invalid(`${param} must be an id`, param);
      }
      return store.list(
        orgId,
        {
          statuses: req.statuses,
          reference: req.reference,
          printerId: req.printerId,
          stationId: req.stationId,
          createdAfter: req.createdAfter,
          createdBefore: req.createdBefore,
        },
        pageLimit(req.limit),
        req.cursor,
      );
    },

    async cancelJob(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const { job } = await store.apply(orgId, requireUuid(req.jobId, 'job'), 'cancel', {
        actor: req.actor,
      });
      return { job };
    },

    async retryJob(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      const jobId = requireUuid(req.jobId, 'job');
      const { job: current } = await store.get(orgId, jobId);
      await requirePrinterOf(current, call);
      // A failed test job retried prints again: one more of the day's test prints (spec §8).
      // A held one was counted when it was created.
      const day =
        !current.live && current.status === 'failed'
          ? await store.countTestPrint(orgId)
          : undefined;
      try {
        const { job } = await store.apply(orgId, jobId, 'retry', { actor: req.actor });
        return { job };
      } catch (err) {
        if (day) await store.uncountTestPrint(orgId, day);
        throw err;
      }
    },

    async pendingJobs(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return { items: await store.pending(orgId, requireUuid(req.stationId, 'station')) };
    },

    async pendingJobsForStations(req) {
      // A malformed pair names no station: it is answered with no jobs, not failed with the rest.
      const asked = req.stations.map((s) => ({ orgId: s.orgId, stationId: s.stationId }));
      const valid = asked.filter((s) => isUuid(s.orgId) && isUuid(s.stationId));
      if (valid.length > MAX_STATIONS_PER_CALL) {
        throw invalid(`at most ${MAX_STATIONS_PER_CALL} stations per call`, 'stations');
      }
      const byStation = new Map<string, Job[]>();
      for (const job of await store.pendingForStations(valid)) {
        const key = `${job.orgId}/${job.stationId}`;
        const items = byStation.get(key);
        if (items) items.push(job);
        else byStation.set(key, [job]);
      }
      return {
        stations: asked.map((s) => ({
          ...s,
          items: byStation.get(`${s.orgId}/${s.stationId}`.toLowerCase()) ?? [],
        })),
      };
    },

    async createUpload(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      checkSize(req.data.length, 'body');
      const data = Buffer.from(req.data);
      checkDocument(req.contentType, data, 'body');
      // Its row first, within the organization's quota; the bytes once it is counted.
      const upload = await store.createUpload(
        {
          id: randomUUID(),
          orgId,
          contentType: req.contentType,
          size: data.length,
          sha256: createHash('sha256').update(data).digest('hex'),
        },
        deps.uploadQuotaBytes,
      );
      try {
        await documents.putBlob(
          { name: uploadName(upload.id), description: req.contentType },
          data,
        );
      } catch (err) {
        await store.dropUpload(orgId, upload.id).catch(() => {});
        throw err;
      }
      return { upload };
    },

    async createTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      checkTemplate(req.kind, req.body, req.fields);
      const template = await store.createTemplate({
        orgId,
        name: req.name,
        kind: req.kind,
        body: req.body,
        fields: req.fields,
      });
      return { template };
    },

    async listTemplates(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return store.listTemplates(orgId, pageLimit(req.limit), req.cursor);
    },

    async getTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const template = await store.getTemplate(orgId, requireUuid(req.templateId, 'template'));
      if (!template) throw notFound('no such template');
      return { template };
    },

    async updateTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const current = await store.getTemplate(orgId, requireUuid(req.templateId, 'template'));
      if (!current) throw notFound('no such template');
      const next = {
        id: current.id,
        orgId,
        name: req.name ?? current.name,
        kind: req.kind ?? current.kind,
        body: req.body ?? current.body,
        fields: req.setFields ? req.fields : current.fields,
      };
      checkTemplate(next.kind, next.body, next.fields);
      return { template: await store.updateTemplate(next) };
    },

    async deleteTemplate(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      await store.deleteTemplate(orgId, requireUuid(req.templateId, 'template'));
      return {};
    },

    async failPrinterJobs(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const stationId = requireUuid(req.stationId, 'station');
      if (req.printerIds.length > 10_000) throw invalid('at most 10000 printer ids', 'printer_ids');
      for (const id of req.printerIds) requireUuid(id, 'printer');
      const failed = await store.failPrinterJobs(orgId, stationId, req.printerIds, {
        actor: req.actor,
        detail: req.detail.slice(0, 500) || 'the printer was deleted',
      });
      return { failed };
    },

    async claimIdempotencyKey(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return deps.idempotency.claim(orgId, req.key, req.fingerprint);
    },

    async completeIdempotencyKey(req) {
      await deps.idempotency.complete(
        requireUuid(req.orgId, 'organization'),
        { key: req.key, claim: requireUuid(req.claim, 'claim') },
        req.status,
        Buffer.from(req.body),
      );
      return {};
    },

    async getServerKey() {
      if (!deps.serverKeys)
        throw new SpoolError('unavailable', 'sealed content is not configured on this server');
      return { publicKey: deps.serverKeys.publicKey, algorithm: SEALING_ALGORITHM };
    },

    async releaseIdempotencyKey(req) {
      await deps.idempotency.release(requireUuid(req.orgId, 'organization'), {
        key: req.key,
        claim: requireUuid(req.claim, 'claim'),
      });
      return {};
    },

    async purgeOrg(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const { jobs, uploads } = await store.orgDataToPurge(orgId, PURGE_BATCH);
      // The objects go first: a failure before the rows go deletes them again, harmlessly.
      const objects = [
        ...jobs.filter((j) => j.stored).map((j) => documentName(j.id)),
        ...uploads.filter((u) => u.stored).map((u) => uploadName(u.id)),
      ];
      for (let i = 0; i < objects.length; i += PURGE_OBJECTS_AT_ONCE) {
        await Promise.all(
          objects.slice(i, i + PURGE_OBJECTS_AT_ONCE).map((name) => documents.delete(name)),
        );
      }
      return store.purgeOrgData(
        orgId,
        jobs.map((j) => j.id),
        uploads.map((u) => u.id),
        jobs.length < PURGE_BATCH && uploads.length < PURGE_BATCH,
        PURGE_BATCH,
      );
    },
  };
}
