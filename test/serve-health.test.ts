/**
 * A service whose database is away when it starts is never reported SERVING meanwhile: `spool
 * serve` starts it NOT_SERVING (its liveness SERVING, so Kubernetes waits rather than restarts it)
 * and turns it SERVING once the database answers.
 */
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import test from 'ava';
import { LIVENESS_SERVICE } from '../lib/grpc.js';
import { createHealthClient } from '../lib/health-client.js';
import { startTestNats } from './helpers/nats.js';
import { freePort } from './helpers/ports.js';
import { createTestDatabase } from './helpers/postgres.js';
import { runSpool, type SpoolProcess, spawnSpool } from './helpers/spool.js';
import { eventually } from './helpers/system.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';

test('a service started while its database answers nothing is not SERVING until the database answers', async (t) => {
  const [db, nats] = await Promise.all([createTestDatabase(), startTestNats()]);
  t.teardown(() => Promise.all([db.drop(), nats.stop()]));
  const migrated = await runSpool(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
  t.is(migrated.code, 0, migrated.stderr);

  // The database's address takes connections and answers nothing, as one behind a dropped
  // network does: each of the service's pings of it waits out its whole time.
  const silent = new Set<Socket>();
  const blackhole = createServer((socket) => {
    silent.add(socket);
    socket.on('error', () => {});
  });
  blackhole.listen(await freePort(), '127.0.0.1');
  await once(blackhole, 'listening');
  const dbPort = (blackhole.address() as { port: number }).port;
  const real = new URL(db.url);
  const away = new URL(db.url);
  away.hostname = '127.0.0.1';
  away.port = String(dbPort);

  const grpcPort = await freePort();
  const service: SpoolProcess = spawnSpool(['serve', 'accounts'], {
    DATABASE_URL: away.toString(),
    NATS_URL: nats.url,
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpcPort),
    LOG_LEVEL: 'info',
  });
  const health = createHealthClient(`127.0.0.1:${grpcPort}`);
  let proxy: Awaited<ReturnType<typeof startTcpProxy>> | undefined;
  t.teardown(async () => {
    health.close();
    await service.stop();
    await proxy?.stop();
    for (const socket of silent) socket.destroy();
    blackhole.close();
  });

  // Ask from before the server listens until well after, as a readiness probe would.
  await service.waitFor(/the database cannot be reached; not serving until it answers/, 30_000);
  const seen = new Set<string>();
  const until = service
    .waitFor(/accounts serving gRPC/, 30_000)
    .then(() => new Promise((r) => setTimeout(r, 3_000)));
  let watching = true;
  void until.finally(() => {
    watching = false;
  });
  while (watching) {
    seen.add(await health.check('', 500));
    await new Promise((r) => setTimeout(r, 25));
  }
  await until;
  t.false(seen.has('SERVING'), `health answered ${[...seen].join(', ')}`);
  t.true(seen.has('NOT_SERVING'));
  t.is(await health.check('spool.v1.AccountsService'), 'NOT_SERVING');
  t.is(await health.check(LIVENESS_SERVICE), 'SERVING', 'alive: waiting, not to be restarted');

  // The database comes back at its address: the service turns SERVING at its next check.
  for (const socket of silent) socket.destroy();
  await new Promise<void>((resolve) => blackhole.close(() => resolve()));
  proxy = await startTcpProxy({
    target: { host: real.hostname, port: Number(real.port) },
    port: dbPort,
  });
  t.is(
    await eventually(
      () => health.check(),
      (s) => s === 'SERVING',
      20_000,
    ),
    'SERVING',
  );
  t.is(await health.check('spool.v1.AccountsService'), 'SERVING');
  t.regex(service.output(), /dependencies back; serving/);
});
