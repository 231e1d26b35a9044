/**
 * The `ipp:` / `ipps:` backend: an IPP Everywhere printer driven directly, with no CUPS and no
 * driver. Its capabilities and status come from `Get-Printer-Attributes`; a job is checked with
 * `Validate-Job`, sent with `Print-Job` and followed with `Get-Job-Attributes` until the printer
 * says it completed, which is a `device_completed` confirmation with the impressions it counted.
 */
import type { Logger } from 'pino';
import {
  capabilitiesOf,
  jobTemplate,
  PRINTER_ATTRIBUTES,
  printerStateWords,
  printerStatusOf,
} from '../ipp/attributes.js';
import { CertificateError, call, describe, endpointOf } from '../ipp/client.js';
import {
  type Attribute,
  allAttributes,
  GROUP,
  IppError,
  integer,
  JOB_STATE,
  OPERATION,
  operationAttributes,
  STATUS,
  strings,
  TAG,
} from '../ipp/protocol.js';
import type { SubscriptionTarget } from '../ipp/subscriptions.js';
import {
  AS_IS_CAPABILITIES,
  type Backend,
  type Confirmation,
  copiesOf,
  type GivenJob,
  messageOf,
  NotSentError,
  type PrinterStatus,
  type PrintJob,
  pause,
} from './backend.js';
import { networkProblem } from './network.js';

export interface IppPrinterOptions {
  /** How often a job in the printer is asked after (default 1 s). */
  jobPollMs?: number;
  /** How long one request may wait for its answer (default 30 s; a document's upload included). */
  requestTimeoutMs?: number;
  /** How long a printer that has a job may not answer before the job fails as lost (5 min). */
  lostAfterMs?: number;
  logger?: Logger;
}

/** The `requesting-user-name` of the agent's requests: its jobs' owner, and its subscription's. */
const USER_NAME = 'spool-agent';

const JOB_ATTRIBUTES = [
  'job-state',
  'job-state-reasons',
  'job-state-message',
  'job-impressions-completed',
];

export function createIppPrinterBackend(uri: string, options: IppPrinterOptions = {}): Backend {
  const endpoint = endpointOf(uri);
  const jobPollMs = options.jobPollMs ?? 1_000;
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const lostAfterMs = options.lostAfterMs ?? 300_000;
  const logger = options.logger;
  const printerUri: Attribute = {
    tag: TAG.uri,
    name: 'printer-uri',
    values: [endpoint.printerUri],
  };
  const user: Attribute = { tag: TAG.name, name: 'requesting-user-name', values: [USER_NAME] };
  let known = AS_IS_CAPABILITIES;

  function jobOperation(operation: number, jobId: number, ...more: Attribute[]) {
    return call(
      endpoint,
      {
        operation,
        groups: [
          {
            tag: GROUP.operation,
            attributes: operationAttributes(
              printerUri,
              { tag: TAG.integer, name: 'job-id', values: [jobId] },
              user,
              ...more,
            ),
          },
        ],
      },
      { timeoutMs },
    );
  }

  async function jobState(jobId: number) {
    const response = await jobOperation(OPERATION.getJobAttributes, jobId, {
      tag: TAG.keyword,
      name: 'requested-attributes',
      values: JOB_ATTRIBUTES,
    });
    const attributes = allAttributes(response);
    return {
      state: integer(attributes, 'job-state') ?? 0,
      reasons: strings(attributes, 'job-state-reasons').filter((r) => r !== 'none'),
      message: strings(attributes, 'job-state-message')[0] ?? '',
      impressions: integer(attributes, 'job-impressions-completed'),
    };
  }

  /** Follows a job until it ends: its confirmation, or an Error saying how it ended. */
  async function waitForJob(jobId: number, signal?: AbortSignal): Promise<Confirmation> {
    let unanswered: number | undefined;
    for (;;) {
      if (signal?.aborted)
        throw new Error(`ipp: the agent stopped while ${describe(endpoint)} printed job ${jobId}`);
      let job: Awaited<ReturnType<typeof jobState>>;
      try {
        job = await jobState(jobId);
        unanswered = undefined;
      } catch (error) {
        // The printer has the job: a printer that stops answering for a while (a restart, Wi-Fi)
        // is asked again, and the job fails as lost only once it has not answered for long.
        unanswered ??= Date.now();
        if (Date.now() - unanswered >= lostAfterMs) {
          throw new Error(
            `ipp: lost track of job ${jobId}: ${describe(endpoint)} has not answered for ${Math.round(lostAfterMs / 1000)} s (${networkProblem(error)})`,
          );
        }
        await pause(jobPollMs, signal);
        continue;
      }
      if (job.state === JOB_STATE.completed) return confirmed(job.impressions);
      if (job.state === JOB_STATE.canceled || job.state === JOB_STATE.aborted) {
        const how = job.state === JOB_STATE.canceled ? 'cancelled' : 'aborted';
        const why = [job.reasons.join(', '), job.message].filter((s) => s !== '').join('; ');
        throw new Error(`ipp: the printer ${how} job ${jobId}${why ? ` (${why})` : ''}`);
      }
      await pause(jobPollMs, signal);
    }
  }

  function printRequest(operation: number, job: PrintJob) {
    return {
      operation,
      groups: [
        {
          tag: GROUP.operation,
          attributes: operationAttributes(
            printerUri,
            user,
            { tag: TAG.name, name: 'job-name', values: [job.title.slice(0, 255) || job.id] },
            { tag: TAG.mimeMediaType, name: 'document-format', values: [job.contentType] },
          ),
        },
        { tag: GROUP.job, attributes: jobTemplate(job.options, copiesOf(job)) },
      ],
    };
  }

  return {
    async print(job: PrintJob, signal?: AbortSignal): Promise<Confirmation> {
      let jobId: number;
      try {
        // Nothing is printed by a refusal here: the options or the format are not the printer's.
        await call(endpoint, printRequest(OPERATION.validateJob, job), { timeoutMs, signal });
        const response = await call(endpoint, printRequest(OPERATION.printJob, job), {
          document: job.document,
          timeoutMs,
          signal,
        });
        const id = integer(allAttributes(response), 'job-id');
        if (id === undefined) throw new Error(`ipp: ${describe(endpoint)} gave the job no job-id`);
        jobId = id;
      } catch (error) {
        throw notSent(error) ? new NotSentError(`ipp: ${networkProblem(error)}`) : asFailure(error);
      }
      logger?.info(
        { printer: describe(endpoint), job: job.id, ipp_job: jobId },
        'sent to the printer',
      );
      await job.submitted?.(String(jobId));
      return waitForJob(jobId, signal);
    },

    /**
     * After a restart: how the printer's job ended. One still waiting in the printer is cancelled
     * (it prints when offered again); one printing is followed to its end.
     */
    async outcome(job: GivenJob) {
      const jobId = recordedJob(job.ref);
      if (jobId === undefined) throw new Error('ipp: no printer job was recorded');
      const state = await jobState(jobId);
      if (state.state === JOB_STATE.completed) return confirmed(state.impressions);
      if (state.state === JOB_STATE.canceled || state.state === JOB_STATE.aborted) {
        return 'not_printed';
      }
      if (state.state === JOB_STATE.pending || state.state === JOB_STATE.held) {
        if (await cancelJob(jobId)) return 'not_printed';
      }
      return waitForJob(jobId);
    },

    async cancel(job: GivenJob) {
      const jobId = recordedJob(job.ref);
      return jobId === undefined ? false : cancelJob(jobId);
    },

    async status(): Promise<PrinterStatus> {
      try {
        const response = await call(
          endpoint,
          {
            operation: OPERATION.getPrinterAttributes,
            groups: [
              {
                tag: GROUP.operation,
                attributes: operationAttributes(printerUri, user, {
                  tag: TAG.keyword,
                  name: 'requested-attributes',
                  values: PRINTER_ATTRIBUTES,
                }),
              },
            ],
          },
          { timeoutMs: Math.min(timeoutMs, 10_000) },
        );
        const attributes = allAttributes(response);
        known = capabilitiesOf(attributes, false);
        const state = printerStatusOf(attributes);
        const raw = printerStateWords(attributes);
        if (
          attributes.get('printer-is-accepting-jobs')?.[0] === false &&
          state.status === 'ready'
        ) {
          return { status: 'offline', detail: 'not accepting jobs', capabilities: known, raw };
        }
        return { ...state, capabilities: known, raw };
      } catch (error) {
        return {
          // A printer that answers with a certificate the agent refuses is not off: someone has
          // to trust or fix the certificate before it prints.
          status: error instanceof CertificateError ? 'error' : 'offline',
          detail: `ipp ${describe(endpoint)}: ${networkProblem(error)}`,
          capabilities: known,
        };
      }
    },
  };

  async function cancelJob(jobId: number): Promise<boolean> {
    try {
      await jobOperation(OPERATION.cancelJob, jobId);
      return true;
    } catch (error) {
      logger?.warn(
        { printer: describe(endpoint), ipp_job: jobId, err: messageOf(error) },
        'the printer did not cancel a job',
      );
      return false;
    }
  }
}

/** The events that change what the agent reports of the printer at `uri`: its state and what it can do. */
export function ippPrinterSubscriptionTarget(uri: string): SubscriptionTarget {
  return {
    endpoint: endpointOf(uri),
    events: ['printer-state-changed', 'printer-config-changed'],
    user: USER_NAME,
  };
}

function confirmed(impressions: number | undefined): Confirmation {
  return impressions === undefined || impressions < 0
    ? { level: 'device_completed' }
    : { level: 'device_completed', pages: impressions };
}

/**
 * Whether a failed submission left the printer without the job: it could not be reached, its
 * certificate was refused, or it said it is busy or not taking jobs now. The job then waits for
 * the printer rather than fail.
 */
function notSent(error: unknown): boolean {
  if (error instanceof CertificateError) return true;
  if (error instanceof IppError) {
    return (
      error.status === STATUS.busy ||
      error.status === STATUS.serviceUnavailable ||
      error.status === STATUS.notAcceptingJobs
    );
  }
  const code = (error as NodeJS.ErrnoException).code;
  return (
    code === 'ECONNREFUSED' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === 'ENOTFOUND' ||
    code === 'EAI_AGAIN'
  );
}

function asFailure(error: unknown): Error {
  return new Error(`ipp: ${networkProblem(error)}`);
}

function recordedJob(ref: string | undefined): number | undefined {
  const id = Number(ref);
  return ref && Number.isInteger(id) && id > 0 ? id : undefined;
}
