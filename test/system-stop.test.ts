/**
 * `spool dev` stops as one process: the gateways, the station links, the services, and the one
 * gRPC server the services answer each other on.
 */
import test from 'ava';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { createOrg, createStation, startTestSystem } from './helpers/system.js';

const DEADLINE_MS = 30_000;

test('stopping, which closes the station links, does not wait out a call between the services', async (t) => {
  // A call between the services waits for an answer until its deadline, here far longer than
  // stopping ever takes.
  const sys = await startTestSystem({ grpcDeadlineMs: DEADLINE_MS });
  const links: LinkClient[] = [];
  let stopped = false;
  t.teardown(async () => {
    for (const link of links) link.close();
    if (!stopped) await sys.system.stop(1_000);
    await Promise.all([sys.nats.stop(), sys.db.drop()]);
  });
  const orgId = await createOrg(sys.url);
  for (const name of ['Front desk', 'Back office', 'Warehouse']) {
    const station = await createStation(sys.url, orgId, { name });
    links.push(await connectLink(sys.linkAddress, station.token, [printer('desk')]));
  }

  // Each link the stop closes takes its station offline, and the jobs service asks the stations
  // service about that station's printers while the services are stopping.
  const began = Date.now();
  await sys.system.stop(1_000);
  stopped = true;
  const took = Date.now() - began;
  t.true(took < DEADLINE_MS / 3, `stopping took ${took} ms`);
});
