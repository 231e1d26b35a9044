/**
 * Document bytes live in the JetStream object store bucket `DOCUMENTS` (DESIGN §2), chunked, under
 * the id of the job that owns them; databases keep only their metadata.
 */
import { type ObjectStore, Objm, StorageType } from '@nats-io/obj';
import { type BusLayout, bucketPlacement, type NatsConnection, SINGLE_REGION } from './bus.js';
import { retryTransient } from './transient.js';

export const DOCUMENTS_BUCKET = 'DOCUMENTS';

/**
 * Opens the bucket, creating it the first time. Documents are the installation's, not a region's:
 * a job created in one region may print in another.
 */
export async function openDocuments(
  nc: NatsConnection,
  layout: BusLayout = SINGLE_REGION,
): Promise<ObjectStore> {
  return retryTransient(() =>
    new Objm(nc).create(DOCUMENTS_BUCKET, {
      storage: StorageType.File,
      ...bucketPlacement(layout),
    }),
  );
}
