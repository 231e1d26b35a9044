/**
 * The StationsService methods that manage the fleet's agents rather than its records: releases and
 * rollouts (DESIGN "Agent releases") and diagnosis of a linked agent.
 */
import type { StationsServiceServer } from '../../gen/spool/v1/stations.js';
import { SpoolError } from '../../lib/errors.js';
import type { AsyncServer } from '../../lib/grpc.js';

export type FleetServer = Pick<
  AsyncServer<StationsServiceServer>,
  'publishRelease' | 'listReleases' | 'createRollout' | 'diagnoseStation'
>;

const notYet = () => new SpoolError('unavailable', 'not available in this version');

export function createFleetServer(): FleetServer {
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
    async diagnoseStation() {
      throw notYet();
    },
  };
}
