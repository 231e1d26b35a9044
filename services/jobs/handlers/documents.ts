/**
 * A job's document, to print it again or to serve it back: kept with the job or in the object
 * store. Answers GetJobDocument (the stations service, re-offering a job), GetJobContent and
 * GetJobPreview.
 */
import type { ObjectStore } from '@nats-io/obj';
import type { Job } from '../../../gen/spool/v1/jobs.js';
import { notFound, SpoolError } from '../../../lib/errors.js';
import { requireUuid } from '../../../lib/ids.js';
import type { JobQueries } from '../job-queries.js';
import { documentName } from '../job-rows.js';
import { createPdfPreviews } from '../previews.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

/** How much text a text preview shows. */
export const TEXT_PREVIEW_BYTES = 64 * 1024;

/** A document whose object, or inline bytes, went meanwhile (retention, a purge). */
const noLongerStored = () => new SpoolError('content_deleted', 'the document is no longer stored');

/** The object `name` of the DOCUMENTS bucket; 410 once it is gone. */
export async function readObject(documents: ObjectStore, name: string): Promise<Buffer> {
  const data = await documents.getBlob(name);
  if (!data) throw noLongerStored();
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** A job's document, kept with it or in the object store. */
export async function documentOf(
  deps: { store: Pick<JobQueries, 'inlineDocument'>; documents: ObjectStore },
  job: Job,
): Promise<Buffer> {
  if (!job.documentInline) return readObject(deps.documents, documentName(job.id));
  const data = await deps.store.inlineDocument(job.orgId, job.id);
  if (!data) throw noLongerStored();
  return data;
}

export function documentHandlers(
  deps: JobsServerDeps,
): JobsHandlers<'getJobDocument' | 'getJobContent' | 'getJobPreview'> {
  const { store } = deps;
  const previews = createPdfPreviews(deps.logger, deps.previews);
  return {
    async getJobDocument(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const jobId = requireUuid(req.jobId, 'job');
      // A re-offer asks for a document kept with its job: one read. Anything else (a document in
      // the object store, one past retention) goes the long way, which says why.
      const inline = await store.inlineDocument(orgId, jobId);
      if (inline) return { data: inline };
      return { data: await documentOf(deps, await store.withDocument(orgId, jobId, 'print')) };
    },

    async getJobContent(req) {
      const job = await store.withDocument(
        requireUuid(req.orgId, 'organization'),
        requireUuid(req.jobId, 'job'),
        'serve',
      );
      return {
        contentType: job.contentType,
        data: await documentOf(deps, job),
      };
    },

    async getJobPreview(req) {
      const job = await store.withDocument(
        requireUuid(req.orgId, 'organization'),
        requireUuid(req.jobId, 'job'),
        'serve',
      );
      if (job.contentType === 'application/pdf') {
        const png = await previews.firstPage(job.id, () => documentOf(deps, job));
        return { contentType: 'image/png', data: png };
      }
      if (job.contentType === 'text/plain') {
        return {
          contentType: 'text/plain; charset=utf-8',
          data: (await documentOf(deps, job)).subarray(0, TEXT_PREVIEW_BYTES),
        };
      }
      throw notFound('raw documents have no preview; GET …/content has the bytes');
    },
  };
}
