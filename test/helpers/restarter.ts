/**
 * Starts each process of a fault run again whenever it exits, as Kubernetes restarts a container,
 * and tells the exits the test caused from the others.
 */
import type { ExecutionContext } from 'ava';
import { SCOPES } from '../../lib/credentials.js';
import { GatewayClient } from './gateway-client.js';
import { startTestNats } from './nats.js';
import { startPostgres } from './postgres.js';
import {
  REPLICAS_OPERATOR_TOKEN,
  type ReplicatedCluster,
  startReplicatedCluster,
} from './replicas.js';
import type { SpoolProcess } from './spool.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts each process again whenever it exits, as Kubernetes restarts a container. */
export class Restarter {
  /** Pids the test signalled; the exit of any other process is a failure. */
  readonly #killed = new Set<number>();
  readonly unexpected: string[] = [];
  #stopping = false;

  watch(name: string, current: () => SpoolProcess, respawn: () => Promise<void>) {
    void (async () => {
      for (;;) {
        const process = current();
        const code = await process.exited;
        if (this.#stopping) return;
        const pid = process.child.pid ?? -1;
        if (!this.#killed.has(pid)) {
          this.unexpected.push(`${name} exited with ${code}:\n${process.output().slice(-2000)}`);
        }
        for (;;) {
          try {
            await respawn();
            break;
          } catch {
            if (this.#stopping) return;
            await sleep(1_000);
          }
        }
      }
    })();
  }

  kill(process: SpoolProcess, signal: NodeJS.Signals = 'SIGKILL') {
    this.#killed.add(process.child.pid ?? -1);
    process.child.kill(signal);
  }

  /** Restarts nothing from now on. */
  stop() {
    this.#stopping = true;
  }
}

/**
 * What a fault run starts with: a private PostgreSQL and nats-server, every component a `spool
 * serve` process (two replicas each) watched by a restarter, and an organization with a key of
 * every scope. Everything ends with the test.
 */
export async function startFaultRun(t: ExecutionContext, orgName: string) {
  const postgres = await startPostgres();
  t.teardown(() => postgres.stop());
  const nats = await startTestNats();
  t.teardown(() => nats.stop());
  const cluster: ReplicatedCluster = await startReplicatedCluster({
    replicas: 2,
    external: { databaseUrl: postgres.url, nats },
    env: { gateway: { SHUTDOWN_DELAY_MS: '300' } },
  });
  const restarter = new Restarter();
  t.teardown(async () => {
    restarter.stop();
    await cluster.stop();
  });
  for (const replica of cluster.replicas) {
    restarter.watch(
      `${replica.component} #${replica.index}`,
      () => replica.process,
      () => cluster.respawn(replica),
    );
  }
  const client = new GatewayClient(cluster.urls);
  const admin = { token: REPLICAS_OPERATOR_TOKEN };
  const orgId = (
    await client.request<{ org: { id: string } }>('POST', '/admin/v1/orgs', {
      ...admin,
      body: { name: orgName },
    })
  ).body.org.id;
  const key = (
    await client.request<{ secret: string }>('POST', `/admin/v1/orgs/${orgId}/keys`, {
      ...admin,
      body: { mode: 'live', scopes: SCOPES },
    })
  ).body.secret;
  return { postgres, nats, cluster, restarter, client, admin, orgId, key };
}
