/**
 * Sets up the organizations the scenarios use, through the operator API: keys, stations, their
 * printers (a printer exists once its agent has said hello) and webhook endpoints.
 */
import type { Admin } from './admin.js';
import type { AgentsApi } from './agents.js';
import { type Context, type Orgs, PATHS } from './context.js';
import { type Child, startChild } from './ipc.js';
import type { JobTarget } from './jobs-client.js';
import { requireAll } from './shortfall.js';

/** The 20 endpoints an organization may have (spec §8). */
export const ENDPOINTS_PER_ORG = 20;

/** The links an agents process opened: those that were welcomed with a printer. */
const linked = (res: { printerIds: string[] }) => res.printerIds.filter(Boolean).length;

/** Registers the printers of `tokens` by connecting their agents once, then leaves them offline. */
async function offlinePrinters(ctx: Context, tokens: string[]): Promise<string[]> {
  const agents = await startChild<AgentsApi>('agents.ts');
  try {
    const res = await agents.call('connect', {
      address: ctx.servers.linkAddress,
      tokens,
      streamsPerChannel: 100,
      concurrency: 16,
    });
    requireAll('offline printers: agents connected', tokens.length, linked(res), res.errors);
    await agents.call('disconnect');
    return res.printerIds;
  } finally {
    await agents.stop();
  }
}

/**
 * An organization whose printers print: `count` stations whose agents `agents` links to
 * `linkAddress`, an API key, and one webhook endpoint for `job.printed` at `webhookUrl`; the load
 * process notes when each of its `job.printed` events reaches `natsUrl`.
 */
export async function setUpPrintingOrg(
  ctx: Context,
  spool: {
    admin: Admin;
    url: string;
    linkAddress: string;
    natsUrl: string;
    agents: Child<AgentsApi>;
  },
  name: string,
  webhookUrl: string,
): Promise<JobTarget> {
  const { admin } = spool;
  const orgId = await admin.createOrg(name);
  const [key, stations] = await Promise.all([
    admin.createKey(orgId),
    admin.createStations(orgId, ctx.options.agents),
  ]);
  await admin.createWebhook(orgId, webhookUrl, ['job.printed']);
  const connected = await spool.agents.call('connect', {
    address: spool.linkAddress,
    tokens: stations.map((s) => s.token),
    streamsPerChannel: 100,
    concurrency: 16,
  });
  requireAll(`${name}: agents connected`, stations.length, linked(connected), connected.errors);
  await ctx.load.call('watchPrinted', { natsUrl: spool.natsUrl, orgIds: [orgId] });
  return { spoolUrl: spool.url, key, orgId, printerIds: connected.printerIds };
}

export async function setUpOrgs(ctx: Context): Promise<Orgs> {
  const { admin, servers } = ctx;
  const [ingestOrg, fanoutOrg] = await Promise.all([
    admin.createOrg('bench ingest'),
    admin.createOrg('bench fan-out'),
  ]);
  const [ingestKey, fanoutKey] = await Promise.all([
    admin.createKey(ingestOrg),
    admin.createKey(fanoutOrg),
  ]);
  const [ingestStation] = await admin.createStations(ingestOrg, 1);
  const [fanoutStation] = await admin.createStations(fanoutOrg, 1);
  const offline = await offlinePrinters(ctx, [
    ingestStation?.token as string,
    fanoutStation?.token as string,
  ]);
  for (const port of ctx.receiverPorts.slice(0, ENDPOINTS_PER_ORG)) {
    await admin.createWebhook(fanoutOrg, `http://127.0.0.1:${port}${PATHS.fanout}`, [
      'job.created',
    ]);
  }

  const e2e = await setUpPrintingOrg(
    ctx,
    {
      admin,
      url: servers.spoolUrl,
      linkAddress: servers.linkAddress,
      natsUrl: servers.natsUrl,
      agents: ctx.agents,
    },
    'bench end to end',
    `http://127.0.0.1:${ctx.receiverPorts[0]}${PATHS.e2e}`,
  );
  const base = { spoolUrl: servers.spoolUrl };
  return {
    ingest: { ...base, key: ingestKey, orgId: ingestOrg, printerIds: [offline[0] as string] },
    e2e,
    fanout: { ...base, key: fanoutKey, orgId: fanoutOrg, printerIds: [offline[1] as string] },
  };
}
