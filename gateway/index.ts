/**
 * The gateway deployable: `createGateway` builds the HTTP server from the connections it is given
 * (used by `spool serve gateway` and `spool dev`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Kvm } from '@nats-io/kv';
import { lazily, openAgentReleases } from '../lib/agent-releases.js';
import {
  type BusLayout,
  bucketPlacement,
  type NatsConnection,
  natsConnected,
  SINGLE_REGION,
} from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import { ENROLL_ATTEMPTS_PER_MINUTE } from '../lib/contracts/enrollments.js';
import type { Logger } from '../lib/logger.js';
import { createApp } from './app.js';
import type { OperatorToken } from './auth.js';
import type { Backends } from './clients.js';
import { answerClientError } from './errors.js';
import { createEventStreams, type EventStreamOptions, type EventStreams } from './event-stream.js';
import { followRevocations, KeyCache } from './key-cache.js';
import { KeyUses } from './key-uses.js';
import {
  kvCounter,
  type LimitOptions,
  localCounter,
  RATE_LIMIT_BUCKET,
  rateLimit,
} from './rate-limit.js';
import { followSessionRevocations, SessionCache } from './session-cache.js';
import { createStatusChecker, type StatusSources } from './status.js';

export interface GatewayOptions {
  nc: NatsConnection;
  /** Where the installation-wide rate-limit bucket lives (default: one region). */
  layout?: BusLayout;
  backends: Backends;
  logger: Logger;
  clock: Clock;
  /** How often the keys' last uses are written (default a minute). */
  keyUseFlushMs?: number;
  operatorToken: OperatorToken;
  bodyLimit: number;
  maxDocumentBytes: number;
  /** Proxies in front adding to X-Forwarded-For (TRUST_PROXY); 0: none. */
  trustProxy: number;
  keyCacheTtlMs?: number;
  /** Health clients of the services, for the public status. */
  health: StatusSources['health'];
  /** Public requests a client address may make a minute, across replicas (spec §8: 30). */
  publicRateLimit?: number;
  /** Requests an API key may make a minute on one replica; 0 for no limit. */
  keyRateLimit?: number;
  /** Mark the session cookie `Secure` (default true; `spool dev` serves plain http). */
  secureCookies?: boolean;
  /** The public base URL of the gateway (PUBLIC_URL), for links such as invitations. */
  publicUrl?: string | undefined;
  /** How long a gateway trusts a looked-up session (default 30 s). */
  sessionCacheTtlMs?: number;
  /** Session expiry: unused for this long (default 12 hours), or this long after sign-in (7 days). */
  sessionIdleMs?: number;
  sessionAbsoluteMs?: number;
  /** Keep-alive interval, per-client buffer and bounds on open streams of the event streams. */
  eventStreams?: Partial<EventStreamOptions>;
}

export interface Gateway {
  server: Server;
  cache: KeyCache;
  /** The cache of signed-in sessions. */
  sessions: SessionCache;
  /** The open event streams (`GET /v1/orgs/{org}/stream`). */
  events: EventStreams;
  /** Listens on host:port (0 for any free port) and resolves the port. */
  listen(host: string, port: number): Promise<number>;
  /**
   * Turns readiness false and keeps serving for `delayMs` (while load balancers take the replica
   * out), then stops accepting and waits for requests in flight up to `graceMs`.
   */
  close(graceMs?: number, delayMs?: number): Promise<void>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const logger = options.logger.child({ service: 'gateway' });
  const keyUses = new KeyUses({
    record: async (uses) => {
      await options.backends.accounts.recordKeyUses({ uses });
    },
    clock: options.clock,
    logger,
  });
  keyUses.start(options.keyUseFlushMs);
  const cache = new KeyCache({
    uses: keyUses,
    clock: options.clock,
    ...(options.keyCacheTtlMs === undefined ? {} : { ttlMs: options.keyCacheTtlMs }),
    load: (hash) =>
      options.backends.accounts.authenticateApiKey({ keyHash: hash }).then((res) => {
        if (!res.key) throw new Error('accounts answered without a key');
        return { key: res.key, orgName: res.orgName };
      }),
  });
  const sessionCache = new SessionCache({
    clock: options.clock,
    ...(options.sessionCacheTtlMs === undefined ? {} : { ttlMs: options.sessionCacheTtlMs }),
    ...(options.sessionIdleMs === undefined ? {} : { idleMs: options.sessionIdleMs }),
    ...(options.sessionAbsoluteMs === undefined ? {} : { absoluteMs: options.sessionAbsoluteMs }),
    load: (hash) =>
      options.backends.accounts.authenticateSession({ sessionHash: hash }).then((res) => {
        if (!res.person || !res.createdAt || !res.lastSeenAt) {
          throw new Error('accounts answered without a session');
        }
        return {
          sessionId: res.sessionId,
          person: res.person,
          memberships: res.memberships,
          createdAt: res.createdAt,
          lastSeenAt: res.lastSeenAt,
        };
      }),
  });
  const events = createEventStreams({
    nc: options.nc,
    clock: options.clock,
    logger,
    ...(options.eventStreams ? { options: options.eventStreams } : {}),
  });
  // A revoked key, a signed-out session or a changed membership also ends the streams it opened.
  const stopFollowing = followRevocations(options.nc, cache, logger, events.recheck);
  const stopFollowingSessions = followSessionRevocations(
    options.nc,
    sessionCache,
    logger,
    events.recheck,
  );
  let draining = false;
  const status = createStatusChecker({
    health: options.health,
    nc: options.nc,
    clock: options.clock,
    notice: async () =>
      (await options.backends.accounts.getSettings({}, { deadlineMs: 1_000 })).settings
        ?.statusNotice ?? '',
  });
  /** A limit of requests a minute of each client `identify` tells apart. */
  const perMinute = (
    counter: LimitOptions['counter'],
    limit: number,
    identify: LimitOptions['identify'],
  ) => rateLimit({ counter, limit, windowMs: 60_000, clock: options.clock, identify, logger });
  const publicCounter = kvCounter(() =>
    new Kvm(options.nc).create(RATE_LIMIT_BUCKET, {
      history: 1,
      ttl: 2 * 60_000,
      ...bucketPlacement(options.layout ?? SINGLE_REGION),
    }),
  );
  const publicLimit = perMinute(
    publicCounter,
    options.publicRateLimit ?? 30,
    (ctx) => `ip_${ctx.ip}`,
  );
  // Enrollment codes tried, besides the public limit: too few to guess a code.
  const enrollLimit = perMinute(
    publicCounter,
    ENROLL_ATTEMPTS_PER_MINUTE,
    (ctx) => `enroll_ip_${ctx.ip}`,
  );
  const keyLimit = perMinute(
    localCounter(),
    options.keyRateLimit ?? 6_000,
    (ctx) => ctx.state.key?.id,
  );
  // The console's API, per signed-in session, as `/v1` is per key.
  const sessionLimit = perMinute(localCounter(), options.keyRateLimit ?? 6_000, (ctx) =>
    ctx.state.session ? `session_${ctx.state.session.id}` : undefined,
  );
  // Release tarballs, per client address like the other public routes, on a count of their own.
  const downloadLimit = perMinute(
    publicCounter,
    options.publicRateLimit ?? 30,
    (ctx) => `agent_ip_${ctx.ip}`,
  );
  const app = createApp({
    agentReleases: {
      store: lazily(() => openAgentReleases(options.nc, options.layout ?? SINGLE_REGION)),
      limit: downloadLimit,
    },
    status,
    publicLimit,
    enrollLimit,
    keyLimit,
    sessionLimit,
    backends: options.backends,
    cache,
    clock: options.clock,
    logger,
    operatorToken: options.operatorToken,
    bodyLimit: options.bodyLimit,
    maxDocumentBytes: options.maxDocumentBytes,
    trustProxy: options.trustProxy,
    ready: async () => !draining && natsConnected(options.nc),
    events,
    sessions: {
      cache: sessionCache,
      clock: options.clock,
      secureCookies: options.secureCookies ?? true,
      publicUrl: options.publicUrl,
      ...(options.sessionAbsoluteMs === undefined ? {} : { absoluteMs: options.sessionAbsoluteMs }),
    },
  });
  const handle = app.callback();
  const server = createServer((req, res) => {
    // While draining, each answer closes its connection, so keep-alive clients reconnect elsewhere.
    if (draining) res.setHeader('Connection', 'close');
    return handle(req, res);
  });
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);

  return {
    server,
    cache,
    sessions: sessionCache,
    events,
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      }),
    async close(graceMs = 10_000, delayMs = 0) {
      draining = true;
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      stopFollowing();
      stopFollowingSessions();
      // Event streams never finish by themselves: they end now, and their clients resume elsewhere.
      await events.close();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, graceMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      });
      // After the requests in flight: their keys' uses are written too.
      await keyUses.stop();
    },
  };
}
