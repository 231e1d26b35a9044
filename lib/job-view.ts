/**
 * The JSON shape of a job, the same in API responses and in webhook events (spec §6: "`job` has
 * the same shape as the job in API responses").
 */
import type { Job } from '../gen/spool/v1/jobs.js';
import type { PrintConfirmation, PrintOptions } from '../gen/spool/v1/stations.js';
import { rfc3339OrNull } from './time.js';

export function optionsJson(options: PrintOptions | undefined) {
  const o = options;
  if (!o) return {};
  return {
    ...(o.copies ? { copies: o.copies } : {}),
    ...(o.duplex ? { duplex: o.duplex } : {}),
    ...(o.color ? { color: o.color } : {}),
    ...(o.paper ? { paper: o.paper } : {}),
    ...(o.tray ? { tray: o.tray } : {}),
    ...(o.pages ? { pages: o.pages } : {}),
    ...(o.fitToPage ? { fit_to_page: true } : {}),
    ...(o.rotate ? { rotate: o.rotate } : {}),
  };
}

/** A job's priority when its creation names none (IPP's job-priority default). */
export const DEFAULT_PRIORITY = 50;
/** The highest priority a job may have; the lowest is 1. */
export const MAX_PRIORITY = 100;

export function jobJson(job: Job) {
  return {
    id: job.id,
    org_id: job.orgId,
    status: job.status,
    status_detail: job.statusDetail,
    reference: job.reference,
    title: job.title,
    printer_id: job.printerId || null,
    station_id: job.stationId || null,
    pool_id: job.poolId || null,
    priority: job.priority || DEFAULT_PRIORITY,
    region: job.region,
    live: job.live,
    options: optionsJson(job.options),
    content_type: job.contentType,
    size: job.size,
    attempt: job.attempt,
    schedule_at: rfc3339OrNull(job.scheduleAt),
    expire_at: rfc3339OrNull(job.expireAt),
    reprint_of: job.reprintOf || null,
    content_deleted: job.contentDeleted,
    confirmation: job.confirmation ? confirmationView(job.confirmation) : null,
    created_at: rfc3339OrNull(job.createdAt),
    updated_at: rfc3339OrNull(job.updatedAt),
  };
}

export type JobJson = ReturnType<typeof jobJson>;

/** A printer's confirmation as the API shows it: `pages` null where the printer counted none. */
export function confirmationView(confirmation: PrintConfirmation) {
  return { level: confirmation.level, pages: confirmation.pages ?? null };
}
