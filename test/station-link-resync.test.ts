/**
 * The reads of pending jobs a stations replica makes for the links it holds, in batches: when
 * many links open at once each gets its own station's jobs, and at a re-read (after NATS
 * reconnects, and every minute) tokens revoked or replaced meanwhile end their links and jobs
 * whose dispatch messages the replica missed reach their stations. The jobs service answers each
 * station of such a batch only within the organization it was asked with.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import test from 'ava';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { connectBus } from '../lib/bus.js';
import { SCOPES } from '../lib/credentials.js';
import { createClient } from '../lib/grpc.js';
import { silentLogger } from '../lib/logger.js';
import { createStations, startLinkServer } from '../services/stations/index.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';

/**
 * A stations replica of its own, whose NATS connection runs through a proxy the test can cut, so
 * that messages published meanwhile (dispatches, revocations) never reach it.
 */
async function startReplica(
  t: import('ava').ExecutionContext,
  sys: TestSystem,
  options: { receivedHoldMs?: number } = {},
) {
  const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: sys.nats.port } });
  const nc = await connectBus({
    url: `nats://127.0.0.1:${proxy.port}`,
    name: 'replica',
    logger: silentLogger,
  });
  const jobs = createClient(JobsServiceClient, {
    service: 'jobs',
    address: sys.system.servicesAddress,
  });
  const stations = await createStations({
    pool: sys.system.pool,
    nc,
    logger: silentLogger,
    clock: sys.clock,
    jobs,
    ...options,
  });
  const server = await startLinkServer(stations, '127.0.0.1', 0);
  const links: LinkClient[] = [];
  t.teardown(async () => {
    for (const l of links) l.close();
    await stations.stop();
    await server.shutdown(100);
    jobs.close();
    await nc.close();
    await proxy.stop();
  });
  return {
    links: stations.links,
    async connect(token: string, printers = [printer('desk')]) {
      const link = await connectLink(`127.0.0.1:${server.port}`, token, printers);
      links.push(link);
      return link;
    },
    /** Runs `during` while the replica is away from NATS, then waits until it is back. */
    async away(during: () => Promise<void>) {
      const statuses = nc.status()[Symbol.asyncIterator]();
      const until = async (type: string) => {
        for (;;) if ((await statuses.next()).value?.type === type) return;
      };
      await proxy.cut();
      await until('disconnect');
      await during();
      proxy.restore();
      await until('reconnect');
    },
  };
}

test('a token revoked or replaced while its revocation did not reach the replica ends its link at the next re-read; other links stay', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const replica = await startReplica(t, sys);
  const [revoked, rotated, kept] = await Promise.all(
    ['revoked', 'rotated', 'kept'].map((name) => createStation(sys.url, orgId, { name })),
  );
  const station = (s: { id: string } | undefined) => `/admin/v1/orgs/${orgId}/stations/${s?.id}`;
  const [revokedLink, rotatedLink, keptLink] = await Promise.all(
    [revoked, rotated, kept].map((s) => replica.connect(s?.token as string)),
  );

  await replica.away(async () => {
    const revoke = await call(sys.url, 'DELETE', `${station(revoked)}/token`, {
      token: OPERATOR_TOKEN,
    });
    t.is(revoke.status, 204);
    const rotate = await call(sys.url, 'POST', `${station(rotated)}/token`, {
      token: OPERATOR_TOKEN,
    });
    t.is(rotate.status, 200);
  });
  await replica.links.resync();

  for (const link of [revokedLink, rotatedLink]) {
    const ended = await link?.ended;
    t.is(ended?.code, GrpcStatus.UNAUTHENTICATED);
    t.regex(ended?.details ?? '', /revoked/);
  }
  t.is(replica.links.size, 1);
  let keptEnded = false;
  void keptLink?.ended.then(() => {
    keptEnded = true;
  });
  await replica.links.resync();
  t.false(keptEnded);
  t.is(replica.links.size, 1);
});

test('jobs of many stations dispatched while the replica was away from NATS reach their links after the re-read', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const replica = await startReplica(t, sys);
  const count = 40;
  const stations = await Promise.all(
    Array.from({ length: count }, (_, i) => createStation(sys.url, orgId, { name: `s${i}` })),
  );
  const links = await Promise.all(stations.map((s) => replica.connect(s.token)));

  const posted: string[] = [];
  await replica.away(async () => {
    for (const link of links) {
      const res = await call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
        token: secret,
        body: {
          printer_id: link.welcome.printerIds.desk,
          content: { type: 'text', data: 'hello' },
        },
      });
      t.is(res.status, 201);
      posted.push(res.body.job.id);
    }
  });
  await replica.links.resync();

  await Promise.all(
    links.map((link, i) => link.until(() => link.jobs.some((j) => j.offer.jobId === posted[i]))),
  );
  // Each link got its own station's job, once.
  for (const [i, link] of links.entries()) {
    t.deepEqual(
      link.jobs.map((j) => j.offer.jobId),
      [posted[i]],
    );
  }
});

test('many links opening at once each get the jobs their station was sent while offline, once', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const replica = await startReplica(t, sys);
  const count = 60;
  const stations = await Promise.all(
    Array.from({ length: count }, (_, i) => createStation(sys.url, orgId, { name: `s${i}` })),
  );
  // A first link makes each station's printer; then the stations go offline.
  const printerIds: string[] = [];
  for (const s of stations) {
    const first = await replica.connect(s.token);
    printerIds.push(first.welcome.printerIds.desk as string);
    first.close();
  }
  const posted: string[][] = [];
  for (const printerId of printerIds) {
    const ids: string[] = [];
    for (let n = 0; n < 2; n++) {
      const res = await call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
        token: secret,
        body: { printer_id: printerId, content: { type: 'text', data: `job ${n}` } },
      });
      t.is(res.status, 201);
      ids.push(res.body.job.id);
    }
    posted.push(ids);
  }

  const links = await Promise.all(stations.map((s) => replica.connect(s.token)));
  await Promise.all(
    links.map((link, i) =>
      link.until(() =>
        (posted[i] ?? []).every((id) => link.jobs.some((j) => j.offer.jobId === id)),
      ),
    ),
  );
  // The test's clock stands still, so jobs created in the same instant come in any order.
  for (const [i, link] of links.entries()) {
    t.deepEqual(link.jobs.map((j) => j.offer.jobId).sort(), [...(posted[i] ?? [])].sort());
  }
});

test('PendingJobsForStations answers each station within the organization asked with, in the order asked', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const jobs = createClient(JobsServiceClient, {
    service: 'jobs',
    address: sys.system.servicesAddress,
  });
  t.teardown(() => jobs.close());
  // Two organizations, each with a station that has a job waiting while it is offline.
  const orgs = await Promise.all(['Acme', 'Globex'].map((name) => createOrg(sys.url, name)));
  const setups = await Promise.all(
    orgs.map(async (orgId) => {
      const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
      const station = await createStation(sys.url, orgId);
      const link = await connectLink(sys.linkAddress, station.token, [printer('desk')]);
      link.close();
      const res = await call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
        token: secret,
        body: { printer_id: link.welcome.printerIds.desk, content: { type: 'text', data: 'hi' } },
      });
      t.is(res.status, 201);
      return { orgId, stationId: station.id, jobId: res.body.job.id };
    }),
  );
  const [a, b] = setups as [(typeof setups)[0], (typeof setups)[0]];
  const asked = [
    { orgId: b.orgId, stationId: b.stationId },
    { orgId: a.orgId, stationId: b.stationId },
    { orgId: 'not-an-id', stationId: a.stationId },
    { orgId: a.orgId, stationId: a.stationId },
  ];
  const { stations } = await jobs.pendingJobsForStations({ stations: asked });
  t.deepEqual(
    stations.map((s) => [s.orgId, s.stationId, s.items.map((j) => j.id)]),
    [
      [b.orgId, b.stationId, [b.jobId]],
      [a.orgId, b.stationId, []],
      ['not-an-id', a.stationId, []],
      [a.orgId, a.stationId, [a.jobId]],
    ],
  );
});

test('a received held for its result goes alone when none follows, a re-read meanwhile notwithstanding', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const replica = await startReplica(t, sys, { receivedHoldMs: 300 });
  const station = await createStation(sys.url, orgId);
  const link = await replica.connect(station.token);
  const created = await call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
    token: secret,
    body: { printer_id: link.welcome.printerIds.desk, content: { type: 'text', data: 'held' } },
  });
  const jobId = created.body.job.id;
  await link.until(() => link.jobs.some((j) => j.offer.jobId === jobId));

  link.send({ received: { jobId, attempt: 1 } });
  // Handled after the received, in turn: once the new printer shows, the received is held.
  link.send({ printers: { printers: [printer('desk'), printer('side')] } });
  await eventually(
    () =>
      call<{ printers: Array<{ name: string }> }>(sys.url, 'GET', `/v1/orgs/${orgId}/printers`, {
        token: secret,
      }),
    (res) => res.body.printers.some((p) => p.name === 'side'),
  );
  await replica.links.resync();

  await link.until(() => link.accepted.some((a) => a.jobId === jobId && a.kind === 'received'));
  // Accepted means the report is in the reports stream; the jobs service applies it a moment
  // later.
  const job = await eventually(
    () =>
      call<{ job: { status: string } }>(sys.url, 'GET', `/v1/orgs/${orgId}/jobs/${jobId}`, {
        token: secret,
      }),
    (res) => res.body.job.status !== 'queued',
  );
  t.is(job.body.job.status, 'sent');
});
