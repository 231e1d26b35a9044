/**
 * A service's gRPC health follows its dependencies from the start: one started while its database
 * cannot be reached says NOT_SERVING at once, not after the first period of the watch.
 */
import test from 'ava';
import pg from 'pg';
import { startGrpcServer } from '../lib/grpc.js';
import { watchHealth } from '../lib/health-watch.js';
import { createLogger } from '../lib/logger.js';
import { freePort } from './helpers/ports.js';
import { healthStatus } from './helpers/replicas.js';
import { eventually } from './helpers/system.js';

test('a service started while its database is down is not serving before the watch’s first period', async (t) => {
  // Nothing listens on this port: every connection is refused.
  const pool = new pg.Pool({ host: '127.0.0.1', port: await freePort(), user: 'x', database: 'x' });
  pool.on('error', () => {});
  const grpc = await startGrpcServer({ host: '127.0.0.1', port: 0 });
  const stop = watchHealth({
    health: grpc.health,
    services: [],
    pool,
    logger: createLogger({ level: 'silent', name: 'test' }),
    intervalMs: 600_000,
  });
  t.teardown(async () => {
    stop();
    await grpc.shutdown(0);
    await pool.end();
  });
  const status = await eventually(
    () => healthStatus(`127.0.0.1:${grpc.port}`),
    (s) => s === 'NOT_SERVING',
    5_000,
  );
  t.is(status, 'NOT_SERVING');
});
