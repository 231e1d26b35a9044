/**
 * Real NATS clusters on loopback for fault tests: a JetStream cluster of a few nodes, and a
 * supercluster of one cluster per region joined by gateways that run through TCP proxies, so a
 * test can cut, restore and slow the link between regions.
 *
 * Every node is a `nats-server` child process with its own store in a temporary directory. The
 * route and gateway ports are drawn with `freePort()` before any node starts, because each node
 * names its peers' ports in its configuration; the client port is drawn the same way, so a node
 * restarts on the URL its clients already know.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type NatsServer, type NatsServerOptions, startNatsServer } from '../../lib/nats-server.js';
import { freePort } from './ports.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/** How long a cluster or supercluster may take to form, by default. */
export const CLUSTER_READY_TIMEOUT_MS = 30_000;

const HOST = '127.0.0.1';

/** One `nats-server` of a cluster. `url`, `port` and the store stay the same across restarts. */
export interface TestNatsNode {
  /** The server's name, as JetStream reports it (`streams.info().cluster.leader`, replicas). */
  readonly serverName: string;
  /** Client URL of this node alone. */
  readonly url: string;
  readonly port: number;
  /** The pid of the current process; it changes on `restart()`. */
  readonly pid: number;
  readonly storeDir: string;
  /** Sends a signal (default SIGKILL) without waiting, to simulate a crash. */
  kill(signal?: NodeJS.Signals): void;
  /** Stops the server (or waits for a killed one to exit); the store is kept for `restart()`. */
  stop(): Promise<void>;
  /** Stops the server if it runs and starts it again on the same ports and store. */
  restart(): Promise<void>;
}

/** The nodes of one cluster and the URLs a client uses to reach them. */
export interface TestNatsClusterNodes {
  /** The cluster's name; in a supercluster also its gateway name and its region. */
  readonly name: string;
  /** Every node's client URL. */
  readonly urls: string[];
  /** The client URLs joined by commas, as `NATS_URL` takes them. */
  readonly url: string;
  readonly nodes: TestNatsNode[];
}

/** A running cluster; `stop()` stops every node and removes their stores. */
export interface TestNatsCluster extends TestNatsClusterNodes {
  stop(): Promise<void>;
}

export interface TestNatsClusterOptions {
  /** The cluster's name; defaults to `c1`. */
  name?: string;
  /** How many nodes; defaults to 3, the smallest cluster that keeps a quorum with one node down. */
  size?: number;
  /** Defaults to {@link CLUSTER_READY_TIMEOUT_MS}. */
  readyTimeoutMs?: number;
}

/**
 * Starts a JetStream cluster and resolves once every node routes to every other and JetStream has
 * a meta leader. A cluster that fails to form is stopped, with its stores removed, before the
 * error is thrown.
 */
export async function startTestNatsCluster(
  options: TestNatsClusterOptions = {},
): Promise<TestNatsCluster> {
  const name = options.name ?? 'c1';
  const size = options.size ?? 3;
  const root = await mkdtemp(join(tmpdir(), 'spool-test-nats-cluster-'));
  let nodes: ManagedNode[] = [];
  try {
    const plans = await planCluster(name, size, root);
    nodes = await startNodes(plans);
    await waitUntilFormed(nodes, options.readyTimeoutMs ?? CLUSTER_READY_TIMEOUT_MS);
  } catch (error) {
    await stopAll(nodes, root);
    throw error;
  }
  return { ...clusterView(name, nodes), stop: () => stopAll(nodes, root) };
}

/** The gateway link between the regions of a supercluster. */
export interface TestNatsLink {
  /** Breaks every gateway connection and refuses new ones until `restore()`. */
  cut(): Promise<void>;
  /** Lets gateway connections through again; the servers reconnect within a second or so. */
  restore(): void;
  /** Delays gateway traffic by `ms` in each direction (a round trip takes twice that). */
  setDelay(ms: number): void;
}

export interface TestSupercluster {
  /** Each region's cluster, by region name. */
  readonly regions: Record<string, TestNatsClusterNodes>;
  readonly link: TestNatsLink;
  /** Stops every node and proxy and removes the stores. */
  stop(): Promise<void>;
}

export interface TestSuperclusterOptions {
  /** Region names, e.g. `['a', 'b']`; each is its cluster's name and gateway name. */
  regions: string[];
  /** Nodes per region; defaults to 1. */
  size?: number;
  /** Defaults to {@link CLUSTER_READY_TIMEOUT_MS}. */
  readyTimeoutMs?: number;
  /**
   * An empty directory of the caller's for the servers' stores, which `stop` removes; by default
   * one is made. A caller that must remove it even while the servers start (when stopped by a
   * signal, say) makes it.
   */
  root?: string;
}

/**
 * Starts one cluster per region, joined by gateways, and resolves once every server reaches every
 * other across the gateways and JetStream has a meta leader. Every server's gateway listener sits
 * behind its own TCP proxy, which is what the server advertises: servers gossip their gateway
 * addresses, and would otherwise dial each other directly, past the proxies that `link` controls.
 *
 * What a cut does to JetStream (nats-server 2.9): the meta group spans all regions, and with
 * one node per region neither side has a majority. A stream placed in a region
 * (`placement: { cluster: region }`) has its own group inside it, so publishes, stream info,
 * direct gets and fetches and acks on an existing durable consumer go on there. Everything the meta
 * group decides stops at once: creating or deleting a stream or consumer (an ordered consumer
 * too) times out, and may still take effect after the link is back. Some 10 to 20 s into the
 * cut, once a server counts the meta group as leaderless, the account info and `STREAM.MSG.GET`
 * requests (`jsm.streams.getMessage`) answer 503 "JetStream system temporarily unavailable" even
 * for a stream in the caller's region. After a cut that long, the meta group takes a few more
 * seconds after `restore()` to elect a leader. A two-server meta group also takes 1 to 11 s to
 * elect its first leader, which is most of this function's start-up time.
 */
export async function startTestSupercluster(
  options: TestSuperclusterOptions,
): Promise<TestSupercluster> {
  const size = options.size ?? 1;
  const names = options.regions;
  if (names.length < 2 || new Set(names).size !== names.length) {
    throw new Error('a supercluster needs at least two regions with distinct names');
  }
  const root = options.root ?? (await mkdtemp(join(tmpdir(), 'spool-test-nats-supercluster-')));
  const proxies: TcpProxy[] = [];
  let nodes: ManagedNode[] = [];
  const stop = async (): Promise<void> => {
    await stopAll(nodes, root);
    await Promise.all(proxies.map((proxy) => proxy.stop()));
  };
  const regions: Record<string, TestNatsClusterNodes> = {};
  try {
    const plans = new Map<string, NodePlan[]>();
    const gatewayUrls = new Map<string, string[]>();
    for (const region of names) {
      const regionPlans = await planCluster(region, size, root);
      const urls: string[] = [];
      for (const plan of regionPlans) {
        const gatewayPort = await freePort();
        const proxy = await startTcpProxy({ target: { host: HOST, port: gatewayPort } });
        proxies.push(proxy);
        urls.push(`nats://${HOST}:${proxy.port}`);
        plan.options.gateway = {
          name: region,
          port: gatewayPort,
          advertise: `${HOST}:${proxy.port}`,
          gateways: [],
        };
      }
      plans.set(region, regionPlans);
      gatewayUrls.set(region, urls);
    }
    for (const [region, regionPlans] of plans) {
      const gateways = names
        .filter((other) => other !== region)
        .map((other) => ({ name: other, urls: gatewayUrls.get(other) ?? [] }));
      for (const plan of regionPlans) {
        if (plan.options.gateway) plan.options.gateway.gateways = gateways;
      }
    }
    nodes = await startNodes([...plans.values()].flat());
    for (const region of names) {
      regions[region] = clusterView(
        region,
        nodes.filter((node) => node.region === region),
      );
    }
    await waitUntilFormed(nodes, options.readyTimeoutMs ?? CLUSTER_READY_TIMEOUT_MS);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    regions,
    link: {
      async cut() {
        await Promise.all(proxies.map((proxy) => proxy.cut()));
      },
      restore() {
        for (const proxy of proxies) proxy.restore();
      },
      setDelay(ms: number) {
        for (const proxy of proxies) proxy.setDelay(ms);
      },
    },
    stop,
  };
}

/**
 * Calls `attempt` until it resolves and returns its value, or throws its last error once
 * `timeoutMs` has passed. For conditions a cluster reaches in its own time (an election, a
 * reconnect), instead of sleeping for a guess.
 */
export async function retryUntil<T>(
  attempt: () => Promise<T>,
  { timeoutMs = 10_000, intervalMs = 100, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() >= deadline) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new Error(`${what} not reached in ${timeoutMs} ms: ${reason}`, { cause: error });
      }
    }
    await sleep(intervalMs);
  }
}

/** A node before it starts: where it listens and stores, and its route peers. */
interface NodePlan {
  region: string;
  options: NatsServerOptions & { serverName: string; port: number };
}

interface ManagedNode extends TestNatsNode {
  readonly region: string;
}

/** Draws the client and route ports of every node of a cluster and names its stores. */
async function planCluster(name: string, size: number, root: string): Promise<NodePlan[]> {
  if (!Number.isInteger(size) || size < 1) throw new Error(`invalid cluster size ${size}`);
  const ports: Array<{ client: number; route: number }> = [];
  for (let i = 0; i < size; i++) ports.push({ client: await freePort(), route: await freePort() });
  // Every node lists every route, its own too: the server skips a route to itself, and
  // nats-server 2.9 refuses to start JetStream in a cluster with no routes at all (so a
  // one-node region of a supercluster needs its own).
  const routes = ports.map(({ route }) => `nats-route://${HOST}:${route}`);
  return ports.map(({ client, route }, i) => {
    const serverName = `${name}-n${i + 1}`;
    return {
      region: name,
      options: {
        serverName,
        storeDir: join(root, serverName),
        host: HOST,
        port: client,
        cluster: { name, port: route, routes },
      },
    };
  });
}

/**
 * Starts every planned node at once (each waits for its peers' routes in the background). If any
 * fails to start, the others are stopped before the first error is thrown.
 */
async function startNodes(plans: NodePlan[]): Promise<ManagedNode[]> {
  const results = await Promise.allSettled(plans.map((plan) => startNode(plan)));
  const nodes = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) {
    await Promise.all(nodes.map((node) => node.stop()));
    throw failed.reason;
  }
  return nodes;
}

async function startNode(plan: NodePlan): Promise<ManagedNode> {
  const { options } = plan;
  let server: NatsServer | undefined = await startNatsServer(options);
  return {
    region: plan.region,
    serverName: options.serverName,
    url: server.url,
    port: options.port,
    storeDir: server.storeDir,
    get pid() {
      return server?.pid ?? -1;
    },
    kill(signal?: NodeJS.Signals) {
      server?.kill(signal);
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async restart() {
      await server?.stop();
      server = undefined;
      server = await startNatsServer(options);
    },
  };
}

function clusterView(name: string, nodes: ManagedNode[]): TestNatsClusterNodes {
  const urls = nodes.map((node) => node.url);
  return { name, urls, url: urls.join(','), nodes };
}

async function stopAll(nodes: ManagedNode[], root: string): Promise<void> {
  await Promise.all(nodes.map((node) => node.stop()));
  await rm(root, { recursive: true, force: true });
}

/**
 * Waits until a request sent from every node reaches a responder on every other node, which
 * takes the routes within a cluster and both directions of every gateway connection between
 * clusters, and then until JetStream answers for the account, which takes a meta leader.
 */
async function waitUntilFormed(nodes: ManagedNode[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const left = (): number => Math.max(deadline - Date.now(), 0);
  const connections: NatsConnection[] = [];
  try {
    for (const node of nodes) {
      const nc = await connect({ servers: node.url, name: `formation-${node.serverName}` });
      connections.push(nc);
      nc.subscribe(`_formation.${node.serverName}`, {
        callback: (_error, msg) => {
          msg.respond(node.serverName);
        },
      });
      // The subscription is known to the node once it has answered a ping.
      await nc.flush();
    }
    for (const [i, from] of nodes.entries()) {
      const nc = connections[i];
      if (!nc) continue;
      for (const to of nodes) {
        if (to === from) continue;
        await retryUntil(
          async () => {
            const reply = await nc.request(`_formation.${to.serverName}`, '', { timeout: 500 });
            if (reply.string() !== to.serverName) throw new Error('wrong responder');
          },
          { timeoutMs: left(), what: `${from.serverName} reaching ${to.serverName}` },
        );
      }
    }
    const [first] = connections;
    if (first) {
      await retryUntil(async () => (await jetstreamManager(first)).getAccountInfo(), {
        timeoutMs: left(),
        what: 'a JetStream meta leader',
      });
    }
  } finally {
    await Promise.all(connections.map((nc) => nc.close()));
  }
}
