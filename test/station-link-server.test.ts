/**
 * The stations service's end of the station link under faults: a link whose pending-jobs re-read
 * fails comes back to it soon, and the link server never ends a connection for its age.
 */
import test from 'ava';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { StationLinkService } from '../gen/spool/v1/stations.js';
import { connectBus } from '../lib/bus.js';
import { SCOPES } from '../lib/credentials.js';
import { createClient, MAX_CONNECTION_AGE_MS, startGrpcServer } from '../lib/grpc.js';
import { createLogger } from '../lib/logger.js';
import { createStations, startLinkServer } from '../services/stations/index.js';
import { connectLink, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
} from './helpers/system.js';
import { TcpRelay } from './helpers/tcp-relay.js';

test('the stations service logs each link: linked, unlinked and why, refused without the token', async (t) => {
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', name: 'spool' }, { write: (l) => lines.push(l) });
  const sys = await startTestSystem({ logger });
  t.teardown(() => sys.stop());
  const logged = async (msg: string) =>
    lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === msg);
  const orgId = await createOrg(sys.url);
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  const [linked] = await eventually(
    () => logged('station linked'),
    (found) => found.length === 1,
  );
  t.like(linked, { station_id: station.id, org_id: orgId, agent_version: 'test', printers: 1 });
  link.close();
  const [unlinked] = await eventually(
    () => logged('station unlinked'),
    (found) => found.length === 1,
  );
  t.like(unlinked, {
    station_id: station.id,
    org_id: orgId,
    reason: 'the agent closed it',
  });

  const forged = 'svc_dev_forged-token-that-no-station-has';
  await t.throwsAsync(connectLink(sys.linkAddress, forged, [printer('front')]));
  const [refused] = await eventually(
    () => logged('station link refused'),
    (found) => found.length === 1,
  );
  t.like(refused, { reason: 'the device token is not valid: unknown or revoked' });
  t.false(
    lines.some((l) => l.includes(station.token) || l.includes(forged)),
    'a device token in the log',
  );
});

test('a pending-jobs re-read that fails after a NATS reconnect is tried again without waiting for the next round', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const station = await createStation(sys.url, orgId);

  // A stations replica of its own, whose NATS connection and jobs service can be cut.
  const natsRelay = await TcpRelay.start(sys.nats.port);
  const servicesPort = Number(sys.system.servicesAddress.split(':').pop());
  const jobsRelay = await TcpRelay.start(servicesPort);
  const lines: string[] = [];
  const logger = createLogger({ level: 'warn', name: 'stations' }, { write: (l) => lines.push(l) });
  const nc = await connectBus({ url: `nats://127.0.0.1:${natsRelay.port}`, name: 'test', logger });
  const jobs = createClient(JobsServiceClient, {
    service: 'jobs',
    address: `127.0.0.1:${jobsRelay.port}`,
    deadlineMs: 1_000,
  });
  const stations = await createStations({
    pool: sys.system.pool,
    nc,
    logger,
    clock: sys.clock,
    jobs,
  });
  const server = await startLinkServer(stations, '127.0.0.1', 0);
  const address = `127.0.0.1:${server.port}`;
  // The first link makes the printer; the second opens with a job pending, so once that job is
  // offered the link's opening read is over and only the re-read can fetch the next job.
  const first = await connectLink(address, station.token, [printer('desk')]);
  const printerId = first.welcome.printerIds.desk as string;
  first.close();
  const postJob = () =>
    call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: secret,
      body: { printer_id: printerId, content: { type: 'text', data: 'hello' } },
    });
  const before = await postJob();
  const link = await connectLink(address, station.token, [printer('desk')]);
  t.teardown(async () => {
    link.close();
    await stations.stop();
    await server.shutdown(100);
    jobs.close();
    await nc.close();
    await Promise.all([natsRelay.close(), jobsRelay.close()]);
  });
  await link.until(() => link.jobs.some((j) => j.offer.jobId === before.body.job.id));

  // Back-to-back faults: the replica loses NATS while a job is dispatched, so the offer never
  // reaches the link, and the jobs service is away when the connection comes back.
  const statuses = nc.status();
  natsRelay.cut();
  jobsRelay.cut();
  for await (const s of statuses) if (s.type === 'disconnect') break;
  const posted = await postJob();
  t.is(posted.status, 201);
  natsRelay.restore();
  await eventually(
    async () => lines.filter((l) => l.includes('could not re-read pending jobs')).length,
    (n) => n > 0,
  );
  jobsRelay.restore();

  // The next round is a minute away; the retry offers the job well before.
  await link.until(() => link.jobs.some((j) => j.offer.jobId === posted.body.job.id), 15_000);
  t.pass();
});

test('the station-link server keeps a connection for as long as the agent holds it', async (t) => {
  const services = await startGrpcServer({ host: '127.0.0.1', port: 0 });
  const links = await startLinkServer(
    {
      link: {
        name: 'spool.v1.StationLink',
        definition: StationLinkService,
        implementation: { connect: () => {} },
      },
    },
    '127.0.0.1',
    0,
  );
  t.teardown(() => Promise.all([services.shutdown(100), links.shutdown(100)]));
  // grpc-js sends GOAWAY to a connection once it is this old; "unlimited" is 2^31 - 1.
  const ageOf = (handle: { server: unknown }) =>
    (handle.server as { maxConnectionAgeMs: number }).maxConnectionAgeMs;
  t.is(ageOf(services), MAX_CONNECTION_AGE_MS);
  t.is(ageOf(links), 2 ** 31 - 1);
});
