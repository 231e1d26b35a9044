/**
 * The regions scenario's child: Spool in one region on one nats-server, then in two regions on a
 * supercluster of two nats-servers whose gateway connection runs through a proxy that delays it,
 * each region's services (in this process, as `spool dev` runs them) on one shared database. Jobs
 * go in through region a's gateway at a fixed rate to a station of region a and, in the second
 * setup, alternately to one of region b; a simulated agent prints each job as soon as it arrives.
 * POST → printed ends when the job's `job.printed` event reaches a subscriber of region a.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type System, startSystem } from '../cli/system.js';
import {
  type BusLayout,
  connectBus,
  type NatsConnection,
  SINGLE_REGION,
  subjects,
} from '../lib/bus.js';
import { SCOPES } from '../lib/credentials.js';
import { silentLogger } from '../lib/logger.js';
import { startNatsServer } from '../lib/nats-server.js';
import { connectLink, type LinkClient, printer } from '../test/helpers/link-client.js';
import { startTestSupercluster } from '../test/helpers/nats-cluster.js';
import { createTestDatabase } from '../test/helpers/postgres.js';
import { epochMs, sleep } from './clock.js';
import { serve } from './ipc.js';

const TOKEN = 'bench-regions-operator';

interface Region {
  system: System;
  url: string;
}

async function startRegion(databaseUrl: string, natsUrl: string, layout: BusLayout) {
  const system = await startSystem({
    databaseUrl,
    natsUrl,
    layout,
    logger: silentLogger,
    operatorToken: TOKEN,
    keyRateLimit: 0,
  });
  const gateway = await system.startGateway();
  return { system, url: gateway.url } satisfies Region;
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
  via: string,
  orgId: string,
  region: string,
  linkAddress: string,
): Promise<{ link: LinkClient; printerId: string }> {
  const { token } = await post<{ token: string }>(via, `/admin/v1/orgs/${orgId}/stations`, TOKEN, {
    name: `desk ${region}`,
    region,
  });
  const link = await connectLink(linkAddress, token, [printer('desk')]);
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
 * Posts a job a `1000 / rate` ms to the printers in turn for `durationMs`, through `via`, and
 * resolves each job's POST → printed, grouped by printer, once every job has printed.
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
  const postedAt = new Map<string, { at: number; printer: number }>();
  const samples: number[][] = printers.map(() => []);
  let printed = 0;
  const early = new Map<string, number>();
  const sub = nc.subscribe(subjects.event(orgId, 'job.printed'), {
    callback: (_err, msg) => {
      const id = (msg.json() as { data: { job: { id: string } } }).data.job.id;
      const posted = postedAt.get(id);
      if (!posted) {
        early.set(id, epochMs());
        return;
      }
      samples[posted.printer]?.push(epochMs() - posted.at);
      printed++;
    },
  });
  const started = epochMs();
  const posts: Array<Promise<void>> = [];
  for (let i = 0; epochMs() - started < durationMs; i++) {
    const printer = i % printers.length;
    const at = epochMs();
    posts.push(
      post<{ job: { id: string } }>(via, `/v1/orgs/${orgId}/jobs`, key, {
        printer_id: printers[printer],
        content: { type: 'text', data: `job ${i}` },
      }).then(({ job }) => {
        postedAt.set(job.id, { at, printer });
        const done = early.get(job.id);
        if (done !== undefined) {
          samples[printer]?.push(done - at);
          printed++;
        }
      }),
    );
    await sleep(Math.max(0, started + ((i + 1) * 1000) / rate - epochMs()));
  }
  await Promise.all(posts);
  const deadline = epochMs() + 30_000;
  while (printed < posts.length && epochMs() < deadline) await sleep(20);
  sub.unsubscribe();
  if (printed < posts.length) throw new Error(`${posts.length - printed} jobs did not print`);
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

/** One region alone: POST → printed of its own station's jobs. */
async function oneRegion(serverUrl: string, rate: number, durationMs: number): Promise<number[]> {
  const db = await createTestDatabase({ TEST_DATABASE_URL: serverUrl });
  const store = await mkdtemp(join(tmpdir(), 'spool-bench-nats-'));
  const nats = await startNatsServer({ storeDir: store });
  const region = await startRegion(db.url, nats.url, SINGLE_REGION);
  const nc = await connectBus({ url: nats.url, name: 'bench', logger: silentLogger });
  const station: { link?: LinkClient } = {};
  try {
    const { orgId, key } = await organization(region.url);
    const desk = await printingStation(
      region.url,
      orgId,
      SINGLE_REGION.region,
      region.system.linkAddress,
    );
    station.link = desk.link;
    const [samples] = await measure(nc, region.url, orgId, key, [desk.printerId], rate, durationMs);
    return samples ?? [];
  } finally {
    station.link?.close();
    await nc.close();
    await region.system.stop(1_000);
    await nats.stop();
    await rm(store, { recursive: true, force: true });
    await db.drop();
  }
}

/** Two regions `delayMs` apart: POST (in a) → printed, for a station in a and one in b. */
async function twoRegions(
  serverUrl: string,
  rate: number,
  durationMs: number,
  delayMs: number,
): Promise<{ same: number[]; cross: number[] }> {
  const regions = ['a', 'b'];
  const db = await createTestDatabase({ TEST_DATABASE_URL: serverUrl });
  const nats = await startTestSupercluster({ regions });
  nats.link.setDelay(delayMs);
  const started: Region[] = [];
  const links: LinkClient[] = [];
  let nc: NatsConnection | undefined;
  try {
    for (const name of regions) {
      const url = nats.regions[name]?.url as string;
      started.push(await startRegion(db.url, url, { region: name, regions, replicas: 1 }));
    }
    const [a, b] = started as [Region, Region];
    nc = await connectBus({
      url: nats.regions.a?.url as string,
      name: 'bench',
      logger: silentLogger,
    });
    const { orgId, key } = await organization(a.url);
    const deskA = await printingStation(a.url, orgId, 'a', a.system.linkAddress);
    const deskB = await printingStation(a.url, orgId, 'b', b.system.linkAddress);
    links.push(deskA.link, deskB.link);
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
  } finally {
    for (const link of links) link.close();
    await nc?.close();
    for (const region of started) await region.system.stop(1_000);
    await nats.stop();
    await db.drop();
  }
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
