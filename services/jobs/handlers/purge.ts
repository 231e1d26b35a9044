/**
 * PurgeOrg: a deleted organization's jobs, uploads and their documents, templates, test-print
 * counts and Idempotency-Keys removed a batch a call, until it answers `done`.
 */
import { requireUuid } from '../../../lib/ids.js';
import { documentName, uploadName } from '../job-rows.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

/** Jobs, uploads, and Idempotency-Keys, one `PurgeOrg` call deletes at most. */
export const PURGE_BATCH = 500;
/** Stored documents a `PurgeOrg` call deletes from the object store at once. */
const PURGE_OBJECTS_AT_ONCE = 32;

export function purgeHandlers({
  store,
  documents,
}: Pick<JobsServerDeps, 'store' | 'documents'>): JobsHandlers<'purgeOrg'> {
  return {
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
