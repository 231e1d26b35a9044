/** CreateUpload: a document sent on its own, for jobs to print later. */
import { createHash, randomUUID } from 'node:crypto';
import { requireUuid } from '../../../lib/ids.js';
import { checkDocument, checkSize } from '../content.js';
import { uploadName } from '../job-rows.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

export function uploadHandlers(deps: JobsServerDeps): JobsHandlers<'createUpload'> {
  const { store, documents } = deps;
  return {
    async createUpload(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      checkSize(req.data.length, deps.maxDocumentBytes, 'body');
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
  };
}
