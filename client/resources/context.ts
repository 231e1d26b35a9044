/**
 * What the resources of `spool.jobs`, `spool.pools` and the rest reach of the client they belong
 * to. Declared here rather than taken as `Spool` itself, whose module builds the resources, so that
 * no module of the client imports one that imports it back.
 */
import type { Client } from 'openapi-fetch';
import type { Answer } from '../calls.js';
import type { paths } from '../generated/schema.js';
import type { JobSource } from '../wait.js';

/** The part of a `Spool` a resource calls through; every `Spool` is one. */
export interface ResourceContext {
  /** The typed openapi-fetch client, with the key, the retries and the idempotency keys. */
  readonly api: Client<paths>;
  /** How the client learns a job's changes. */
  readonly jobSource: JobSource;
  /** The key's organization id. */
  org(): Promise<string>;
  /** Throws the typed error of a failed answer; returns the data of a successful one. */
  unwrap<T>(call: Promise<Answer<T>>): Promise<T>;
}
