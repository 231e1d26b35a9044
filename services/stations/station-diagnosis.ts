/**
 * `DiagnoseStation`: asks the replica holding a station's link for its agent's report over a NATS
 * request (link-diagnosis.ts answers it), scoped to the station's organization.
 */
import { errors as natsErrors } from '@nats-io/transport-node';
import { DiagnoseReport, type DiagnoseStationRequest } from '../../gen/spool/v1/stations.js';
import { type NatsConnection, subjects } from '../../lib/bus.js';
import { MAX_DIAGNOSIS_LOG_LINES, trustedDiagnosis } from '../../lib/contracts/diagnosis.js';
import { invalid, SpoolError } from '../../lib/errors.js';
import { requireUuid } from '../../lib/ids.js';
import {
  DIAGNOSE_ERROR_HEADER,
  DIAGNOSE_WAIT_MS,
  type DiagnoseBusRequest,
} from './link-diagnosis.js';
import type { StationCatalogue } from './station-catalogue.js';

/** Beyond the holder's own wait: the bus's two hops. */
const BUS_MARGIN_MS = 2_000;

export async function diagnoseStation(
  deps: {
    stations: Pick<StationCatalogue, 'getStation'>;
    nc: NatsConnection;
    waitMs?: number;
  },
  req: DiagnoseStationRequest,
): Promise<DiagnoseReport> {
  const orgId = requireUuid(req.orgId, 'organization');
  const stationId = requireUuid(req.stationId, 'station');
  const lines = req.logLines === 0 ? MAX_DIAGNOSIS_LOG_LINES : req.logLines;
  if (!Number.isInteger(lines) || lines < 1 || lines > MAX_DIAGNOSIS_LOG_LINES) {
    throw invalid(`log_lines must be 1 to ${MAX_DIAGNOSIS_LOG_LINES}`, 'log_lines');
  }
  // Another organization's station is not found, as every other read of it.
  const station = await deps.stations.getStation(orgId, stationId);
  const waitMs = deps.waitMs ?? DIAGNOSE_WAIT_MS;
  const body: DiagnoseBusRequest = { log_lines: lines };
  let reply: Awaited<ReturnType<NatsConnection['request']>>;
  try {
    reply = await deps.nc.request(subjects.diagnose(station.id), JSON.stringify(body), {
      timeout: waitMs + BUS_MARGIN_MS,
    });
  } catch (err) {
    if (err instanceof natsErrors.RequestError && err.isNoResponders()) {
      throw new SpoolError(
        'unavailable',
        `station ${station.id} is not linked: its agent is not connected, so it cannot be diagnosed`,
      );
    }
    if (err instanceof natsErrors.TimeoutError) {
      throw new SpoolError(
        'unavailable',
        `station ${station.id} did not answer the diagnosis within ${(waitMs + BUS_MARGIN_MS) / 1000} s`,
      );
    }
    throw err;
  }
  const why = reply.headers?.get(DIAGNOSE_ERROR_HEADER);
  if (why) {
    throw new SpoolError('unavailable', `station ${station.id} could not be diagnosed: ${why}`);
  }
  return trustedDiagnosis(DiagnoseReport.decode(reply.data));
}
