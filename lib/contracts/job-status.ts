/**
 * The statuses a job can be in (spec §3). The jobs service's state machine
 * (`services/jobs/machine.ts`) decides how a job moves between them; the gateway, the OpenAPI
 * document and the console name them from here.
 */
export const JOB_STATUSES = [
  'scheduled',
  'held',
  'queued',
  'sent',
  'printed',
  'failed',
  'cancelled',
] as const;

export type JobStatus = (typeof JOB_STATUSES)[number];

export function isJobStatus(value: string): value is JobStatus {
  return (JOB_STATUSES as readonly string[]).includes(value);
}
