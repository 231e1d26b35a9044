/**
 * Sets up the organizations the scenarios use, through the operator API: keys, stations, their
 * printers (a printer exists once its agent has said hello) and webhook endpoints.
 */
import type { AgentsApi } from './agents.js';
import { type Context, type Orgs, PATHS } from './context.js';
import { startChild } from './ipc.js';

/** The 20 endpoints an organization may have (spec §8). */
export const ENDPOINTS_PER_ORG = 20;

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
    if (res.failed > 0) throw new Error(`agents could not connect: ${res.errors.join('; ')}`);
    await agents.call('disconnect');
    return res.printerIds;
  } finally {
    await agents.stop();
  }
}

export async function setUpOrgs(ctx: Context): Promise<Orgs> {
  const { admin, servers } = ctx;
  const [ingestOrg, e2eOrg, fanoutOrg] = await Promise.all([
    admin.createOrg('bench ingest'),
    admin.createOrg('bench end to end'),
    admin.createOrg('bench fan-out'),
  ]);
  const [ingestKey, e2eKey, fanoutKey] = await Promise.all([
    admin.createKey(ingestOrg),
    admin.createKey(e2eOrg),
    admin.createKey(fanoutOrg),
  ]);
  const [ingestStation] = await admin.createStations(ingestOrg, 1);
  const [fanoutStation] = await admin.createStations(fanoutOrg, 1);
  const e2eStations = await admin.createStations(e2eOrg, ctx.options.agents);
  const offline = await offlinePrinters(ctx, [
    ingestStation?.token as string,
    fanoutStation?.token as string,
  ]);

  await admin.createWebhook(e2eOrg, `http://127.0.0.1:${ctx.receiverPorts[0]}${PATHS.e2e}`, [
    'job.printed',
  ]);
  for (const port of ctx.receiverPorts.slice(0, ENDPOINTS_PER_ORG)) {
    await admin.createWebhook(fanoutOrg, `http://127.0.0.1:${port}${PATHS.fanout}`, [
      'job.created',
    ]);
  }

  const connected = await ctx.agents.call('connect', {
    address: servers.linkAddress,
    tokens: e2eStations.map((s) => s.token),
    streamsPerChannel: 100,
    concurrency: 16,
  });
  if (connected.failed > 0) {
    throw new Error(`agents could not connect: ${connected.errors.join('; ')}`);
  }
  await ctx.load.call('watchPrinted', { natsUrl: servers.natsUrl, orgIds: [e2eOrg] });
  const base = { spoolUrl: servers.spoolUrl };
  return {
    ingest: { ...base, key: ingestKey, orgId: ingestOrg, printerIds: [offline[0] as string] },
    e2e: { ...base, key: e2eKey, orgId: e2eOrg, printerIds: connected.printerIds },
    fanout: { ...base, key: fanoutKey, orgId: fanoutOrg, printerIds: [offline[1] as string] },
  };
}
