/**
 * What the jobs gRPC handlers are built from, and the shape of a group of them: each file of this
 * folder answers the calls of one role, and server.ts puts the groups together.
 */
import type { ObjectStore } from '@nats-io/obj';
import type { JobsServiceServer } from '../../../gen/spool/v1/jobs.js';
import type { StationsServiceClient } from '../../../gen/spool/v1/stations.js';
import type { AsyncClient, AsyncServer } from '../../../lib/grpc.js';
import type { Logger } from '../../../lib/logger.js';
import type { Fetcher } from '../fetch.js';
import type { IdempotencyStore } from '../idempotency.js';
import type { PreviewLimits } from '../previews.js';
import type { PrinterCache } from '../printer-cache.js';
import type { RoutingStore } from '../routing-store.js';
import type { JobStore } from '../store.js';
import type { UsageStore } from '../usage-store.js';

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
  /** The pools and their members, as routing reads them. */
  routing: RoutingStore;
  /** Usage per organization and day, as the usage rollup keeps it. */
  usage: UsageStore;
  /** Asks the router for a round soon (a pool job waits for a member). */
  nudgeRouter?: () => void;
}

export interface ServerKeys {
  /** base64url of the current public key. */
  publicKey: string;
  /** The current private key first, then earlier ones still accepted after a rotation. */
  privateKeys: Buffer[];
}

/** The handlers of the calls named `K`. */
export type JobsHandlers<K extends keyof AsyncServer<JobsServiceServer>> = Pick<
  AsyncServer<JobsServiceServer>,
  K
>;
