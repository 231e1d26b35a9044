/**
 * The message bus: the NATS connection every process opens once, and the JetStream streams of
 * DESIGN §2. Subjects carry the organization (and the station where it applies) so that one
 * organization's or one station's traffic can be selected with a subject filter.
 */

import { readFile } from 'node:fs/promises';
import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  type Placement,
  type StreamConfig,
} from '@nats-io/jetstream';
import { connect, credsAuthenticator, type NatsConnection, nanos } from '@nats-io/transport-node';
import type { Logger } from './logger.js';
import { retryTransient } from './transient.js';

export type { NatsConnection };

const HOUR = 60 * 60 * 1000;

/**
 * Where this process sits in the installation, and so which streams and buckets it keeps and where
 * JetStream places them (docs/deploy.md, "Running in several regions").
 *
 * One region (the default): one NATS server or cluster holds every stream.
 *
 * Several regions: NATS runs as a supercluster, one cluster per region named after it. A region's
 * dispatch and reports stay in its own cluster (`DISPATCH_<region>`, `REPORTS_<region>`), so
 * its stations print while the link to other regions is down. Events, account changes,
 * documents and the public rate limit are the whole installation's (an organization spans
 * regions, and so do its webhooks and event streams) and live in the first region's cluster.
 */
export interface BusLayout {
  /** This process's region. */
  region: string;
  /** Every region of the installation; the first holds the installation-wide streams. */
  regions: readonly string[];
  /** Copies JetStream keeps of each stream and bucket: 3 on a NATS cluster, 1 on one server. */
  replicas: number;
}

/** One region on one NATS server: `spool dev` and most tests. */
export const SINGLE_REGION: BusLayout = { region: 'default', regions: ['default'], replicas: 1 };

/** A region name: a subject token, a stream-name suffix and a NATS cluster name at once. */
export const REGION_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;

const multiRegion = (layout: BusLayout) => layout.regions.length > 1;

/** Where JetStream puts a stream or bucket of the layout that belongs to `region`. */
export function placement(
  layout: BusLayout,
  region: string = layout.regions[0] as string,
): { num_replicas: number; placement?: Placement } {
  return multiRegion(layout)
    ? { num_replicas: layout.replicas, placement: { cluster: region, tags: [] } }
    : { num_replicas: layout.replicas };
}

/** The stream holding `region`'s dispatch messages. */
function dispatchStream(layout: BusLayout, region: string): string {
  return multiRegion(layout) ? `DISPATCH_${region}` : 'DISPATCH';
}

/** The stream holding the reports of `region`'s stations. */
export function reportsStream(layout: BusLayout, region: string): string {
  return multiRegion(layout) ? `REPORTS_${region}` : 'REPORTS';
}

type StreamSpec = Partial<StreamConfig> & { name: string; subjects: string[] };

/** The streams a process of `layout` creates or updates at start: its region's, and the global. */
export function streamsOf(layout: BusLayout): StreamSpec[] {
  const week = nanos(7 * 24 * HOUR);
  const regional = (prefix: string, name: string): StreamSpec => ({
    name,
    // One region: every subject of the kind, whatever region token it carries.
    subjects: [multiRegion(layout) ? `${prefix}.${layout.region}.>` : `${prefix}.>`],
    max_age: week,
    ...placement(layout, layout.region),
  });
  return [
    regional('dispatch', dispatchStream(layout, layout.region)),
    regional('reports', reportsStream(layout, layout.region)),
    { name: 'EVENTS', subjects: ['events.>'], max_age: week, ...placement(layout) },
    // Account changes other processes must hear of quickly, such as a revoked key.
    {
      name: 'ACCOUNTS',
      subjects: ['accounts.>'],
      max_age: nanos(24 * HOUR),
      ...placement(layout),
    },
  ];
}

/** JetStream's de-duplication window: an outbox row published twice inside it is stored once. */
export const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

export const subjects = {
  keyRevoked: (orgId: string) => `accounts.${orgId}.key.revoked`,
  /** Every key revocation, of any organization. */
  anyKeyRevoked: 'accounts.*.key.revoked',
  /**
   * A person's sessions must be looked up again: one was signed out (the message names it), or
   * their memberships changed (it names none, and every session of theirs is dropped).
   */
  sessionRevoked: (personId: string) => `accounts.${personId}.session.revoked`,
  anySessionRevoked: 'accounts.*.session.revoked',
  /** Jobs for one station of a region: offers and withdrawals, written by the jobs outbox. */
  dispatch: (region: string, orgId: string, stationId: string) =>
    `dispatch.${region}.${orgId}.${stationId}`,
  /** What a station of a region reported about its jobs, read by that region's jobs service. */
  reports: (region: string, orgId: string, stationId: string) =>
    `reports.${region}.${orgId}.${stationId}`,
  /** An event for webhooks, such as `events.<org>.job.printed`. */
  event: (orgId: string, type: string) => `events.${orgId}.${type}`,
  /** Core NATS (not stored): a station's newest link announces itself so older ones close. */
  linkOpened: (stationId: string) => `links.${stationId}.opened`,
  /** Core NATS: the station's token was revoked or replaced; its links close. */
  linkRevoked: (stationId: string) => `links.${stationId}.revoked`,
  /** Core NATS: the station's home region changed; its links close so the agent reconnects. */
  linkMoved: (stationId: string) => `links.${stationId}.moved`,
  /**
   * Core NATS: an organization's printers changed in a way no event announces (a printer
   * deleted, a station moved or deleted); `{org_id, data: {printer_id | station_id}}`. Read by
   * the jobs service's printer cache.
   */
  printersChanged: (orgId: string) => `printers.${orgId}.changed`,
  anyPrintersChanged: 'printers.*.changed',
  /**
   * Core NATS request/reply: a diagnosis of the station's agent, answered by the replica holding
   * its link (services/stations/link-diagnosis.ts).
   */
  diagnose: (stationId: string) => `diagnose.${stationId}`,
  /** Everything about one station's links. */
  links: (stationId: string) => `links.${stationId}.*`,
  /**
   * Core NATS: an organization's webhook endpoints changed (created, updated, deleted, enabled or
   * disabled); every webhooks replica reads them again before its next fan-out for it.
   */
  webhookEndpointsChanged: (orgId: string) => `webhooks.${orgId}.endpoints.changed`,
  anyWebhookEndpointsChanged: 'webhooks.*.endpoints.changed',
} as const;

/**
 * Calls `lost` whenever the connection drops (`back` false) or comes back (`back` true): a cache
 * kept current by messages on the bus may have missed some meanwhile. Returns a function that
 * stops watching.
 */
export function onConnectionLost(nc: NatsConnection, lost: (back: boolean) => void): () => void {
  let stopped = false;
  void (async () => {
    for await (const s of nc.status()) {
      if (stopped) break;
      if (s.type === 'disconnect' || s.type === 'reconnect') lost(s.type === 'reconnect');
    }
  })();
  return () => {
    stopped = true;
  };
}

/**
 * Ends a connection at shutdown: drains it (what was published reaches the server, subscriptions
 * end after their messages in hand), or, when NATS is away and there is nothing to drain to,
 * closes it, so that stopping during an outage does not fail.
 */
export async function closeBus(nc: NatsConnection): Promise<void> {
  if (nc.isClosed()) return;
  try {
    await nc.drain();
  } catch {
    await nc.close();
  }
}

/** Connections made by {@link connectBus}: whether each is up, as its status events last said. */
const connectionUp = new WeakMap<NatsConnection, { up: boolean }>();

/**
 * Whether the connection to NATS is up: not closed or draining, and not between a disconnect and
 * the reconnect that follows (nats.js reconnects for ever, so a server that is away leaves the
 * connection open but down). Readiness and health say a service is not serving meanwhile.
 */
export function natsConnected(nc: NatsConnection): boolean {
  return (connectionUp.get(nc)?.up ?? true) && !nc.isClosed() && !nc.isDraining();
}

export async function connectBus(options: {
  url: string;
  name: string;
  logger: Logger;
  /** A NATS credentials file (user JWT and NKey seed), as `nsc` or the NATS operator writes it. */
  credsFile?: string | undefined;
}): Promise<NatsConnection> {
  const creds = options.credsFile ? await readFile(options.credsFile) : undefined;
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: options.url.split(','),
      name: options.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // nats.js otherwise builds two Errors with stack traces for every request and publish
      // acknowledgement, in case it fails: several per cent of a busy process's CPU.
      noAsyncTraces: true,
      ...(creds ? { authenticator: credsAuthenticator(new Uint8Array(creds)) } : {}),
    });
  } catch (err) {
    // The first connection is the one that can fail (later ones are retried for ever): say which
    // server it was, as nats.js's own message ("connection refused") does not.
    throw new Error(
      `cannot connect to NATS at ${withoutCredentials(options.url)} (NATS_URL): ${(err as Error).message}`,
      { cause: err },
    );
  }
  const state = { up: true };
  connectionUp.set(nc, state);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') state.up = false;
      if (s.type === 'reconnect') state.up = true;
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
        options.logger.warn({ nats: s.type }, 'nats connection status');
      }
    }
  })();
  return nc;
}

/** NATS server URLs, comma separated, without any user and password they carry. */
function withoutCredentials(urls: string): string {
  return urls.replace(/\/\/[^/@,]*@/g, '//');
}

/**
 * Creates the layout's streams, or brings an existing stream's configuration up to date. A NATS
 * cluster that is still electing its leaders (every process of a new installation starting at
 * once) answers with timeouts and 503s for a while; those are tried again, for up to a minute.
 */
export async function ensureStreams(
  nc: NatsConnection,
  layout: BusLayout = SINGLE_REGION,
): Promise<JetStreamManager> {
  const jsm = await retryTransient(() => jetstreamManager(nc));
  for (const stream of streamsOf(layout)) {
    const config = { ...stream, duplicate_window: nanos(DUPLICATE_WINDOW_MS) };
    await retryTransient(() =>
      upsertStream(jsm, config).catch((err: unknown) => {
        throw replicasRefused(err, stream.num_replicas ?? 1) ?? err;
      }),
    );
  }
  return jsm;
}

/** Brings a stream's configuration up to date, or creates it. */
async function upsertStream(
  jsm: JetStreamManager,
  config: Parameters<JetStreamManager['streams']['add']>[0],
): Promise<void> {
  try {
    await jsm.streams.info(config.name);
    await jsm.streams.update(config.name, config);
  } catch (err) {
    const missing =
      err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
    if (!missing) throw err;
    await jsm.streams.add(config);
  }
}

/**
 * A single NATS server refusing more than one replica of a stream (a 500, which would otherwise be
 * tried again for a minute as the cluster still forming), as an error that says what to set.
 */
function replicasRefused(err: unknown, replicas: number): Error | undefined {
  if (
    !(err instanceof Error) ||
    !/replicas > 1 not supported in non-clustered mode/.test(err.message)
  ) {
    return undefined;
  }
  // No `cause`: the server's 500 under it would make it read as transient, and be tried again.
  return new Error(
    `the NATS server is not clustered and keeps one copy of a stream, but NATS_REPLICAS asks for ${replicas}: set NATS_REPLICAS=1 (the chart's nats.replicas) or run a NATS cluster`,
  );
}

/** The replica count and placement of an installation-wide object store or KV bucket. */
export function bucketPlacement(layout: BusLayout): { replicas: number; placement?: Placement } {
  const { num_replicas, placement: where } = placement(layout);
  return where ? { replicas: num_replicas, placement: where } : { replicas: num_replicas };
}
