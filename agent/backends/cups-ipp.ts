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

export { IppError, JOB_STATE } from '../ipp/protocol.js';

/** Where a CUPS server listens: `host[:port]` (port 631 by default) or a domain socket path. */
export type CupsServer = string;

export interface JobInfo {
  state: number;
  reasons: string[];
  message: string;
}

/** `client-error-not-found`: CUPS no longer knows the job (its history was purged). */
export const IPP_NOT_FOUND = 0x0406;

/** Asks the CUPS server for a job's state, state reasons and printer message. */
export async function getJobInfo(
  server: CupsServer,
  jobId: number,
  timeoutMs = 10_000,
): Promise<JobInfo> {
  const target = `ipp://localhost/jobs/${jobId}`;
  const response = await call(
    endpointFor(server, '/jobs/', target),
    {
      operation: OPERATION.getJobAttributes,
      groups: [
        {
          tag: GROUP.operation,
          attributes: operationAttributes(
            { tag: TAG.uri, name: 'job-uri', values: [target] },
            { tag: TAG.name, name: 'requesting-user-name', values: [userName()] },
            {
              tag: TAG.keyword,
              name: 'requested-attributes',
              values: ['job-state', 'job-state-reasons', 'job-printer-state-message'],
            },
          ),
        },
      ],
    },
    { timeoutMs },
  );
  const attributes = allAttributes(response);
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
  const target = `ipp://localhost${path}`;
  const response = await call(
    endpointFor(server, path, target),
    {
      operation: OPERATION.getPrinterAttributes,
      groups: [
        {
          tag: GROUP.operation,
          attributes: operationAttributes(
            { tag: TAG.uri, name: 'printer-uri', values: [target] },
            { tag: TAG.name, name: 'requesting-user-name', values: [userName()] },
            { tag: TAG.keyword, name: 'requested-attributes', values: PRINTER_ATTRIBUTES },
          ),
        },
      ],
    },
    { timeoutMs },
  );
  return capabilitiesOf(allAttributes(response), true);
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
