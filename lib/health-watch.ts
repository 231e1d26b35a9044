/**
 * Keeps a service's gRPC health true to what it depends on: every few seconds it pings the
 * database and looks at the NATS connection, and turns the service NOT_SERVING while either is
 * gone (so Kubernetes' readiness, the gateway's status page and load balancers all see it). A
 * service started NOT_SERVING (`startGrpcServer({serving: false})`) turns SERVING only once its
 * database has answered, so one whose database is away at start is never reported SERVING
 * meanwhile.
 */
import type { HealthImplementation } from 'grpc-health-check';
import type pg from 'pg';
import { type NatsConnection, natsConnected } from './bus.js';
import { FailureLog } from './failure-log.js';
import type { Logger } from './logger.js';

export function watchHealth(options: {
  health: HealthImplementation;
  /** The service names registered with the health service besides ''. */
  services: string[];
  pool?: pg.Pool;
  nc?: NatsConnection;
  logger: Logger;
  intervalMs?: number;
  /**
   * What must succeed once, besides the database answering, before the service first says
   * SERVING: the schema check a service skipped because its database was away at start. It is
   * asked at each check until it succeeds; what it throws is logged.
   */
  gate?: () => Promise<void>;
}): () => void {
  // Unknown until the first check: whatever it finds is set, so a server started NOT_SERVING
  // turns SERVING as soon as its dependencies answer.
  let serving: boolean | undefined;
  let gate = options.gate;
  let stopped = false;
  const gateFailures = new FailureLog(options.logger, 'the check before serving');
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
    if (ok && gate) {
      try {
        await gate();
        gate = undefined;
        gateFailures.succeeded();
      } catch (err) {
        gateFailures.failed(err);
        ok = false;
      }
    }
    // A check that ends after the watch stopped (the server draining) changes nothing.
    if (stopped || ok === serving) return;
    // A healthy start says nothing; a start without its dependencies says so, and when they come.
    if (ok !== (serving ?? true)) {
      options.logger.warn(
        { serving: ok },
        ok ? 'dependencies back; serving' : 'a dependency is down; not serving',
      );
    }
    serving = ok;
    for (const name of ['', ...options.services]) {
      options.health.setStatus(name, ok ? 'SERVING' : 'NOT_SERVING');
    }
  };
  // At once too: a service started while its database is away must not wait a period to say so.
  void check();
  const timer = setInterval(() => void check(), options.intervalMs ?? 5_000);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
