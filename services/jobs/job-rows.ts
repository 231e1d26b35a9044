/**
 * The `jobs` table as the service reads and writes it: the row, the columns a read names, the row
 * as a {@link Job}, and the one place a `job_events` row is inserted. Every other module of the
 * store builds on these; this one imports none of them.
 */
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { PrintConfirmation, PrintOptions } from '../../gen/spool/v1/stations.js';
import { SpoolError } from '../../lib/errors.js';
import { columns, type WriteBatch } from '../../lib/sql.js';
import type { TraceCarrier } from '../../lib/tracing.js';
import type { Claim } from './idempotency.js';
import type { JobStatus } from './machine.js';

/** The jobs service's outbox, which its relay publishes from. */
export const OUTBOX_TABLE = 'jobs_outbox';

/** Documents up to this size are kept with their job, and travel in its dispatch message. */
export const INLINE_DOCUMENT_BYTES = 64 * 1024;

/** The document object of a job, and of an upload, in the DOCUMENTS bucket. */
export const documentName = (jobId: string) => jobId;
export const uploadName = (uploadId: string) => `upload-${uploadId}`;

export interface JobRow {
  id: string;
  org_id: string;
  /** NULL while a pool job waits for a member. */
  printer_id: string | null;
  station_id: string | null;
  status: JobStatus;
  status_detail: string;
  reference: string;
  title: string;
  live: boolean;
  options: PrintOptions;
  content_type: string;
  size: string;
  sha256: string;
  attempt: number;
  version: number;
  schedule_at: Date | null;
  expire_after: number;
  expire_at: Date | null;
  reprint_of: string | null;
  document_deleted_at: Date | null;
  sealed: boolean;
  trace_context: TraceCarrier;
  region: string;
  document_inline: boolean;
  pool_id: string | null;
  priority: number;
  /** Set once printed: what the station's printer confirmed. */
  confirmation: PrintConfirmation | null;
  created_at: Date;
  updated_at: Date;
}

// Columns are named rather than `*`: statements are prepared (lib/db.ts), and a prepared `*` fails
// once a migration adds a column.
/** The columns of a {@link JobRow}, for a SELECT of `jobs`. */
export const JOB_COLUMNS = `id, org_id, printer_id, station_id, status, status_detail, reference, title,
  live, options, content_type, size, sha256, attempt, version, schedule_at, expire_after,
  expire_at, reprint_of, document_deleted_at, sealed, trace_context, region, pool_id, priority,
  confirmation, created_at, updated_at, document IS NOT NULL AS document_inline`;

/**
 * The row as the API's {@link Job}. Spelled out rather than renamed by `camelRow`: every job passes
 * here several times on its way, and most fields are not plain renames.
 */
export function toJob(row: JobRow): Job {
  return {
    id: row.id,
    orgId: row.org_id,
    printerId: row.printer_id ?? '',
    stationId: row.station_id ?? '',
    status: row.status,
    statusDetail: row.status_detail,
    reference: row.reference,
    title: row.title,
    live: row.live,
    options: row.options,
    contentType: row.content_type,
    size: Number(row.size),
    sha256: row.sha256,
    attempt: row.attempt,
    scheduleAt: row.schedule_at ?? undefined,
    expireAt: row.expire_at ?? undefined,
    reprintOf: row.reprint_of ?? '',
    contentDeleted: row.document_deleted_at !== null,
    traceContext: row.trace_context,
    region: row.region,
    documentInline: row.document_inline,
    confirmation: row.confirmation ?? undefined,
    poolId: row.pool_id ?? '',
    priority: row.priority,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The refusal of a job's document once retention deleted it (the job itself is kept). */
export function documentPastRetention(): SpoolError {
  return new SpoolError('content_deleted', 'the job’s document is past retention and was deleted');
}

export interface NewJob {
  id: string;
  orgId: string;
  /** '' for a pool job no member can take yet. */
  printerId: string;
  stationId: string;
  /** The station's home region (the organization's first, for a pool job not yet routed). */
  region: string;
  /** The pool a pool job was created for. */
  poolId?: string;
  /** 1 to 100 (default 50). */
  priority?: number;
  live: boolean;
  title: string;
  reference: string;
  options: PrintOptions;
  contentType: string;
  size: number;
  sha256: string;
  actor: string;
  /** The job starts `scheduled` until this time, when set. */
  scheduleAt?: Date;
  /** The job starts `held`. */
  hold?: boolean;
  /** Seconds it may wait undelivered; 0 for ever. */
  expireAfter?: number;
  reprintOf?: string;
  /** The content came sealed: it is never served back (a reprint of it is sealed too). */
  sealed?: boolean;
  /** The request's Idempotency-Key claim, completed with the job in its transaction. */
  idempotency?: Claim;
  /** The document, when it is kept with the job (at most {@link INLINE_DOCUMENT_BYTES}). */
  document?: Buffer;
  /** Why a queued job waits from the start, when its printer cannot take it (printer-waits.ts). */
  waiting?: string;
}

/** The SQL types of a `job_events` row's columns, in the order its INSERT names them. */
const JOB_EVENT_TYPES = [
  'UUID',
  'UUID',
  'UUID',
  'INT4',
  'TIMESTAMPTZ',
  'TEXT',
  'TEXT',
  'TEXT',
  'TEXT',
  'JSONB',
] as const;

/**
 * A `job_events` row: its id, job, organization, number (the job's version it leaves), time,
 * status, detail, actor, region and, for a printed one, the printer's confirmation (JSON).
 */
export type JobEventValues = [
  id: string,
  jobId: string,
  orgId: string,
  seq: number,
  at: Date,
  status: string,
  detail: string,
  actor: string,
  region: string,
  confirmation: string | null,
];

/** Adds to `batch` the INSERT of one `job_events` row for each of `items`. */
export function addJobEvents<T>(
  batch: WriteBatch,
  items: readonly T[],
  event: (item: T, index: number) => JobEventValues,
): void {
  batch.add(
    `INSERT INTO job_events (id, job_id, org_id, seq, at, status, detail, actor, region,
         confirmation)
       ${batch.rows(columns(items, event), JOB_EVENT_TYPES)}`,
  );
}
