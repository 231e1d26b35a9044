/**
 * What the agent asks CUPS over IPP: how a job ended (`lpstat` lists a finished job the same way
 * whether it completed, was cancelled or was aborted; `Get-Job-Attributes` tells them apart by
 * `job-state`), and what a queue can do (`Get-Printer-Attributes`, which CUPS answers from the
 * queue's driver or from the driverless printer behind it).
 */
import { userInfo } from 'node:os';
import type { PrinterCapabilities } from '../../gen/spool/v1/stations.js';
import { capabilitiesOf, PRINTER_ATTRIBUTES } from '../ipp/attributes.js';
import { call, type IppEndpoint } from '../ipp/client.js';
import {
  allAttributes,
  GROUP,
  integer,
  OPERATION,
  operationAttributes,
  strings,
  TAG,
} from '../ipp/protocol.js';
import type { SubscriptionTarget } from '../ipp/subscriptions.js';

export { IppError, JOB_STATE, STATUS } from '../ipp/protocol.js';

/** Where a CUPS server listens: `host[:port]` (port 631 by default) or a domain socket path. */
export type CupsServer = string;

export interface JobInfo {
  state: number;
  reasons: string[];
  message: string;
}

/** Asks the CUPS server for a job's state, state reasons and printer message. */
export async function getJobInfo(
  server: CupsServer,
  jobId: number,
  timeoutMs = 10_000,
): Promise<JobInfo> {
  const attributes = await ask(
    server,
    OPERATION.getJobAttributes,
    { path: '/jobs/', name: 'job-uri', uri: `ipp://localhost/jobs/${jobId}` },
    ['job-state', 'job-state-reasons', 'job-printer-state-message'],
    timeoutMs,
  );
  const state = integer(attributes, 'job-state');
  if (state === undefined) throw new Error('CUPS sent no job-state');
  return {
    state,
    reasons: strings(attributes, 'job-state-reasons'),
    message: strings(attributes, 'job-printer-state-message')[0] ?? '',
  };
}

/** A queue's capabilities from its IPP printer attributes. */
export async function getQueueCapabilities(
  server: CupsServer,
  queue: string,
  timeoutMs = 10_000,
): Promise<PrinterCapabilities> {
  const path = `/printers/${encodeURIComponent(queue)}`;
  const attributes = await ask(
    server,
    OPERATION.getPrinterAttributes,
    { path, name: 'printer-uri', uri: `ipp://localhost${path}` },
    PRINTER_ATTRIBUTES,
    timeoutMs,
  );
  return capabilitiesOf(attributes, true);
}

/**
 * The events that change what the agent reports of a CUPS server's queues, on every queue at
 * once: a subscription to the server (`ipp://localhost/`) rather than to one queue covers them all,
 * and queues added or deleted.
 */
export function cupsSubscriptionTarget(server: CupsServer): SubscriptionTarget {
  return {
    endpoint: endpointFor(server, '/', 'ipp://localhost/'),
    events: ['printer-state-changed', 'printer-config-changed', 'printer-added', 'printer-deleted'],
    user: userName(),
  };
}

/** Asks CUPS for the `requested` attributes of the job or printer at `target`. */
async function ask(
  server: CupsServer,
  operation: number,
  target: { path: string; name: string; uri: string },
  requested: string[],
  timeoutMs: number,
) {
  const response = await call(
    endpointFor(server, target.path, target.uri),
    {
      operation,
      groups: [
        {
          tag: GROUP.operation,
          attributes: operationAttributes(
            { tag: TAG.uri, name: target.name, values: [target.uri] },
            { tag: TAG.name, name: 'requesting-user-name', values: [userName()] },
            { tag: TAG.keyword, name: 'requested-attributes', values: requested },
          ),
        },
      ],
    },
    { timeoutMs },
  );
  return allAttributes(response);
}

/** The user `lp` submits jobs as, so CUPS shows the job's owner everything. */
function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'spool-agent';
  }
}

function endpointFor(server: CupsServer, path: string, printerUri: string): IppEndpoint {
  if (server.startsWith('/')) return { socketPath: server, path, printerUri };
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(server);
  const host = m?.[1] ?? m?.[2];
  if (!m || host === undefined)
    throw new Error(`cannot read CUPS server ${JSON.stringify(server)}`);
  return { host, port: m[3] === undefined ? 631 : Number(m[3]), path, printerUri };
}
