/**
 * The StationsService methods that manage the fleet's agents rather than its records: releases and
 * rollouts (DESIGN "Agent releases") and diagnosis of a linked agent.
 */
import type { StationsServiceServer } from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import { SpoolError } from '../../lib/errors.js';
import type { AsyncServer } from '../../lib/grpc.js';
import type { StationCatalogue } from './station-catalogue.js';
import { diagnoseStation } from './station-diagnosis.js';

export type FleetServer = Pick<
  AsyncServer<StationsServiceServer>,
  'publishRelease' | 'listReleases' | 'createRollout' | 'diagnoseStation'
>;

const notYet = () => new SpoolError('unavailable', 'not available in this version');

export interface FleetServerOptions {
  /** What a diagnosis needs: the stations, to scope it, and the bus to the link's holder. */
  diagnose: {
    stations: Pick<StationCatalogue, 'getStation'>;
    nc: NatsConnection;
    /** How long the holder waits for the agent (default `DIAGNOSE_WAIT_MS`). */
    waitMs?: number;
  };
}

export function createFleetServer(options: FleetServerOptions): FleetServer {
  return {
    async publishRelease() {
      throw notYet();
    },
    async listReleases() {
      throw notYet();
    },
    async createRollout() {
      throw notYet();
    },
    async diagnoseStation(req) {
      return { report: await diagnoseStation(options.diagnose, req) };
    },
  };
}
