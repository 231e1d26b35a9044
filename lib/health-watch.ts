/**
 * Keeps a service's gRPC health true to what it depends on: every few seconds it pings the
 * database and looks at the NATS connection, and turns the service NOT_SERVING while either is
 * gone (so Kubernetes' readiness, the gateway's status page and load balancers all see it).
 */
import type { HealthImplementation } from 'grpc-health-check';
import type pg from 'pg';
import { type NatsConnection, natsConnected } from './bus.js';
import type { Logger } from './logger.js';

export function watchHealth(options: {
  health: HealthImplementation;
  /** The service names registered with the health service besides ''. */
  services: string[];
  pool?: pg.Pool;
  nc?: NatsConnection;
  logger: Logger;
  intervalMs?: number;
}): () => void {
  let serving = true;
  const check = async () => {
    let ok = !options.nc || natsConnected(options.nc);
    if (ok && options.pool) {
      ok = await Promise.race([
        options.pool.query('SELECT 1').then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((r) => setTimeout(() => r(false), 2_000)),
      ]);
    }
    if (ok === serving) return;
    serving = ok;
    options.logger.warn(
      { serving },
      ok ? 'dependencies back; serving' : 'a dependency is down; not serving',
    );
    for (const name of ['', ...options.services]) {
      options.health.setStatus(name, ok ? 'SERVING' : 'NOT_SERVING');
    }
  };
  // At once too: a service started while its database is away must not say SERVING until then.
  void check();
  const timer = setInterval(() => void check(), options.intervalMs ?? 5_000);
  timer.unref();
  return () => clearInterval(timer);
}
