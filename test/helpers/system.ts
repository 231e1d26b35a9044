/**
 * Starts Spool for a test file: a private nats-server, a fresh database, the services and as many
 * gateway replicas as the test asks for, all on port 0 and torn down by `stop()`.
 */
import { type GatewayReplica, type System, startSystem } from '../../cli/system.js';
import type { OperatorToken } from '../../gateway/auth.js';
import type { EventStreamOptions } from '../../gateway/event-stream.js';
import { type Clock, ManualClock } from '../../lib/clock.js';
import { type Logger, silentLogger } from '../../lib/logger.js';
import { generateServerKeyPair, serverKeysFrom } from '../../lib/sealing.js';
import type { ServerKeys } from '../../services/jobs/server.js';
import type { WebhooksSettings } from '../../services/webhooks/index.js';
import { startTestNats, type TestNats } from './nats.js';
import { checkAgainstOpenApi } from './openapi.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';

export const OPERATOR_TOKEN = 'test-operator-token';

export interface TestSystem {
  system: System;
  gateway: GatewayReplica;
  clock: ManualClock;
  nats: TestNats;
  db: TestDatabase;
  /** The gateway's base URL. */
  url: string;
  /** Where station agents connect. */
  linkAddress: string;
  stop(): Promise<void>;
}

export async function startTestSystem(
  options: {
    clock?: Clock;
    bodyLimit?: number;
    maxDocumentBytes?: number;
    /** Bytes of one organization's uploads kept at once (UPLOAD_QUOTA_BYTES). */
    uploadQuotaBytes?: number;
    /** Webhook settings; test receivers are on loopback, so insecure targets are allowed. */
    webhooks?: Partial<WebhooksSettings>;
    trustProxy?: number;
    serverKeys?: ServerKeys;
    keyRateLimit?: number;
    eventStreams?: Partial<EventStreamOptions>;
    /** Mark the session cookie `Secure` (default true, as outside `spool dev`). */
    secureCookies?: boolean;
    /** The gateway's public base URL (PUBLIC_URL). */
    publicUrl?: string;
    /** Where every part logs; silent unless given. */
    logger?: Logger;
    /** Deadline of each call between the services (GRPC_DEADLINE_MS). */
    grpcDeadlineMs?: number;
    /** How long a station link tries a report NATS refuses before it asks about other replicas. */
    reportRetryMs?: number;
    /** How long a station diagnosis waits for the agent's report (default 10 s). */
    diagnoseWaitMs?: number;
    /** The operator token(s) the gateway takes; OPERATOR_TOKEN unless given. */
    operatorToken?: OperatorToken;
  } = {},
): Promise<TestSystem> {
  const [natsStarted, dbCreated] = await Promise.allSettled([
    startTestNats(),
    createTestDatabase(),
  ]);
  const nats = natsStarted.status === 'fulfilled' ? natsStarted.value : undefined;
  const db = dbCreated.status === 'fulfilled' ? dbCreated.value : undefined;
  // A system that does not start (NATS or the database too slow on a busy machine) leaves no
  // server or database behind: the caller gets no system to stop.
  const release = () =>
    Promise.all([nats?.stop(), db?.drop()]).catch(() => undefined) as Promise<unknown>;
  if (!nats || !db) {
    await release();
    throw natsStarted.status === 'rejected'
      ? natsStarted.reason
      : (dbCreated as PromiseRejectedResult).reason;
  }
  const clock = (options.clock as ManualClock | undefined) ?? new ManualClock(new Date());
  let system: System | undefined;
  try {
    system = await startSystem({
      databaseUrl: db.url,
      natsUrl: nats.url,
      logger: options.logger ?? silentLogger,
      clock,
      operatorToken: options.operatorToken ?? OPERATOR_TOKEN,
      // Tests move the clock and call the sweeper themselves.
      sweepIntervalMs: 60 * 60 * 1000,
      replicaBeatMs: 60 * 60 * 1000,
      settingsTtlMs: 0,
      // Test servers for content URIs are on loopback.
      fetchAllowInsecure: true,
      serverKeys: options.serverKeys ?? serverKeysFrom((await generateServerKeyPair()).privateKey),
      ...(options.trustProxy === undefined ? {} : { trustProxy: options.trustProxy }),
      ...(options.keyRateLimit === undefined ? {} : { keyRateLimit: options.keyRateLimit }),
      ...(options.eventStreams === undefined ? {} : { eventStreams: options.eventStreams }),
      ...(options.secureCookies === undefined ? {} : { secureCookies: options.secureCookies }),
      ...(options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl }),
      ...(options.grpcDeadlineMs === undefined ? {} : { grpcDeadlineMs: options.grpcDeadlineMs }),
      ...(options.reportRetryMs === undefined ? {} : { reportRetryMs: options.reportRetryMs }),
      ...(options.diagnoseWaitMs === undefined ? {} : { diagnoseWaitMs: options.diagnoseWaitMs }),
      webhooks: { allowInsecure: true, ...options.webhooks },
      ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
      ...(options.uploadQuotaBytes === undefined
        ? {}
        : { uploadQuotaBytes: options.uploadQuotaBytes }),
      ...(options.maxDocumentBytes === undefined
        ? {}
        : { maxDocumentBytes: options.maxDocumentBytes }),
    });
    const gateway = await system.startGateway();
    const started = system;
    return {
      system: started,
      gateway,
      clock,
      nats,
      db,
      url: gateway.url,
      linkAddress: started.linkAddress,
      async stop() {
        await started.stop(1_000);
        await Promise.all([nats.stop(), db.drop()]);
      },
    };
  } catch (err) {
    await system?.stop(1_000).catch(() => undefined);
    await release();
    throw err;
  }
}

export interface Answer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** A JSON request; `body` is sent as JSON unless it is a string (sent as is). */
export async function call<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${base}${path}`, { method, headers, ...(body ? { body } : {}) });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('json');
  if (json && text) checkAgainstOpenApi(method, path, res.status, JSON.parse(text));
  return {
    status: res.status,
    headers: res.headers,
    body: (json && text ? JSON.parse(text) : json ? {} : text) as T,
  };
}

export interface KeyAnswer {
  key: { id: string; org_id: string; live: boolean; scopes: string[] };
  secret: string;
}

/** Creates an organization through the admin API and returns its id. */
export async function createOrg(base: string, name = 'Acme Print'): Promise<string> {
  const res = await call<{ org: { id: string } }>(base, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: { name },
  });
  if (res.status !== 201) throw new Error(`create org answered ${res.status}`);
  return res.body.org.id;
}

/** Creates an API key through the admin API. */
export async function createKey(
  base: string,
  orgId: string,
  body: Record<string, unknown> = {},
): Promise<KeyAnswer> {
  const res = await call<KeyAnswer>(base, 'POST', `/admin/v1/orgs/${orgId}/keys`, {
    token: OPERATOR_TOKEN,
    body: { mode: 'live', scopes: [], ...body },
  });
  if (res.status !== 201)
    throw new Error(`create key answered ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Creates a station through the admin API; returns its id and device token. */
export async function createStation(
  base: string,
  orgId: string,
  body: Record<string, unknown> = {},
): Promise<{ id: string; token: string }> {
  const res = await call<{ station: { id: string }; token: string }>(
    base,
    'POST',
    `/admin/v1/orgs/${orgId}/stations`,
    { token: OPERATOR_TOKEN, body: { name: 'Front desk', ...body } },
  );
  if (res.status !== 201) throw new Error(`create station answered ${res.status}`);
  return { id: res.body.station.id, token: res.body.token };
}

/** Polls `probe` until `done` holds of its result, or fails after `timeoutMs`. */
export async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
