/** The printer and location endpoints of `/v1` (spec §4). */
import type { Middleware } from 'koa';
import type { Backends } from '../clients.js';
import { idParam, LIST_QUERY, type QuerySpec, readQuery, rejectUnknownParams } from '../query.js';
import type { GatewayState } from '../state.js';
import { locationView, printerView } from '../views.js';
import { orgOf, param } from './context.js';

type Handler = Middleware<GatewayState>;

/**
 * The query of a printer list (the integrators' and the operator's). The stations service checks
 * the ids: an empty one is no filter there.
 */
export const PRINTER_LIST_QUERY = {
  ...LIST_QUERY,
  station_id: idParam('station', false),
  location_id: idParam('location', false),
} as const satisfies QuerySpec;

export function fleetHandlers(backends: Backends): Record<string, Handler> {
  const { stations } = backends;
  return {
    'GET /v1/orgs/:org/printers': async (ctx) => {
      const q = readQuery(ctx.query, PRINTER_LIST_QUERY);
      const res = await stations.listPrinters({
        orgId: orgOf(ctx),
        limit: q.limit,
        cursor: q.cursor,
        stationId: q.station_id,
        locationId: q.location_id,
      });
      ctx.body = { printers: res.items.map(printerView), next_cursor: res.nextCursor };
    },

    'GET /v1/orgs/:org/locations': async (ctx) => {
      const page = readQuery(ctx.query, LIST_QUERY);
      const res = await stations.listLocations({
        orgId: orgOf(ctx),
        ...page,
        countStations: false,
      });
      ctx.body = { locations: res.items.map(locationView), next_cursor: res.nextCursor };
    },

    'GET /v1/orgs/:org/locations/:id': async (ctx) => {
      rejectUnknownParams(ctx.query, []);
      const id = param(ctx, 'id');
      const { location } = await stations.getLocation({ orgId: orgOf(ctx), locationId: id });
      ctx.body = { location: locationView(location) };
    },
  };
}
