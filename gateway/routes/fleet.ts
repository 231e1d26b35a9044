/** The printer and location endpoints of `/v1` (spec §4). */
import type { Middleware } from 'koa';
import type { Backends } from '../clients.js';
import { listParams, rejectUnknownParams, single } from '../query.js';
import type { GatewayState } from '../state.js';
import { locationView, printerView } from '../views.js';
import { orgOf, param } from './context.js';

type Handler = Middleware<GatewayState>;

export function fleetHandlers(backends: Backends): Record<string, Handler> {
  const { stations } = backends;
  return {
    'GET /v1/orgs/:org/printers': async (ctx) => {
      rejectUnknownParams(ctx.query, ['limit', 'cursor', 'station_id', 'location_id']);
      const res = await stations.listPrinters({
        orgId: orgOf(ctx),
        ...listParams(ctx.query),
        stationId: single(ctx.query, 'station_id') ?? '',
        locationId: single(ctx.query, 'location_id') ?? '',
      });
      ctx.body = { printers: res.items.map(printerView), next_cursor: res.nextCursor };
    },

    'GET /v1/orgs/:org/locations': async (ctx) => {
      rejectUnknownParams(ctx.query, ['limit', 'cursor']);
      const res = await stations.listLocations({ orgId: orgOf(ctx), ...listParams(ctx.query) });
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
