/**
 * Agent release tarballs live in the JetStream object store bucket `AGENT_RELEASES`, under
 * `<version>/<file>` (DESIGN "Agent releases"); the stations service keeps the signed manifests.
 */
import { type ObjectStore, Objm, StorageType } from '@nats-io/obj';
import { type BusLayout, bucketPlacement, type NatsConnection, SINGLE_REGION } from './bus.js';
import { retryTransient } from './transient.js';

export const AGENT_RELEASES_BUCKET = 'AGENT_RELEASES';

/** Opens the bucket, creating it the first time; placed as the documents' bucket is. */
export function openAgentReleases(
  nc: NatsConnection,
  layout: BusLayout = SINGLE_REGION,
): Promise<ObjectStore> {
  return retryTransient(() =>
    new Objm(nc).create(AGENT_RELEASES_BUCKET, {
      storage: StorageType.File,
      ...bucketPlacement(layout),
    }),
  );
}

/** `open`, called once: later calls share its answer, and a failed open is tried again. */
export function lazily<T>(open: () => Promise<T>): () => Promise<T> {
  let opening: Promise<T> | undefined;
  return () => {
    if (!opening) {
      const attempt = open();
      opening = attempt;
      attempt.catch(() => {
        if (opening === attempt) opening = undefined;
      });
    }
    return opening;
  };
}
