/**
 * The StationsService methods that manage the fleet's agents rather than its records: releases and
 * rollouts (DESIGN "Agent releases") and diagnosis of a linked agent.
 */
import type { StationsServiceServer } from '../../gen/spool/v1/stations.js';
import type { NatsConnection } from '../../lib/bus.js';
import type { AsyncServer } from '../../lib/grpc.js';
import type { Releases } from './releases.js';
import type { StationCatalogue } from './station-catalogue.js';
import { diagnoseStation } from './station-diagnosis.js';

export type FleetServer = Pick<
  AsyncServer<StationsServiceServer>,
  'publishRelease' | 'getRelease' | 'listReleases' | 'createRollout' | 'diagnoseStation'
>;

export interface FleetServerOptions {
  /** Agent releases and their rollouts. */
  releases: Releases;
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
    async publishRelease(req) {
      return { release: await options.releases.publish(req.manifest, req.signature) };
    },
    async getRelease(req) {
      return { release: await options.releases.get(req.version) };
    },
    async listReleases() {
      return { items: await options.releases.list() };
    },
    async createRollout(req) {
      return { rollout: await options.releases.createRollout(req) };
    },
    async diagnoseStation(req) {
      return { report: await diagnoseStation(options.diagnose, req) };
    },
  };
}
