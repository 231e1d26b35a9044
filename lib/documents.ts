/**
 * Document bytes live in the JetStream object store bucket `DOCUMENTS` (DESIGN §2), chunked, under
 * the id of the job that owns them; databases keep only their metadata.
 */
import { type ObjectStore, Objm, StorageType } from '@nats-io/obj';
import type { NatsConnection } from './bus.js';

export const DOCUMENTS_BUCKET = 'DOCUMENTS';

/** Opens the bucket, creating it the first time. */
export async function openDocuments(nc: NatsConnection): Promise<ObjectStore> {
  return new Objm(nc).create(DOCUMENTS_BUCKET, { storage: StorageType.File });
}
