/**
 * The console's keys and fleet of an organization (docs/console-api.md): API keys, stations and
 * printers.
 */
import { Type } from '@sinclair/typebox';
import { body, changes } from '../body.js';
import type { Backends } from '../clients.js';
import { DIAGNOSE_DEADLINE_MS, DiagnoseBody, diagnosisView } from '../diagnosis.js';
import { deletePrinter } from '../printer-deletion.js';
import { rejectUnknownParams } from '../query.js';
import { adminStationView, keyView, stationView } from '../views.js';
import { CreateKeyBody, CreateStationBody, createKeyRequest, stationLocation } from './admin.js';
import { UpdateStationBody, updateStationRequest } from './admin-fleet.js';
import type { ConsoleKit } from './console-kit.js';

/**
 * What an admin changes of a station in the console: its location. A new home region is the
 * operator's to give (its agent's link moves), and nothing in the console renames a station.
 */
export const ConsoleUpdateStationBody = Type.Pick(UpdateStationBody, ['location_id'], {
  additionalProperties: false,
});

/** Every station of the organization (up to 10,000), read page by page. */
export async function allStations(stations: Backends['stations'], orgId: string) {
  const items = [];
  let cursor = '';
  do {
    const res = await stations.listStations({ orgId, limit: 200, cursor });
    items.push(...res.items);
    cursor = res.nextCursor;
  } while (cursor !== '' && items.length < 10_000);
  return items;
}

/** An organization's API keys, stations and printers. */
export function fleetRoutes(kit: ConsoleKit): void {
  const { router, deps, signedIn, role, orgOf, actorOf } = kit;
  const { accounts, jobs, stations } = deps.backends;

  router.get('/orgs/:org/keys', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const items = [];
    let cursor = '';
    do {
      const res = await accounts.listApiKeys({ orgId: orgOf(ctx), limit: 200, cursor });
      items.push(...res.items.map(keyView));
      cursor = res.nextCursor;
    } while (cursor !== '' && items.length < 10_000);
    ctx.body = { items };
  });

  router.post('/orgs/:org/keys', signedIn, role('developer'), async (ctx) => {
    const req = await body(ctx, CreateKeyBody, deps.bodyLimit);
    const { key, secret } = await accounts.createApiKey(createKeyRequest(orgOf(ctx), req));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { key: keyView(key), secret };
  });

  router.delete('/orgs/:org/keys/:id', signedIn, role('developer'), async (ctx) => {
    await accounts.revokeApiKey({ orgId: orgOf(ctx), keyId: ctx.params.id ?? '' });
    // Other replicas hear of it on the bus within a second; a request to this one, next, is
    // refused already.
    deps.keys.evictKey(ctx.params.id ?? '');
    ctx.status = 204;
  });

  router.get('/orgs/:org/stations', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    ctx.body = { items: (await allStations(stations, orgOf(ctx))).map(adminStationView) };
  });

  router.post('/orgs/:org/stations', signedIn, role('admin'), async (ctx) => {
    const req = await body(ctx, CreateStationBody, deps.bodyLimit);
    const { station, token } = await stations.createStation({
      orgId: orgOf(ctx),
      name: req.name,
      locationId: stationLocation(req.location_id),
      region: req.region ?? '',
    });
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { station: stationView(station), token };
  });

  // Moves a station to another location of the organization, or out of its location (null).
  router.patch('/orgs/:org/stations/:id', signedIn, role('admin'), async (ctx) => {
    const req = await changes(ctx, ConsoleUpdateStationBody, deps.bodyLimit);
    const { station } = await stations.updateStation(
      updateStationRequest(orgOf(ctx), ctx.params.id ?? '', req),
    );
    ctx.body = { station: adminStationView(station) };
  });

  // The station's linked agent's log lines, printers and versions (docs/agent.md, "Diagnosis").
  router.post('/orgs/:org/stations/:id/diagnose', signedIn, role('admin'), async (ctx) => {
    const req = await body(ctx, DiagnoseBody, deps.bodyLimit);
    const { report } = await stations.diagnoseStation(
      { orgId: orgOf(ctx), stationId: ctx.params.id ?? '', logLines: req.log_lines ?? 0 },
      { deadlineMs: DIAGNOSE_DEADLINE_MS },
    );
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { diagnosis: diagnosisView(report) };
  });

  // A printer its agent no longer reports (`removed`), or any: its unfinished jobs fail first.
  router.delete('/orgs/:org/printers/:id', signedIn, role('admin'), async (ctx) => {
    await deletePrinter(
      { jobs, stations },
      orgOf(ctx),
      ctx.params.id ?? '',
      `person:${actorOf(ctx)}`,
    );
    ctx.status = 204;
  });
}
