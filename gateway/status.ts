/**
 * The public status (spec §4): `operational`, `degraded` or `outage`, computed from real health
 * checks of the parts behind the gateway, each with a short deadline so that the page answers when
 * a backend hangs, which is when people read it. `outage` means the API or print delivery is down.
 */
import { type NatsConnection, natsConnected } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import type { HealthClient } from '../lib/health-client.js';
import { rfc3339 } from '../lib/time.js';

export type Level = 'operational' | 'degraded' | 'outage';

export interface StatusSources {
  /** Health clients of each service, by its name. */
  health: {
    accounts: HealthClient;
    jobs: HealthClient;
    stations: HealthClient;
    webhooks?: HealthClient;
  };
  nc: NatsConnection;
  clock: Clock;
  /** The administrator's notice, or '' for none. */
  notice: () => Promise<string>;
  deadlineMs?: number;
  /** A check slower than this makes its component degraded. */
  slowMs?: number;
}

export interface PublicStatus {
  status: Level;
  components: Array<{ name: string; status: Level }>;
  notice: string | null;
  checked_at: string;
}

export function createStatusChecker(sources: StatusSources): { check(): Promise<PublicStatus> } {
  const deadlineMs = sources.deadlineMs ?? 1_000;
  const slowMs = sources.slowMs ?? 500;

  async function timed(client: HealthClient | undefined): Promise<{ ok: boolean; slow: boolean }> {
    if (!client) return { ok: false, slow: false };
    const started = Date.now();
    const status = await client.check('', deadlineMs);
    return { ok: status === 'SERVING', slow: Date.now() - started > slowMs };
  }

  const level = (down: Level, ...checks: Array<{ ok: boolean; slow: boolean }>): Level =>
    checks.some((c) => !c.ok) ? down : checks.some((c) => c.slow) ? 'degraded' : 'operational';

  return {
    async check() {
      const { health } = sources;
      const [accounts, jobs, stations, webhooks, notice] = await Promise.all([
        timed(health.accounts),
        timed(health.jobs),
        timed(health.stations),
        timed(health.webhooks),
        Promise.race([
          sources.notice().catch(() => ''),
          new Promise<string>((r) => setTimeout(() => r(''), deadlineMs)),
        ]),
      ]);
      const nats = { ok: natsConnected(sources.nc), slow: false };
      // Each service reports NOT_SERVING when it cannot reach its database (lib/health-watch.ts).
      const database = { ok: accounts.ok || jobs.ok || stations.ok, slow: false };
      const components: PublicStatus['components'] = [
        { name: 'api', status: level('outage', accounts, jobs) },
        { name: 'print_delivery', status: level('outage', stations, nats) },
        { name: 'webhooks', status: level('degraded', webhooks) },
        { name: 'database', status: level('outage', database) },
      ];
      const worst = (name: string) => components.find((c) => c.name === name)?.status;
      const status: Level =
        worst('api') === 'outage' ||
        worst('print_delivery') === 'outage' ||
        worst('database') === 'outage'
          ? 'outage'
          : components.some((c) => c.status !== 'operational')
            ? 'degraded'
            : 'operational';
      return {
        status,
        components,
        notice: notice || null,
        checked_at: rfc3339(sources.clock.now()),
      };
    },
  };
}
