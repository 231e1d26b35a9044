/**
 * The regions scenario's child: Spool in one region on one nats-server, then in two regions on a
 * supercluster of two nats-servers whose gateway connection runs through a proxy that delays it.
 * Each region is a `spool dev` process of its own (REGION, REGIONS, its region's NATS), both on one
 * fresh database. Jobs go in through region a's gateway at a fixed rate to a station of region a
 * and, in the second setup, alternately to one of region b; a simulated agent, linked to its
 * station's region, prints each job as soon as it arrives. POST → printed ends when the job's
 * `job.printed` event reaches a subscriber in region a. The first three seconds of jobs warm
 * the processes up and are not counted.
 */
import { randomBytes } from 'node:crypto';
import { connectBus, type NatsConnection, subjects } from '../lib/bus.js';
import { SCOPES } from '../lib/credentials.js';
import { silentLogger } from '../lib/logger.js';
import { startNatsServer } from '../lib/nats-server.js';
import { connectLink, type LinkClient, printer } from '../test/helpers/link-client.js';
import { startTestSupercluster } from '../test/helpers/nats-cluster.js';
import { freePort } from '../test/helpers/ports.js';
import { createTestDatabase } from '../test/helpers/postgres.js';
import { epochMs, sleep } from './clock.js';
import { serve, withStops } from './ipc.js';
import { requireAll } from './shortfall.js';
import { spawnSpool } from './spool-process.js';
import { harnessDir, type Stops } from './stops.js';

const TOKEN = 'bench-regions-operator';
/** Jobs of the first seconds after the processes start warm them up and are not counted. */
const WARM_UP_MS = 3_000;

interface Region {
  url: string;
  linkAddress: string;
}

/** Starts a region's `spool dev`, which `stops` stops and whose directory it removes. */
async function startRegion(
  stops: Stops,
  databaseUrl: string,
  natsUrl: string,
  regionEnv: Record<string, string>,
): Promise<Region> {
  const [port, stationPort] = [await freePort(), await freePort()];
  const dataDir = await harnessDir('spool-bench-region-');
  stops.push(dataDir.remove);
  const dev = spawnSpool(['dev'], {
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    PORT: String(port),
    STATION_PORT: String(stationPort),
    SPOOL_ADMIN_TOKEN: TOKEN,
    SPOOL_DATA_DIR: dataDir.path,
    KEY_RATE_LIMIT: '0',
    LOG_LEVEL: 'warn',
    ...regionEnv,
  });
  stops.push(() => dev.stop(5_000));
  await dev.waitFor(/Spool is running at/, 120_000);
  return { url: `http://127.0.0.1:${port}`, linkAddress: `127.0.0.1:${stationPort}` };
}

async function post<T>(url: string, path: string, token: string, body: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`POST ${path} answered ${res.status}`);
  return (await res.json()) as T;
}

/** A station of `region`, its agent linked to `linkAddress` and printing every job at once. */
async function printingStation(
  stops: Stops,
  via: string,
  orgId: string,
  region: string | undefined,
  linkAddress: string,
): Promise<{ link: LinkClient; printerId: string }> {
  const { token } = await post<{ token: string }>(via, `/admin/v1/orgs/${orgId}/stations`, TOKEN, {
    name: `desk ${region ?? ''}`,
    ...(region ? { region } : {}),
  });
  const link = await connectLink(linkAddress, token, [printer('desk')]);
  stops.push(async () => link.close());
  let seen = 0;
  const timer = setInterval(() => {
    for (; seen < link.jobs.length; seen++) {
      const { offer } = link.jobs[seen] as (typeof link.jobs)[number];
      link.send({ received: { jobId: offer.jobId, attempt: offer.attempt } });
      link.send({ result: { jobId: offer.jobId, attempt: offer.attempt, printed: true } });
    }
  }, 1);
  void link.ended.finally(() => clearInterval(timer));
  return { link, printerId: link.welcome.printerIds.desk as string };
}

/**
 * Posts a job every `1000 / rate` ms to the printers in turn for `durationMs` after the warm-up,
 * through `via`, and resolves each counted job's POST → printed, grouped by printer, once every
 * job has printed.
 */
async function measure(
  nc: NatsConnection,
  via: string,
  orgId: string,
  key: string,
  printers: string[],
  rate: number,
  durationMs: number,
): Promise<number[][]> {
  const posted = new Map<string, { at: number; printer: number; counted: boolean }>();
  const printedAt = new Map<string, number>();
  const sub = nc.subscribe(subjects.event(orgId, 'job.printed'), {
    callback: (_err, msg) => {
      const id = (msg.json() as { data: { job: { id: string } } }).data.job.id;
      if (!printedAt.has(id)) printedAt.set(id, epochMs());
    },
  });
  const started = epochMs();
  const posts: Array<Promise<void>> = [];
  // The first POST that failed: it ends the run (each POST is caught, so none goes unhandled).
  let failed: { error: unknown } | undefined;
  for (let i = 0; !failed && epochMs() - started < WARM_UP_MS + durationMs; i++) {
    const printer = i % printers.length;
    const at = epochMs();
    const counted = at - started >= WARM_UP_MS;
    posts.push(
      post<{ job: { id: string } }>(via, `/v1/orgs/${orgId}/jobs`, key, {
        printer_id: printers[printer],
        content: { type: 'text', data: `job ${i}` },
      }).then(
        ({ job }) => void posted.set(job.id, { at, printer, counted }),
        (error: unknown) => {
          failed ??= { error };
        },
      ),
    );
    await sleep(Math.max(0, started + ((i + 1) * 1000) / rate - epochMs()));
  }
  await Promise.all(posts);
  if (failed) {
    sub.unsubscribe();
    throw failed.error;
  }
  const deadline = epochMs() + 30_000;
  while ([...posted.keys()].some((id) => !printedAt.has(id)) && epochMs() < deadline) {
    await sleep(20);
  }
  sub.unsubscribe();
  const printed = [...posted.keys()].filter((id) => printedAt.has(id)).length;
  requireAll('regions: jobs printed within 30 s', posted.size, printed);
  const samples: number[][] = printers.map(() => []);
  for (const [id, p] of posted) {
    if (p.counted) samples[p.printer]?.push((printedAt.get(id) as number) - p.at);
  }
  return samples;
}

async function organization(via: string): Promise<{ orgId: string; key: string }> {
  const { org } = await post<{ org: { id: string } }>(via, '/admin/v1/orgs', TOKEN, {
    name: 'Regions',
  });
  const { secret } = await post<{ secret: string }>(via, `/admin/v1/orgs/${org.id}/keys`, TOKEN, {
    mode: 'live',
    scopes: SCOPES,
  });
  return { orgId: org.id, key: secret };
}

/** One region alone, on one nats-server: POST → printed of its own station's jobs. */
function oneRegion(serverUrl: string, rate: number, durationMs: number): Promise<number[]> {
  return withStops(async (stops) => {
    const db = await createTestDatabase({ TEST_DATABASE_URL: serverUrl });
    stops.push(() => db.drop());
    const store = await harnessDir('spool-bench-nats-');
    stops.push(store.remove);
    const nats = await startNatsServer({ storeDir: store.path });
    stops.push(() => nats.stop());
    const region = await startRegion(stops, db.url, nats.url, {});
    const nc = await connectBus({ url: nats.url, name: 'bench', logger: silentLogger });
    stops.push(() => nc.close());
    const { orgId, key } = await organization(region.url);
    const desk = await printingStation(stops, region.url, orgId, undefined, region.linkAddress);
    const [samples] = await measure(nc, region.url, orgId, key, [desk.printerId], rate, durationMs);
    return samples ?? [];
  });
}

/** Two regions `delayMs` apart: POST (in a) → printed, for a station in a and one in b. */
function twoRegions(
  serverUrl: string,
  rate: number,
  durationMs: number,
  delayMs: number,
): Promise<{ same: number[]; cross: number[] }> {
  return withStops(async (stops) => {
    const regions = ['a', 'b'];
    const db = await createTestDatabase({ TEST_DATABASE_URL: serverUrl });
    stops.push(() => db.drop());
    // Its servers' directories go with the harness's, even while it is still starting.
    const root = await harnessDir('spool-bench-supercluster-');
    stops.push(root.remove);
    const nats = await startTestSupercluster({ regions, root: root.path });
    stops.push(() => nats.stop());
    nats.link.setDelay(delayMs);
    // Either region's webhooks service opens the secrets the other sealed.
    const secretKey = randomBytes(32).toString('base64');
    // One after the other: the first applies the migrations and creates the global streams.
    const started: Region[] = [];
    for (const name of regions) {
      started.push(
        await startRegion(stops, db.url, nats.regions[name]?.url as string, {
          REGION: name,
          REGIONS: regions.join(','),
          WEBHOOK_SECRET_KEY: secretKey,
        }),
      );
    }
    const [a, b] = started as [Region, Region];
    const nc = await connectBus({
      url: nats.regions.a?.url as string,
      name: 'bench',
      logger: silentLogger,
    });
    stops.push(() => nc.close());
    const { orgId, key } = await organization(a.url);
    const deskA = await printingStation(stops, a.url, orgId, 'a', a.linkAddress);
    const deskB = await printingStation(stops, a.url, orgId, 'b', b.linkAddress);
    const [same, cross] = await measure(
      nc,
      a.url,
      orgId,
      key,
      [deskA.printerId, deskB.printerId],
      rate,
      durationMs,
    );
    return { same: same ?? [], cross: cross ?? [] };
  });
}

const handlers = {
  /** Both setups in turn; `serverUrl` is a PostgreSQL server on which databases are made. */
  async run(params: { serverUrl: string; rate: number; durationMs: number; delayMs: number }) {
    const alone = await oneRegion(params.serverUrl, params.rate, params.durationMs);
    const two = await twoRegions(params.serverUrl, params.rate, params.durationMs, params.delayMs);
    return { alone, ...two };
  },
};

export type RegionsApi = typeof handlers;

serve(handlers);
