/**
 * Stations replicas that die: one killed without recording its links' ends (here it loses the
 * database first) leaves its stations online in the database, until another replica, having not
 * heard from it for REPLICA_LOST_MS, records them offline and sends `station.offline`. A replica
 * that was alive all along, only taken for lost, records its stations online again at its links'
 * next re-read, and its links stay open.
 */
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { createPool } from '../lib/db.js';
import { createClient } from '../lib/grpc.js';
import { silentLogger } from '../lib/logger.js';
import { createStations, type StationsPart, startLinkServer } from '../services/stations/index.js';
import { REPLICA_LOST_MS } from '../services/stations/replicas.js';
import { collectEvents, type EventLog } from './helpers/events.js';
import { connectLink, printer } from './helpers/link-client.js';
import {
  call,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import { TcpRelay } from './helpers/tcp-relay.js';

const HOUR = 60 * 60 * 1000;

const test = anyTest as TestFn<{ sys: TestSystem; events: EventLog; orgId: string }>;

test.before(async (t) => {
  const sys = await startTestSystem();
  const events = await collectEvents(sys.nats.url);
  t.context = { sys, events, orgId: await createOrg(sys.url) };
});

test.after.always(async (t) => {
  await t.context.events?.close();
  await t.context.sys?.stop();
});

/** Another stations replica on the same database (through `databasePort`) and NATS. */
async function replica(
  t: { context: { sys: TestSystem }; teardown(fn: () => Promise<unknown>): void },
  databasePort?: number,
): Promise<{ part: StationsPart; linkAddress: string }> {
  const { sys } = t.context;
  const url = new URL(sys.db.url);
  if (databasePort !== undefined) url.port = String(databasePort);
  const pool = createPool({ url: url.toString(), max: 4 });
  const part = await createStations({
    pool,
    nc: sys.system.nc,
    logger: silentLogger,
    clock: sys.clock,
    jobs: createClient(JobsServiceClient, {
      service: 'jobs',
      address: sys.system.servicesAddress,
      deadlineMs: 2_000,
    }),
    replicaBeatMs: HOUR,
  });
  // Its first beat, as it starts, is in by the time the test moves the clock.
  await part.replica.beat();
  const server = await startLinkServer(part, '127.0.0.1', 0);
  t.teardown(async () => {
    await server.shutdown(0);
    await part.stop();
    await pool.end();
  });
  return { part, linkAddress: `127.0.0.1:${server.port}` };
}

async function stationOnline(sys: TestSystem, orgId: string, id: string): Promise<boolean> {
  const res = await call<{ station: { online: boolean } }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${orgId}/stations/${id}`,
    { token: OPERATOR_TOKEN },
  );
  return res.body.station.online;
}

/**
 * A station linked through another replica, which then loses the database, and then its agent
 * too: the link's end is not recorded, nor is the replica heard from again.
 */
async function linkedToDyingReplica(
  t: ExecutionContext<{ sys: TestSystem; orgId: string }>,
  name: string,
): Promise<{ id: string }> {
  const { sys, orgId } = t.context;
  const station = await createStation(sys.url, orgId, { name });
  const database = await TcpRelay.start(Number(new URL(sys.db.url).port));
  t.teardown(() => database.close());
  const dying = await replica(t, database.port);
  const link = await connectLink(dying.linkAddress, station.token, [printer('desk')]);
  await eventually(
    () => stationOnline(sys, orgId, station.id),
    (online) => online,
  );
  database.cut();
  dying.part.replica.stop();
  link.close();
  await link.ended;
  return station;
}

test.serial(
  'the stations of a replica that died unheard are recorded offline by another after a minute',
  async (t) => {
    const { sys, events, orgId } = t.context;
    const station = await linkedToDyingReplica(t, 'Annex');
    t.true(await stationOnline(sys, orgId, station.id), 'still online in the database');

    const watcher = sys.system.stations.replica;
    sys.clock.advance(REPLICA_LOST_MS - 1_000);
    t.is(await watcher.beat(), 0, 'not yet: the replica was heard from less than a minute ago');
    t.true(await stationOnline(sys, orgId, station.id));
    sys.clock.advance(2_000);
    t.is(await watcher.beat(), 1);
    t.false(await stationOnline(sys, orgId, station.id));
    await events.waitFor((e) => e.type === 'station.offline' && e.data.station_id === station.id);
    t.is(await watcher.beat(), 0, 'once');
  },
);

test.serial(
  'a replica taken for lost records its stations online again at the next re-read, its links open',
  async (t) => {
    const { sys, events, orgId } = t.context;
    const station = await createStation(sys.url, orgId, { name: 'Loft' });
    const link = await connectLink(sys.linkAddress, station.token, [printer('desk')]);
    let ended = false;
    void link.ended.then(() => {
      ended = true;
    });
    await eventually(
      () => stationOnline(sys, orgId, station.id),
      (online) => online,
    );
    const other = await replica(t);

    // The system's replica says nothing for a minute (its beat waits for the test), and the other
    // takes it for lost.
    sys.clock.advance(REPLICA_LOST_MS + 1_000);
    t.is(await other.part.replica.beat(), 1);
    t.false(await stationOnline(sys, orgId, station.id));
    const offlineAt = events.events.length;

    await sys.system.stations.links.resync();
    t.true(await stationOnline(sys, orgId, station.id));
    await events.waitFor(
      (e) =>
        e.type === 'station.online' &&
        e.data.station_id === station.id &&
        events.events.indexOf(e) >= offlineAt,
    );
    t.false(ended, 'the link stayed open');
    // Recording them online said the replica is alive: the other does not take them again.
    t.is(await other.part.replica.beat(), 0);
    t.true(await stationOnline(sys, orgId, station.id));
    link.close();
  },
);

test.serial(
  'of the live replicas, the one of the smallest id records a lost one’s links closed',
  async (t) => {
    const { sys, orgId } = t.context;
    const station = await linkedToDyingReplica(t, 'Annex B');

    const live = [
      sys.system.stations.replica,
      (await replica(t)).part.replica,
      (await replica(t)).part.replica,
    ];
    // All three say they are alive shortly before the dead one is taken for lost.
    sys.clock.advance(REPLICA_LOST_MS - 5_000);
    for (const r of live) t.is(await r.beat(), 0);
    sys.clock.advance(10_000);
    // Largest id first: neither of the two larger sweeps; the smallest does.
    const byId = [...live].sort((a, b) => (a.id < b.id ? 1 : -1));
    t.deepEqual(await Promise.all(byId.slice(0, 2).map((r) => r.beat())), [0, 0]);
    t.true(await stationOnline(sys, orgId, station.id), 'left to the smallest id');
    t.is(await byId[2]?.beat(), 1);
    t.false(await stationOnline(sys, orgId, station.id));
  },
);
