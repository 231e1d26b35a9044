/**
 * The console's locations of an organization (docs/console-api.md): the places its stations are
 * in, listed with how many stations each has, and made, changed and deleted by admins with the
 * operator API's bodies, rules and stations-service calls.
 */
import { body, changes } from '../body.js';
import { type Created, setLocation } from '../http-manners.js';
import { rejectUnknownParams } from '../query.js';
import { locationView } from '../views.js';
import { CreateLocationBody, createLocationRequest } from './admin.js';
import { UpdateLocationBody, updateLocationRequest } from './admin-fleet.js';
import type { ConsoleKit } from './console-kit.js';

/**
 * A location made in the console is named by its path on the console's API, where it is changed
 * and deleted; `GET /v1/orgs/{org}/locations/{id}` answers it to the same session.
 */
const CREATED: Created = {
  field: 'location',
  location: '/console/v1/orgs/{org}/locations/{id}',
};

export function locationRoutes(kit: ConsoleKit): void {
  const { router, deps, signedIn, role, orgOf } = kit;
  const { stations } = deps.backends;

  // Every location (up to 10,000), each with the number of its stations, counted by the stations
  // service page by page.
  router.get('/orgs/:org/locations', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const orgId = orgOf(ctx);
    const items = [];
    let cursor = '';
    do {
      const res = await stations.listLocations({ orgId, limit: 200, cursor, countStations: true });
      for (const l of res.items) {
        items.push({ ...locationView(l), station_count: res.stationCounts[l.id] ?? 0 });
      }
      cursor = res.nextCursor;
    } while (cursor !== '' && items.length < 10_000);
    ctx.body = { items };
  });

  router.post(
    '/orgs/:org/locations',
    setLocation(CREATED),
    signedIn,
    role('admin'),
    async (ctx) => {
      const req = await body(ctx, CreateLocationBody, deps.bodyLimit);
      const { location } = await stations.createLocation(createLocationRequest(orgOf(ctx), req));
      ctx.status = 201;
      ctx.body = { location: locationView(location) };
    },
  );

  router.patch('/orgs/:org/locations/:id', signedIn, role('admin'), async (ctx) => {
    const req = await changes(ctx, UpdateLocationBody, deps.bodyLimit);
    const { location } = await stations.updateLocation(
      updateLocationRequest(orgOf(ctx), ctx.params.id ?? '', req),
    );
    ctx.body = { location: locationView(location) };
  });

  // Refused (409) while a station is in it; the stations service's message names them.
  router.delete('/orgs/:org/locations/:id', signedIn, role('admin'), async (ctx) => {
    await stations.deleteLocation({ orgId: orgOf(ctx), locationId: ctx.params.id ?? '' });
    ctx.status = 204;
  });
}
