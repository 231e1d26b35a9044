/**
 * The console's view of an organization as a whole (docs/console-api.md): the overview of its
 * stations, printers and the day's jobs, and its settings.
 */
import { Type } from '@sinclair/typebox';
import { invalid } from '../../lib/errors.js';
import { rfc3339 } from '../../lib/time.js';
import { changes } from '../body.js';
import type { Backends } from '../clients.js';
import { rejectUnknownParams } from '../query.js';
import { newName } from './admin.js';
import { allStations } from './console-fleet.js';
import type { ConsoleKit } from './console-kit.js';

const OrgSettingsBody = Type.Object(
  {
    name: newName(),
    job_document_retention_days: Type.Optional(Type.Integer()),
    upload_retention_days: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
);

/** The organization's settings as the console shows them: its name and the retention it has. */
async function orgSettings(accounts: Backends['accounts'], orgId: string) {
  const [{ org }, { settings }] = await Promise.all([
    accounts.getOrg({ orgId }),
    accounts.getSettings({}),
  ]);
  return {
    id: org?.id ?? orgId,
    name: org?.name ?? '',
    job_document_retention_days: settings?.jobDocumentRetentionDays ?? 0,
    upload_retention_days: settings?.uploadRetentionDays ?? 0,
  };
}

/** An organization's overview and settings. */
export function orgRoutes(kit: ConsoleKit): void {
  const { router, deps, signedIn, role, orgOf } = kit;
  const { accounts, jobs, stations } = deps.backends;

  router.get('/orgs/:org/overview', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    const orgId = orgOf(ctx);
    const now = deps.sessions.clock.now();
    const startOfDay = new Date(
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()),
    );
    const [all, printerCounts, today] = await Promise.all([
      allStations(stations, orgId),
      (async () => {
        const counts: Record<string, number> = {};
        let cursor = '';
        let seen = 0;
        do {
          const res = await stations.listPrinters({
            orgId,
            limit: 200,
            cursor,
            stationId: '',
            locationId: '',
          });
          for (const p of res.items) {
            // A printer whose station is not connected cannot print, whatever it last reported.
            const status = p.stationOnline || p.status === 'removed' ? p.status : 'unreachable';
            counts[status] = (counts[status] ?? 0) + 1;
          }
          seen += res.items.length;
          cursor = res.nextCursor;
        } while (cursor !== '' && seen < 10_000);
        return counts;
      })(),
      jobs.listJobs({
        orgId,
        limit: 1,
        cursor: '',
        statuses: [],
        reference: '',
        printerId: '',
        stationId: '',
        createdAfter: startOfDay,
        createdBefore: undefined,
      }),
    ]);
    ctx.body = {
      stations: { online: all.filter((s) => s.online).length, total: all.length },
      printers: printerCounts,
      jobs_today: Object.fromEntries(Object.entries(today.counts).map(([k, v]) => [k, Number(v)])),
      since: rfc3339(startOfDay),
    };
  });

  router.get('/orgs/:org/settings', signedIn, role('viewer'), async (ctx) => {
    rejectUnknownParams(ctx.query, []);
    ctx.body = { settings: await orgSettings(accounts, orgOf(ctx)) };
  });

  router.patch('/orgs/:org/settings', signedIn, role('owner'), async (ctx) => {
    const req = await changes(ctx, OrgSettingsBody, deps.bodyLimit);
    const current = await orgSettings(accounts, orgOf(ctx));
    // Retention is the installation's, set by the operator: an unchanged value passes.
    for (const param of ['job_document_retention_days', 'upload_retention_days'] as const) {
      if (req[param] !== undefined && req[param] !== current[param]) {
        throw invalid(
          `${param} is set for the whole installation by its operator (spool admin settings set), not per organization`,
          param,
        );
      }
    }
    if (req.name !== undefined) {
      await accounts.renameOrg({ orgId: orgOf(ctx), name: req.name });
      // Sessions carry their organizations' names: here at once, elsewhere when the bus tells.
      deps.sessions.cache.clear();
    }
    ctx.body = { settings: await orgSettings(accounts, orgOf(ctx)) };
  });
}
