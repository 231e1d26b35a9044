/** The stations gRPC service: locations, stations, their enrollment codes and printers. */
import type { Station, StationsServiceServer } from '../../gen/spool/v1/stations.js';
import type { BusLayout } from '../../lib/bus.js';
import {
  DEFAULT_ENROLLMENT_EXPIRES_IN_S,
  MAX_ENROLLMENT_EXPIRES_IN_S,
  MIN_ENROLLMENT_EXPIRES_IN_S,
} from '../../lib/contracts/enrollments.js';
import { generateCredential, hashCredential } from '../../lib/credentials.js';
import { invalid } from '../../lib/errors.js';
import type { AsyncServer } from '../../lib/grpc.js';
import { isUuid, requireUuid } from '../../lib/ids.js';
import { pageLimit } from '../../lib/paging.js';
import { canonicalCode, hashCode, newEnrollmentCode } from './enrollment-codes.js';
import type { FleetServer } from './fleet-server.js';
import type { StationStore } from './store.js';

const MAX_TEXT = 200;
/** Stations one `PurgeOrg` call deletes at most, with their printers. */
export const PURGE_BATCH = 500;
/** The most printers, and the most stations, one `PrintersOf` call names. */
export const MAX_PRINTERS_OF = 1000;

function text(value: string, param: string, required: boolean): string {
  const trimmed = value.trim();
  if (required && trimmed === '') throw invalid(`${param} is required`, param);
  if (trimmed.length > MAX_TEXT)
    throw invalid(`${param} must be at most ${MAX_TEXT} characters`, param);
  return trimmed;
}

function optionalId(value: string, param: string): string {
  if (value !== '' && !isUuid(value)) throw invalid(`${param} must be an id`, param);
  return value;
}

/** The seconds an enrollment code lasts: `expiresIn`, checked, or the default. */
function enrollmentLifetime(expiresIn: number | undefined): number {
  if (expiresIn === undefined) return DEFAULT_ENROLLMENT_EXPIRES_IN_S;
  if (expiresIn < MIN_ENROLLMENT_EXPIRES_IN_S || expiresIn > MAX_ENROLLMENT_EXPIRES_IN_S) {
    throw invalid(
      `expires_in must be ${MIN_ENROLLMENT_EXPIRES_IN_S} to ${MAX_ENROLLMENT_EXPIRES_IN_S} seconds (30 days)`,
      'expires_in',
    );
  }
  return expiresIn;
}

/**
 * Redeems an enrollment code (RedeemEnrollment, and the station link's Enroll): the station it
 * names is made in this process's region, with a new device token.
 */
export async function redeemCode(
  store: Pick<StationStore, 'redeemEnrollment'>,
  given: string,
  region: string,
): Promise<{ station: Station; token: string }> {
  const code = canonicalCode(given);
  if (code === undefined) {
    throw invalid(
      given.trim() === ''
        ? 'code is required'
        : 'code must be an enrollment code such as ABCD-EFGH-JK: 10 letters and digits, without 0, O, 1 or I',
      'code',
    );
  }
  const token = generateCredential('device');
  const station = await store.redeemEnrollment(hashCode(code), {
    region,
    tokenHash: hashCredential(token),
  });
  return { station, token };
}

export function createStationsServer(deps: {
  store: StationStore;
  /** Cuts the live links of a station whose token no longer works, wherever they are held. */
  cutLinks: (stationId: string) => void;
  /** Closes a moved station's links, wherever they are held, so that its agent reconnects. */
  moveLinks: (stationId: string) => void;
  /** Tells the jobs service to read printers again (`printers.<org>.changed`). */
  printersChanged: (orgId: string, which: { printer_id: string } | { station_id: string }) => void;
  /** This process's region (a new station's, unless it names one) and every region. */
  layout: Pick<BusLayout, 'region' | 'regions'>;
}): Omit<AsyncServer<StationsServiceServer>, keyof FleetServer> {
  const { store, layout } = deps;
  const regionOf = (raw: string): string => {
    if (!layout.regions.includes(raw)) {
      throw invalid(`region must be one of ${layout.regions.join(', ')}`, 'region');
    }
    return raw;
  };
  return {
    async createLocation(req) {
      const location = await store.createLocation({
        orgId: requireUuid(req.orgId, 'organization'),
        name: text(req.name, 'name', true),
        address: text(req.address, 'address', false),
        timezone: text(req.timezone, 'timezone', false),
      });
      return { location };
    },

    async getLocation(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return { location: await store.getLocation(orgId, requireUuid(req.locationId, 'location')) };
    },

    async listLocations(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return store.listLocations(orgId, pageLimit(req.limit), req.cursor, req.countStations);
    },

    async listStations(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return store.listStations(orgId, pageLimit(req.limit), req.cursor);
    },

    async listAllStations(req) {
      return store.listAllStations(req.offline, pageLimit(req.limit), req.cursor);
    },

    async createStation(req) {
      const token = generateCredential('device');
      const station = await store.createStation({
        orgId: requireUuid(req.orgId, 'organization'),
        name: text(req.name, 'name', true),
        locationId: optionalId(req.locationId, 'location_id'),
        region: req.region ? regionOf(req.region) : layout.region,
        tokenHash: hashCredential(token),
      });
      return { station, token };
    },

    async revokeStationToken(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const station = await store.replaceToken(orgId, requireUuid(req.stationId, 'station'), null);
      deps.cutLinks(station.id);
      return { station };
    },

    async rotateStationToken(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const token = generateCredential('device');
      const station = await store.replaceToken(
        orgId,
        requireUuid(req.stationId, 'station'),
        hashCredential(token),
      );
      deps.cutLinks(station.id);
      return { station, token };
    },

    async listPrinters(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return store.listPrinters(
        orgId,
        {
          stationId: optionalId(req.stationId, 'station_id'),
          locationId: optionalId(req.locationId, 'location_id'),
        },
        pageLimit(req.limit),
        req.cursor,
      );
    },

    async getStation(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return { station: await store.getStation(orgId, requireUuid(req.stationId, 'station')) };
    },

    async updateStation(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const stationId = requireUuid(req.stationId, 'station');
      const region = req.region === undefined ? undefined : regionOf(req.region);
      const before = region === undefined ? undefined : await store.getStation(orgId, stationId);
      const station = await store.updateStation(orgId, stationId, {
        name: req.name === undefined ? undefined : text(req.name, 'name', true),
        locationId:
          req.locationId === undefined ? undefined : optionalId(req.locationId, 'location_id'),
        region,
      });
      if (before && before.region !== station.region) {
        deps.moveLinks(station.id);
        deps.printersChanged(orgId, { station_id: station.id });
      }
      return { station };
    },

    async deleteStation(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const { station, printerIds } = await store.deleteStation(
        orgId,
        requireUuid(req.stationId, 'station'),
      );
      // The token's hash went with the row: a link that outlives this message is refused at its
      // next re-read.
      deps.cutLinks(station.id);
      deps.printersChanged(orgId, { station_id: station.id });
      return { station, printerIds };
    },

    async purgeOrg(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const { deleted, stationIds, done } = await store.purgeOrg(orgId, PURGE_BATCH);
      for (const id of stationIds) {
        deps.cutLinks(id);
        deps.printersChanged(orgId, { station_id: id });
      }
      return { deleted, done };
    },

    async deletePrinter(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const printer = await store.deletePrinter(orgId, requireUuid(req.printerId, 'printer'));
      deps.printersChanged(orgId, { printer_id: printer.id });
      return { printer };
    },

    async updateLocation(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const location = await store.updateLocation(orgId, requireUuid(req.locationId, 'location'), {
        name: req.name === undefined ? undefined : text(req.name, 'name', true),
        address: req.address === undefined ? undefined : text(req.address, 'address', false),
        timezone: req.timezone === undefined ? undefined : text(req.timezone, 'timezone', false),
      });
      return { location };
    },

    async deleteLocation(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      await store.deleteLocation(orgId, requireUuid(req.locationId, 'location'));
      return {};
    },

    async getPrinter(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return { printer: await store.getPrinter(orgId, requireUuid(req.printerId, 'printer')) };
    },

    async createEnrollment(req) {
      const enrollment = await store.createEnrollment({
        orgId: requireUuid(req.orgId, 'organization'),
        stationName: text(req.stationName, 'station_name', true),
        locationId: optionalId(req.locationId, 'location_id'),
        expiresInMs: enrollmentLifetime(req.expiresIn) * 1000,
        code: () => {
          const code = newEnrollmentCode();
          return { code, hash: hashCode(canonicalCode(code) as string) };
        },
      });
      return { enrollment };
    },

    async redeemEnrollment(req) {
      return redeemCode(store, req.code, layout.region);
    },

    async printersOf(req) {
      if (req.printers.length > MAX_PRINTERS_OF || req.stations.length > MAX_PRINTERS_OF) {
        throw invalid(
          `at most ${MAX_PRINTERS_OF} printers and ${MAX_PRINTERS_OF} stations per call`,
        );
      }
      // A malformed pair names nothing: it finds no printer rather than failing the others.
      const printers = req.printers.filter((k) => isUuid(k.orgId) && isUuid(k.printerId));
      const stations = req.stations.filter((k) => isUuid(k.orgId) && isUuid(k.stationId));
      return { items: await store.printersOf(printers, stations) };
    },
  };
}
