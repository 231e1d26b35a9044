/** The JSON shapes of API resources, made from the gRPC messages. */
import type { Org, Settings } from '../gen/spool/v1/accounts.js';
import type { Job, JobEvent, Template, Upload } from '../gen/spool/v1/jobs.js';
import { confirmationView, jobJson } from '../lib/job-view.js';
import { rfc3339OrNull } from '../lib/time.js';

export {
  adminStationView,
  keyView,
  locationView,
  printerView,
  stationView,
} from '../lib/resource-views.js';

export function orgView(org: Org | undefined) {
  if (!org) throw new Error('missing org in response');
  return {
    id: org.id,
    name: org.name,
    created_at: rfc3339OrNull(org.createdAt),
    deleting_since: rfc3339OrNull(org.deletingSince),
    parent_id: org.parentId === '' ? null : org.parentId,
    reference: org.reference,
  };
}

export function jobView(job: Job | undefined) {
  if (!job) throw new Error('missing job in response');
  return jobJson(job);
}

export function eventView(event: JobEvent) {
  return {
    at: rfc3339OrNull(event.at),
    status: event.status,
    detail: event.detail,
    actor: event.actor,
    ...(event.confirmation ? { confirmation: confirmationView(event.confirmation) } : {}),
  };
}

export function uploadView(upload: Upload | undefined) {
  if (!upload) throw new Error('missing upload in response');
  return {
    id: upload.id,
    content_type: upload.contentType,
    size: upload.size,
    sha256: upload.sha256,
    created_at: rfc3339OrNull(upload.createdAt),
  };
}

export function templateView(template: Template | undefined) {
  if (!template) throw new Error('missing template in response');
  return {
    id: template.id,
    name: template.name,
    kind: template.kind,
    body: template.body,
    fields: template.fields.map((f) => ({
      name: f.name,
      required: f.required,
      default: f.required ? null : f.defaultValue,
    })),
    created_at: rfc3339OrNull(template.createdAt),
  };
}

export function settingsView(settings: Settings | undefined) {
  if (!settings) throw new Error('missing settings in response');
  return {
    job_document_retention_days: settings.jobDocumentRetentionDays,
    upload_retention_days: settings.uploadRetentionDays,
    webhook_delivery_retention_days: settings.webhookDeliveryRetentionDays,
    audit_retention_days: settings.auditRetentionDays,
    notice: settings.statusNotice || null,
    pricing: settings.pricingJson ? (JSON.parse(settings.pricingJson) as unknown) : null,
    downloads: settings.downloadsJson ? (JSON.parse(settings.downloadsJson) as unknown) : null,
  };
}
