/**
 * Two regions, each with its own services, gateway and station link, on a NATS supercluster of
 * two clusters (one per region) whose gateway connections run through a proxy the tests cut and
 * restore. Both regions share one database, as both would share one CockroachDB cluster.
 */
import { randomBytes } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { jetstreamManager } from '@nats-io/jetstream';
import anyTest, { type TestFn } from 'ava';
import { type GatewayReplica, type System, startSystem } from '../cli/system.js';
import { type BusLayout, connectBus, type NatsConnection } from '../lib/bus.js';
import { SCOPES } from '../lib/credentials.js';
import { silentLogger } from '../lib/logger.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { startTestSupercluster, type TestSupercluster } from './helpers/nats-cluster.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
} from './helpers/system.js';
import { webhookAdmin } from './helpers/webhooks.js';

const REGIONS = ['a', 'b'] as const;
type Region = (typeof REGIONS)[number];

interface RegionParts {
  system: System;
  gateway: GatewayReplica;
}

interface Ctx {
  nats: TestSupercluster;
  db: TestDatabase;
  region: Record<Region, RegionParts>;
  receiver: Receiver;
  orgId: string;
  key: string;
  /** A station of each region, its token and the printer its link reported. */
  stations: Record<Region, { id: string; token: string; printerId: string }>;
  links: LinkClient[];
}

const test = anyTest as TestFn<Ctx>;

interface JobBody {
  job: { id: string; status: string; region: string; station_id: string };
  events: Array<{ status: string; actor: string }>;
}

test.before(async (t) => {
  const [nats, db, receiver] = await Promise.all([
    startTestSupercluster({ regions: [...REGIONS] }),
    createTestDatabase(),
    startReceiver(),
  ]);
  // Every region's webhooks service opens the secrets any region sealed.
  const secretKey = randomBytes(32);
  const region = {} as Record<Region, RegionParts>;
  for (const name of REGIONS) {
    const layout: BusLayout = { region: name, regions: REGIONS, replicas: 1 };
    const system = await startSystem({
      databaseUrl: db.url,
      natsUrl: nats.regions[name]?.url as string,
      layout,
      logger: silentLogger,
      operatorToken: OPERATOR_TOKEN,
      fetchAllowInsecure: true,
      webhooks: { allowInsecure: true, secretKey, pollMs: 100 },
    });
    region[name] = { system, gateway: await system.startGateway() };
  }
  const base = region.a.gateway.url;
  const orgId = await createOrg(base);
  const key = (await createKey(base, orgId, { scopes: SCOPES })).secret;
  await webhookAdmin(base, OPERATOR_TOKEN, orgId).create(receiver.url, [
    'job.printed',
    'job.failed',
  ]);
  const stations = {} as Ctx['stations'];
  const links: LinkClient[] = [];
  for (const name of REGIONS) {
    const station = await createStation(base, orgId, { name: `desk ${name}`, region: name });
    const link = await connectLink(region[name].system.linkAddress, station.token, [
      printer('desk'),
    ]);
    links.push(link);
    stations[name] = { ...station, printerId: link.welcome.printerIds.desk as string };
  }
  t.context = { nats, db, region, receiver, orgId, key, stations, links };
});

test.after.always(async (t) => {
  const c = t.context;
  for (const link of c.links ?? []) link.close();
  for (const name of REGIONS) await c.region?.[name]?.system.stop(1_000);
  await c.receiver?.close();
  await c.nats?.stop();
  await c.db?.drop();
});

function api<T = JobBody>(
  t: { context: Ctx },
  via: Region,
  method: string,
  path: string,
  body?: unknown,
) {
  return call<T>(t.context.region[via].gateway.url, method, `/v1/orgs/${t.context.orgId}${path}`, {
    token: t.context.key,
    ...(body === undefined ? {} : { body }),
  });
}

async function createJob(t: { context: Ctx }, via: Region, printerId: string, title: string) {
  const res = await api(t, via, 'POST', '/jobs', {
    printer_id: printerId,
    title,
    content: { type: 'text', data: title },
  });
  if (res.status !== 201) throw new Error(`create answered ${res.status}`);
  return res.body.job;
}

function jobStatus(t: { context: Ctx }, id: string, status: string, timeoutMs = 15_000) {
  return eventually(
    () => api(t, 'a', 'GET', `/jobs/${id}`),
    (res) => res.body.job?.status === status,
    timeoutMs,
  );
}

/** Connects a link for `station` and takes every offer it gets to printed. */
async function printingLink(address: string, token: string): Promise<LinkClient> {
  const link = await connectLink(address, token, [printer('desk')]);
  printAll(link);
  return link;
}

function printAll(link: LinkClient): void {
  const done = new Set<string>();
  const step = () => {
    for (const { offer } of link.jobs) {
      if (done.has(offer.jobId)) continue;
      done.add(offer.jobId);
      link.send({ received: { jobId: offer.jobId, attempt: offer.attempt } });
      link.send({
        result: { jobId: offer.jobId, attempt: offer.attempt, printed: true, detail: '' },
      });
    }
  };
  const timer = setInterval(step, 20);
  void link.ended.finally(() => clearInterval(timer));
}

async function streamPlacement(url: string, stream: string) {
  const nc: NatsConnection = await connectBus({ url, name: 'test', logger: silentLogger });
  try {
    const info = await (await jetstreamManager(nc)).streams.info(stream);
    return { cluster: info.cluster?.name, messages: info.state.messages };
  } finally {
    await nc.close();
  }
}

test.serial(
  "a job created through region a's gateway for a station of region b is printed there, and says so",
  async (t) => {
    const { stations, links } = t.context;
    const linkB = links[1] as LinkClient;
    t.is(linkB.welcome.homeRegion, 'b');
    t.is(linkB.welcome.serverRegion, 'b');

    const job = await createJob(t, 'a', stations.b.printerId, 'to b');
    t.is(job.region, 'b');
    await linkB.until(() => linkB.jobs.some((j) => j.offer.jobId === job.id));
    linkB.send({ received: { jobId: job.id, attempt: 1 } });
    linkB.send({ result: { jobId: job.id, attempt: 1, printed: true, detail: '' } });
    const printed = await jobStatus(t, job.id, 'printed');
    t.is(printed.body.job.region, 'b');
    t.deepEqual(
      printed.body.events.map((e) => e.status),
      ['queued', 'sent', 'printed'],
    );

    // The offer was kept in region b's stream, which lives in b's cluster; a's holds nothing.
    const url = t.context.nats.regions.a?.url as string;
    const dispatchB = await streamPlacement(url, 'DISPATCH_b');
    t.is(dispatchB.cluster, 'b');
    t.true(dispatchB.messages >= 1);
    t.deepEqual(await streamPlacement(url, 'DISPATCH_a'), { cluster: 'a', messages: 0 });
    t.is((await streamPlacement(url, 'REPORTS_b')).cluster, 'b');
    t.is((await streamPlacement(url, 'EVENTS')).cluster, 'a');

    const hook = await t.context.receiver.until((reqs) =>
      reqs.some((r) => JSON.parse(r.body.toString()).data.job?.id === job.id),
    );
    const delivered = hook.find((r) => JSON.parse(r.body.toString()).data.job?.id === job.id);
    t.is(JSON.parse(delivered?.body.toString() ?? '{}').data.job.region, 'b');

    const list = await api<{ printers: Array<{ id: string; region: string }> }>(
      t,
      'b',
      'GET',
      '/printers',
    );
    const regionOf = Object.fromEntries(list.body.printers.map((p) => [p.id, p.region]));
    t.is(regionOf[stations.a.printerId], 'a');
    t.is(regionOf[stations.b.printerId], 'b');
  },
);

test.serial(
  "an agent that reaches another region's link is served there, and told its home region",
  async (t) => {
    const { stations, region } = t.context;
    // This link replaces the station's own one in region b.
    const away = await printingLink(region.a.system.linkAddress, stations.b.token);
    t.teardown(() => away.close());
    t.is(away.welcome.homeRegion, 'b');
    t.is(away.welcome.serverRegion, 'a');
    // Created as the link opens: its offer may be published in region b before b's NATS hears of
    // the link's subscription in a, and then the link's second read of its jobs offers it.
    const job = await createJob(t, 'b', stations.b.printerId, 'served away');
    const printed = await jobStatus(t, job.id, 'printed');
    t.is(printed.body.job.region, 'b');
  },
);

test.serial(
  'an operator moves a station to another region: its link closes and its jobs follow',
  async (t) => {
    const { stations, region, orgId } = t.context;
    const link = await printingLink(region.b.system.linkAddress, stations.b.token);
    const move = (to: string, via = region.b.gateway.url) =>
      call<{ station: { region: string }; error: { code: string; param: string } }>(
        via,
        'PATCH',
        `/admin/v1/orgs/${orgId}/stations/${stations.b.id}`,
        { token: OPERATOR_TOKEN, body: { region: to } },
      );
    const moved = await move('a');
    t.is(moved.status, 200);
    t.is(moved.body.station.region, 'a');
    const ended = await link.ended;
    t.is(ended?.code, GrpcStatus.UNAVAILABLE);

    const unknown = await move('mars');
    t.is(unknown.status, 400);
    t.is(unknown.body.error.param, 'region');

    const home = await printingLink(region.a.system.linkAddress, stations.b.token);
    t.teardown(() => home.close());
    t.is(home.welcome.homeRegion, 'a');
    t.is(home.welcome.serverRegion, 'a');
    const job = await createJob(t, 'b', stations.b.printerId, 'after the move');
    t.is(job.region, 'a');
    await jobStatus(t, job.id, 'printed');

    // Back home, for the tests after this one.
    const back = await move('b', region.a.gateway.url);
    t.is(back.status, 200);
    await home.ended;
  },
);

test.serial(
  'cut between regions, each prints what its stations hold; the rest flows when the link heals, once each',
  async (t) => {
    const { stations, region, nats, receiver } = t.context;
    const linkA = await printingLink(region.a.system.linkAddress, stations.a.token);
    const linkB = await connectLink(region.b.system.linkAddress, stations.b.token, [
      printer('desk'),
    ]);
    t.teardown(() => {
      linkA.close();
      linkB.close();
    });
    // Region b's station holds a job before the cut: offered and received, not yet printed.
    const held = await createJob(t, 'a', stations.b.printerId, 'held in b');
    await linkB.until(() => linkB.jobs.some((j) => j.offer.jobId === held.id));
    linkB.send({ received: { jobId: held.id, attempt: 1 } });
    await jobStatus(t, held.id, 'sent');

    await nats.link.cut();
    // Each region goes on printing for its own stations.
    const inA = await createJob(t, 'a', stations.a.printerId, 'a during the cut');
    await jobStatus(t, inA.id, 'printed');
    linkB.send({ result: { jobId: held.id, attempt: 1, printed: true, detail: '' } });
    await jobStatus(t, held.id, 'printed');
    const inB = await createJob(t, 'b', stations.b.printerId, 'b during the cut');
    await linkB.until(() => linkB.jobs.some((j) => j.offer.jobId === inB.id));
    // A job for b made through a: its offer cannot cross now; it waits in the outbox.
    const across = await createJob(t, 'a', stations.b.printerId, 'a to b during the cut');
    printAll(linkB);
    await jobStatus(t, inB.id, 'printed');

    nats.link.restore();
    const jobs = [held, inA, inB, across];
    for (const job of jobs) await jobStatus(t, job.id, 'printed', 30_000);

    // Every job printed once, and every job.printed delivered once, including the events
    // region b wrote while region a's EVENTS stream was out of reach.
    for (const job of jobs) {
      const offers = [...linkA.jobs, ...linkB.jobs].filter((j) => j.offer.jobId === job.id);
      t.is(new Set(offers.map((o) => o.offer.attempt)).size, 1, `${job.id} printed once`);
    }
    const printedHooks = (reqs: typeof receiver.requests) =>
      reqs
        .map((r) => JSON.parse(r.body.toString()))
        .filter((b) => b.type === 'job.printed' && jobs.some((j) => j.id === b.data.job.id));
    const reqs = await receiver.until((r) => printedHooks(r).length >= jobs.length, 30_000);
    const ids = printedHooks(reqs).map((b) => b.data.job.id);
    t.is(ids.length, jobs.length);
    t.deepEqual(ids.sort(), jobs.map((j) => j.id).sort());
  },
);
