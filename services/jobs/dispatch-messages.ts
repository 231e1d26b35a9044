/**
 * The outbox messages that tell a job's station of it (lib/contracts/dispatch.ts): an offer when
 * the job is to print, a withdrawal when an offer no longer stands.
 */
import type { Job } from '../../gen/spool/v1/jobs.js';
import { PrintOptions } from '../../gen/spool/v1/stations.js';
import { subjects } from '../../lib/bus.js';
import type { DispatchOffer, DispatchWithdraw } from '../../lib/contracts/dispatch.js';
import { jobJson } from '../../lib/job-view.js';
import type { OutboxMessage } from '../../lib/outbox.js';

/** The subject of the dispatch messages of `job`'s station. */
const subjectOf = (job: Job) => subjects.dispatch(job.region, job.orgId, job.stationId);

/**
 * Offers `job` to its station; `document`, when given, travels in the message (a document kept
 * with its job, at creation).
 */
export function dispatchOffer(job: Job, document?: Buffer): OutboxMessage {
  const payload: DispatchOffer = {
    kind: 'offer',
    job: {
      ...jobJson(job),
      sha256: job.sha256,
      options: job.options ?? PrintOptions.fromPartial({}),
      trace_context: job.traceContext,
      ...(job.documentInline ? { document_inline: true } : {}),
      ...(document ? { document: document.toString('base64') } : {}),
    },
  };
  return { subject: subjectOf(job), payload };
}

/** Takes back the offer of `job`'s attempt. */
export function dispatchWithdrawal(job: Job): OutboxMessage {
  const payload: DispatchWithdraw = { kind: 'withdraw', job_id: job.id, attempt: job.attempt };
  return { subject: subjectOf(job), payload };
}
