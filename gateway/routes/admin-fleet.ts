/**
 * The operator API's reads, updates and deletes (docs/api.md, operator section): organizations by
 * name, stations, printers, locations, templates and jobs of an organization, and the audit log.
 * Every lookup goes to the owning service with the organization of the path, which scopes it
 * there: an id of another organization answers 404.
 */
import { Router } from '@koa/router';
import { type Static, Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import type { AuditEntry } from '../../gen/spool/v1/accounts.js';
import type { UpdateLocationRequest, UpdateStationRequest } from '../../gen/spool/v1/stations.js';
import { invalid } from '../../lib/errors.js';
import { rfc3339OrNull } from '../../lib/time.js';
import { type OperatorToken, requireOperator } from '../auth.js';
import { body, changes } from '../body.js';
import type { Backends } from '../clients.js';
import { DIAGNOSE_DEADLINE_MS, DiagnoseBody, diagnosisView } from '../diagnosis.js';
import { refuseChangesWhileDeleting } from '../org-deletion.js';
import { deletePrinter } from '../printer-deletion.js';
import { booleanParam, listParams, rejectUnknownParams, single, timeParam } from '../query.js';
import type { GatewayState } from '../state.js';
import { adminStationView, locationView, orgView, printerView, templateView } from '../views.js';
import {
  CreateLocationBody,
  CreateTemplateBody,
  checkTimeZone,
  newName,
  stationLocation,
} from './admin.js';
import { jobListView, jobWithEventsView, listJobsRequest } from './jobs.js';
import { webhookView } from './webhooks.js';

export const UpdateStationBody = Type.Object(
  {
    name: newName(),
    location_id: Type.Optional(
      Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
        description: 'the id of a location of the organization, or null for none',
      }),
    ),
    region: Type.Optional(
      Type.String({
        maxLength: 32,
        description:
          "another home region, one of the installation's REGIONS: its agent's link closes and reconnects, and its jobs are dispatched there",
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * The stations request that changes a station as a body asks (operator and console alike); the
 * console's body has fewer of the fields.
 */
export function updateStationRequest(
  orgId: string,
  stationId: string,
  req: Partial<Static<typeof UpdateStationBody>>,
): UpdateStationRequest {
  return {
    orgId,
    stationId,
    name: req.name,
    locationId: req.location_id === undefined ? undefined : stationLocation(req.location_id),
    region: req.region,
  };
}

/** A location's changes: any of what it was created with. */
export const UpdateLocationBody = Type.Partial(CreateLocationBody);

/** The stations request that changes a location as a body asks (operator and console alike). */
export function updateLocationRequest(
  orgId: string,
  locationId: string,
  req: Static<typeof UpdateLocationBody>,
): UpdateLocationRequest {
  checkTimeZone(req.timezone);
  return { orgId, locationId, name: req.name, address: req.address, timezone: req.timezone };
}

const { name, kind, body: templateBody, fields } = CreateTemplateBody.properties;
export const UpdateTemplateBody = Type.Object(
  {
    name: Type.Optional(name),
    kind: Type.Optional(kind),
    body: Type.Optional(templateBody),
    fields: Type.Optional(fields),
  },
  { additionalProperties: false },
);

/** The actor recorded on jobs an operator's deletion fails (DESIGN §4). */
const ADMIN_ACTOR = 'admin';

export function auditView(entry: AuditEntry) {
  return {
    id: entry.id,
    at: rfc3339OrNull(entry.at),
    actor: entry.actor || null,
    session_id: entry.sessionId || null,
    org_id: entry.orgId || null,
    method: entry.method,
    route: entry.route || null,
    target: entry.target,
    status: entry.status === 0 ? null : entry.status,
    ip: entry.ip,
    user_agent: entry.userAgent,
    request_id: entry.requestId,
  };
}

type Ctx = Context & { state: GatewayState; params: Record<string, string> };

export function adminFleetRouter(deps: {
  backends: Backends;
  operatorToken: OperatorToken;
  bodyLimit: number;
}): Router<GatewayState> {
  const { accounts, jobs, stations, webhooks } = deps.backends;
  const router = new Router<GatewayState>({ prefix: '/admin/v1' });
  router.use(requireOperator(deps.operatorToken));
  router.use(refuseChangesWhileDeleting(accounts));

  const org = (ctx: Ctx) => ctx.params.org ?? '';
  const id = (ctx: Ctx) => ctx.params.id ?? '';
  /** Lists of an organization that does not exist answer 404, not an empty page. */
  const knownOrg = async (ctx: Ctx) => {
    await accounts.getOrg({ orgId: org(ctx) });
    return org(ctx);
  };

  router.get('/orgs', async (ctx) => {
    rejectUnknownParams(ctx.query, ['q', 'deleting', 'limit', 'cursor']);
    const res = await accounts.listOrgs({
      query: single(ctx.query, 'q') ?? '',
      deleting: booleanParam(ctx.query, 'deleting'),
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(orgView), next_cursor: res.nextCursor };
  });

  // Every organization's stations, or only the offline ones: "which stations are down?" in one
  // call rather than one per organization.
  router.get('/stations', async (ctx) => {
    rejectUnknownParams(ctx.query, ['offline', 'limit', 'cursor']);
    const res = await stations.listAllStations({
      offline: booleanParam(ctx.query, 'offline'),
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(adminStationView), next_cursor: res.nextCursor };
  });

  // Every organization's webhook endpoints, or those failing or disabled: the receivers in
  // trouble, in one call.
  router.get('/webhooks', async (ctx) => {
    rejectUnknownParams(ctx.query, ['state', 'limit', 'cursor']);
    const res = await webhooks.listAllEndpoints({
      state: single(ctx.query, 'state') ?? '',
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(webhookView), next_cursor: res.nextCursor };
  });

  router.get('/orgs/:org/stations', async (ctx) => {
    rejectUnknownParams(ctx.query, ['limit', 'cursor']);
    const res = await stations.listStations({
      orgId: await knownOrg(ctx),
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(adminStationView), next_cursor: res.nextCursor };
  });

  router.get('/orgs/:org/stations/:id', async (ctx) => {
    const { station } = await stations.getStation({ orgId: org(ctx), stationId: id(ctx) });
    ctx.body = { station: adminStationView(station) };
  });

  router.patch('/orgs/:org/stations/:id', async (ctx) => {
    const req = await changes(ctx, UpdateStationBody, deps.bodyLimit);
    const { station } = await stations.updateStation(updateStationRequest(org(ctx), id(ctx), req));
    ctx.body = { station: adminStationView(station) };
  });

  // Its unfinished jobs fail first (they could never print), then the station, its printers and
  // its token go; a retry after a failure in between finds the station still there.
  router.delete('/orgs/:org/stations/:id', async (ctx) => {
    const { station } = await stations.getStation({ orgId: org(ctx), stationId: id(ctx) });
    await jobs.failPrinterJobs({
      orgId: org(ctx),
      stationId: station?.id ?? '',
      printerIds: [],
      detail: 'its station was deleted',
      actor: ADMIN_ACTOR,
    });
    await stations.deleteStation({ orgId: org(ctx), stationId: id(ctx) });
    ctx.status = 204;
  });

  // Asks the station's linked agent for its log lines, printers and versions (docs/agent.md).
  router.post('/orgs/:org/stations/:id/diagnose', async (ctx) => {
    const req = await body(ctx, DiagnoseBody, deps.bodyLimit);
    const { report } = await stations.diagnoseStation(
      { orgId: org(ctx), stationId: id(ctx), logLines: req.log_lines ?? 0 },
      { deadlineMs: DIAGNOSE_DEADLINE_MS },
    );
    ctx.body = { diagnosis: diagnosisView(report) };
  });

  router.get('/orgs/:org/printers', async (ctx) => {
    rejectUnknownParams(ctx.query, ['limit', 'cursor', 'station_id', 'location_id']);
    const res = await stations.listPrinters({
      orgId: await knownOrg(ctx),
      ...listParams(ctx.query),
      stationId: single(ctx.query, 'station_id') ?? '',
      locationId: single(ctx.query, 'location_id') ?? '',
    });
    ctx.body = { items: res.items.map(printerView), next_cursor: res.nextCursor };
  });

  router.get('/orgs/:org/printers/:id', async (ctx) => {
    const { printer } = await stations.getPrinter({ orgId: org(ctx), printerId: id(ctx) });
    if (!printer) throw new Error('missing printer in response');
    ctx.body = { printer: printerView(printer) };
  });

  router.delete('/orgs/:org/printers/:id', async (ctx) => {
    await deletePrinter({ jobs, stations }, org(ctx), id(ctx), ADMIN_ACTOR);
    ctx.status = 204;
  });

  router.get('/orgs/:org/locations', async (ctx) => {
    rejectUnknownParams(ctx.query, ['limit', 'cursor']);
    const res = await stations.listLocations({
      orgId: await knownOrg(ctx),
      ...listParams(ctx.query),
      countStations: false,
    });
    ctx.body = { items: res.items.map(locationView), next_cursor: res.nextCursor };
  });

  router.get('/orgs/:org/locations/:id', async (ctx) => {
    const { location } = await stations.getLocation({ orgId: org(ctx), locationId: id(ctx) });
    ctx.body = { location: locationView(location) };
  });

  router.patch('/orgs/:org/locations/:id', async (ctx) => {
    const req = await changes(ctx, UpdateLocationBody, deps.bodyLimit);
    const { location } = await stations.updateLocation(
      updateLocationRequest(org(ctx), id(ctx), req),
    );
    ctx.body = { location: locationView(location) };
  });

  router.delete('/orgs/:org/locations/:id', async (ctx) => {
    await stations.deleteLocation({ orgId: org(ctx), locationId: id(ctx) });
    ctx.status = 204;
  });

  router.get('/orgs/:org/templates', async (ctx) => {
    rejectUnknownParams(ctx.query, ['limit', 'cursor']);
    const res = await jobs.listTemplates({ orgId: await knownOrg(ctx), ...listParams(ctx.query) });
    ctx.body = { items: res.items.map(templateView), next_cursor: res.nextCursor };
  });

  router.get('/orgs/:org/templates/:id', async (ctx) => {
    const { template } = await jobs.getTemplate({ orgId: org(ctx), templateId: id(ctx) });
    ctx.body = { template: templateView(template) };
  });

  router.patch('/orgs/:org/templates/:id', async (ctx) => {
    const req = await changes(ctx, UpdateTemplateBody, deps.bodyLimit);
    const { template } = await jobs.updateTemplate({
      orgId: org(ctx),
      templateId: id(ctx),
      name: req.name,
      kind: req.kind,
      body: req.body,
      setFields: req.fields !== undefined,
      fields: (req.fields ?? []).map((f) => ({
        name: f.name,
        required: f.required ?? f.default === undefined,
        defaultValue: f.default ?? '',
      })),
    });
    ctx.body = { template: templateView(template) };
  });

  router.delete('/orgs/:org/templates/:id', async (ctx) => {
    await jobs.deleteTemplate({ orgId: org(ctx), templateId: id(ctx) });
    ctx.status = 204;
  });

  // An integrator's job, as support looks at it: the job and its events, never its document.
  router.get('/orgs/:org/jobs', async (ctx) => {
    ctx.body = jobListView(await jobs.listJobs(listJobsRequest(ctx.query, await knownOrg(ctx))));
  });

  router.get('/orgs/:org/jobs/:id', async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    ctx.body = jobWithEventsView(await jobs.getJob({ orgId: org(ctx), jobId: id(ctx) }));
  });

  router.get('/audit', async (ctx) => {
    rejectUnknownParams(ctx.query, ['org', 'actor', 'since', 'until', 'limit', 'cursor']);
    const since = timeParam(single(ctx.query, 'since'), 'since');
    const until = timeParam(single(ctx.query, 'until'), 'until');
    if (since && until && since >= until) throw invalid('since must be before until', 'since');
    const res = await accounts.listAudit({
      orgId: single(ctx.query, 'org') ?? '',
      actor: single(ctx.query, 'actor') ?? '',
      since,
      until,
      ...listParams(ctx.query),
    });
    ctx.body = { items: res.items.map(auditView), next_cursor: res.nextCursor };
  });

  return router;
}
