/**
 * gRPC plumbing shared by every service and the gateway: servers whose handlers are async functions
 * that throw {@link SpoolError}, the mapping of those errors to a gRPC status and back, promise
 * clients with a default deadline, the standard `grpc.health.v1` service, and graceful shutdown.
 */

import { performance } from 'node:perf_hooks';
import {
  type CallOptions,
  type Client,
  type ClientUnaryCall,
  credentials,
  status as GrpcStatus,
  type handleUnaryCall,
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceDefinition,
  type ServiceError,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { codeForGrpcStatus, isErrorCode, isSpoolError, SpoolError } from './errors.js';
import type { Logger } from './logger.js';
import { spoolMetrics } from './metrics.js';
import { isTransient, unavailable } from './transient.js';

const CODE_KEY = 'spool-error-code';
const PARAM_KEY = 'spool-error-param';
const RETRY_AFTER_KEY = 'spool-retry-after';

/**
 * Servers end each client connection after about this long (GOAWAY; calls and streams in flight
 * carry on), so that clients resolving `dns:///` names re-resolve and spread their calls over
 * replicas that started since they connected, such as those a HorizontalPodAutoscaler added.
 */
export const MAX_CONNECTION_AGE_MS = 5 * 60_000;

/**
 * The health service name a liveness probe asks for: SERVING for as long as the process answers.
 * The server's own status ("") turns NOT_SERVING while it drains or while a dependency is down,
 * which should take the replica out of rotation (readiness), not restart it.
 */
export const LIVENESS_SERVICE = 'liveness';

/** The async form of a generated `…Server` interface: each method returns its response. */
export type AsyncServer<S> = {
  [K in keyof S as string extends K ? never : K]: S[K] extends handleUnaryCall<infer Req, infer Res>
    ? (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res>
    : never;
};

/**
 * An error thrown by a handler as the caller is to see it. A dependency down or busy (the database
 * restarting or dropping a connection, NATS away, a read outside withTx that lost a serialization
 * conflict): the same call a moment later may go through, so the caller is told to retry rather
 * than shown a bug. Anything else unexpected is logged and answered as internal.
 */
function answerFor(err: unknown, logger: Logger, method: string): SpoolError {
  if (isSpoolError(err)) return err;
  if (isTransient(err)) {
    logger.warn({ err, method }, 'a dependency is unavailable; answering unavailable');
    return unavailable(err);
  }
  logger.error({ err, method }, 'unhandled error in gRPC handler');
  return new SpoolError('internal', 'internal error');
}

/** Turns an error thrown by a handler into what crosses the wire. */
export function toServiceError(
  err: unknown,
  logger: Logger,
  method: string,
): Partial<ServiceError> {
  const answer = answerFor(err, logger, method);
  const metadata = new Metadata();
  metadata.set(CODE_KEY, answer.code);
  if (answer.param !== undefined) metadata.set(PARAM_KEY, answer.param);
  if (answer.retryAfter !== undefined) metadata.set(RETRY_AFTER_KEY, String(answer.retryAfter));
  return { code: answer.grpcStatus, details: answer.message, metadata };
}

/** An error as one item of a call that answers many carries it (`CallError` in the protos). */
export interface ItemError {
  code: string;
  message: string;
  param: string;
  retryAfter: number;
}

/** Turns an error thrown for one item of a many-item call into what crosses the wire. */
export function toItemError(err: unknown, logger: Logger, method: string): ItemError {
  const answer = answerFor(err, logger, method);
  return {
    code: answer.code,
    message: answer.message,
    param: answer.param ?? '',
    retryAfter: answer.retryAfter ?? 0,
  };
}

/** Turns one item's error back into the SpoolError the service meant. */
export function fromItemError(e: ItemError): SpoolError {
  return new SpoolError(isErrorCode(e.code) ? e.code : 'internal', e.message, {
    ...(e.param ? { param: e.param } : {}),
    ...(e.retryAfter ? { retryAfter: e.retryAfter } : {}),
  });
}

/**
 * A call whose deadline passed before its service answered. Unlike `unavailable`, the service may
 * have done what was asked: the answer, not the work, is what is missing.
 */
export function serviceTimeout(service: string, cause?: unknown): SpoolError {
  return new SpoolError(
    'timeout',
    `the ${service} service did not answer in time, and may have done what was asked: ` +
      'retry with the same Idempotency-Key, which never does it twice',
    { retryAfter: 1, ...(cause === undefined ? {} : { cause }) },
  );
}

/**
 * Whether a call that failed had been sent to a server: grpc-js names the server it went to
 * (`remote_addr=…`) in a deadline's details, and says `Waiting for LB pick` when it had none.
 */
function wentOut(err: ServiceError): boolean {
  return err.details.includes('remote_addr=');
}

/** Turns a gRPC client error back into a SpoolError with the code the service meant. */
export function fromServiceError(err: ServiceError, service: string): SpoolError {
  const sent = err.metadata?.get(CODE_KEY)[0];
  const param = err.metadata?.get(PARAM_KEY)[0];
  const retryAfter = err.metadata?.get(RETRY_AFTER_KEY)[0];
  if (isErrorCode(sent)) {
    return new SpoolError(sent, err.details, {
      ...(typeof param === 'string' ? { param } : {}),
      ...(typeof retryAfter === 'string' ? { retryAfter: Number(retryAfter) } : {}),
      cause: err,
    });
  }
  // A status without our code comes from the transport (a service down, a deadline passed).
  // A call whose deadline passed while it waited for a connection never went out, so nothing
  // was done: that is the service being unavailable, not slow.
  const code =
    err.code === GrpcStatus.DEADLINE_EXCEEDED && !wentOut(err)
      ? 'unavailable'
      : codeForGrpcStatus(err.code);
  if (code === 'unavailable') {
    return new SpoolError(code, `the ${service} service is unavailable; try again`, {
      retryAfter: 1,
      cause: err,
    });
  }
  if (code === 'timeout') return serviceTimeout(service, err);
  return new SpoolError(code, 'internal error', { cause: err });
}

/** Wraps async handlers as grpc-js callbacks, mapping thrown errors to a status. */
export function adaptServer<S extends UntypedServiceImplementation>(
  impl: AsyncServer<S>,
  logger: Logger,
): S {
  const out: Record<string, handleUnaryCall<unknown, unknown>> = {};
  const { rpcServerDuration } = spoolMetrics();
  for (const [name, fn] of Object.entries(impl) as [
    string,
    (req: unknown, call: ServerUnaryCall<unknown, unknown>) => Promise<unknown>,
  ][]) {
    out[name] = (call, callback) => {
      const started = performance.now();
      const done = (code: GrpcStatus) => {
        const [service = '', method = name] = call.getPath().slice(1).split('/');
        rpcServerDuration.record((performance.now() - started) / 1000, {
          'rpc.system': 'grpc',
          'rpc.service': service,
          'rpc.method': method,
          'rpc.grpc.status_code': code,
        });
      };
      fn(call.request, call).then(
        (res) => {
          done(GrpcStatus.OK);
          callback(null, res);
        },
        (err: unknown) => {
          const error = toServiceError(err, logger, name);
          done(error.code ?? GrpcStatus.UNKNOWN);
          callback(error);
        },
      );
    };
  }
  return out as unknown as S;
}

export interface GrpcService {
  /** The fully qualified name health checks use, e.g. `spool.v1.AccountsService`. */
  name: string;
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
}

export interface GrpcServerHandle {
  server: Server;
  port: number;
  health: HealthImplementation;
  /** Adds a service; calls to it are answered from then on. */
  add(service: GrpcService): void;
  /** Marks every service NOT_SERVING, lets calls in flight finish within `graceMs`, then closes. */
  shutdown(graceMs?: number): Promise<void>;
}

/**
 * Binds a gRPC server with the standard health service. Services may be added after it is bound,
 * so that parts of one process can be given each other's address before they exist.
 */
export async function startGrpcServer(options: {
  host: string;
  port: number;
  services?: GrpcService[];
  /**
   * Milliseconds after which a client connection is ended ({@link MAX_CONNECTION_AGE_MS} by
   * default); `null` keeps connections for as long as the client holds them, as long-lived streams
   * that mean something while open (station links) need.
   */
  maxConnectionAgeMs?: number | null;
  /**
   * How often the server pings each connection, and how long it waits for the answer before
   * ending the connection (30 s and 20 s by default).
   */
  keepalive?: { timeMs: number; timeoutMs: number };
  /**
   * Whether the server and its services say SERVING from the start (the default). False leaves
   * them NOT_SERVING until told otherwise, as a service that has not yet heard from its database
   * must be (`watchHealth` turns them SERVING once it has); liveness answers SERVING either
   * way.
   */
  serving?: boolean;
}): Promise<GrpcServerHandle> {
  const maxAge =
    options.maxConnectionAgeMs === undefined ? MAX_CONNECTION_AGE_MS : options.maxConnectionAgeMs;
  const server = new Server({
    'grpc.keepalive_time_ms': options.keepalive?.timeMs ?? 30_000,
    ...(options.keepalive ? { 'grpc.keepalive_timeout_ms': options.keepalive.timeoutMs } : {}),
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    ...(maxAge === null ? {} : { 'grpc.max_connection_age_ms': maxAge }),
  });
  const initial = options.serving === false ? 'NOT_SERVING' : 'SERVING';
  const health = new HealthImplementation({ '': initial, [LIVENESS_SERVICE]: 'SERVING' });
  health.addToServer(server);
  const services: GrpcService[] = [];
  const add = (service: GrpcService) => {
    server.addService(service.definition, service.implementation);
    health.setStatus(service.name, initial);
    services.push(service);
  };
  for (const service of options.services ?? []) add(service);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${options.host}:${options.port}`,
      ServerCredentials.createInsecure(),
      (err, bound) => (err ? reject(err) : resolve(bound)),
    );
  });
  return {
    server,
    port,
    health,
    add,
    async shutdown(graceMs = 10_000) {
      health.setStatus('', 'NOT_SERVING');
      for (const service of services) health.setStatus(service.name, 'NOT_SERVING');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

export interface CallOverrides {
  /** Milliseconds from now; overrides the client's default deadline. */
  deadlineMs?: number;
  /** Propagates the caller's deadline and cancellation to this call. */
  parent?: ServerUnaryCall<unknown, unknown>;
  metadata?: Metadata;
}

type PromiseMethod<F> = F extends (
  request: infer Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: infer Res) => void,
) => ClientUnaryCall
  ? (request: Req, overrides?: CallOverrides) => Promise<Res>
  : never;

/** The promise form of a generated client: each method takes the request and resolves its answer. */
export type AsyncClient<C> = {
  [K in keyof C as [PromiseMethod<C[K]>] extends [never] ? never : K]: PromiseMethod<C[K]>;
} & { close(): void };

export interface ClientOptions {
  /** The service's name in error messages (`accounts`). */
  service: string;
  address: string;
  /** Default deadline of each call in milliseconds. */
  deadlineMs?: number;
}

/**
 * The deadline of a call made on behalf of `parent`: a fifth of the time the parent has left, at
 * most a second, before the parent's own. When the service called is down or slow, its failure
 * then reaches the parent's caller as what it is (`the stations service is unavailable`) before
 * the parent's deadline passes and blames the parent.
 */
function beforeParent(parent: ServerUnaryCall<unknown, unknown>): number {
  const at = parent.getDeadline();
  const parentDeadline = at instanceof Date ? at.getTime() : at;
  if (!Number.isFinite(parentDeadline)) return Number.POSITIVE_INFINITY;
  const left = parentDeadline - Date.now();
  return parentDeadline - Math.min(1_000, Math.max(0, left) / 5);
}

/**
 * Creates a promise client around a ts-proto generated grpc-js client constructor. Errors arrive as
 * SpoolError with the catalogue code the service sent.
 *
 * The client spreads calls over every address its target resolves to (`round_robin`). Calls wait
 * for a connection within their deadline rather than fail at once when none is up (as when the
 * replica that was up drains in a rolling update before the client has reconnected to the one
 * that replaced it): a call only goes out once a connection is ready, so waiting makes nothing run
 * twice. Re-resolution and reconnection are kept quick for the same reason.
 */
export function createClient<C extends Client>(
  Ctor: new (
    address: string,
    creds: ReturnType<typeof credentials.createInsecure>,
    options?: object,
  ) => C,
  options: ClientOptions,
): AsyncClient<C> {
  const client = new Ctor(options.address, credentials.createInsecure(), {
    'grpc.keepalive_time_ms': 30_000,
    'grpc.max_send_message_length': 64 * 1024 * 1024,
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    'grpc.dns_min_time_between_resolutions_ms': 2_000,
    // In-cluster peers: try a lost replica again every few seconds, well within a call's deadline.
    'grpc.max_reconnect_backoff_ms': 3_000,
  });
  const defaultDeadline = options.deadlineMs ?? 5_000;
  const proxy: Record<string, unknown> = {
    close: () => client.close(),
  };
  const proto = Object.getPrototypeOf(client) as Record<string, unknown>;
  for (const name of Object.keys(proto)) {
    const method = proto[name];
    if (typeof method !== 'function' || name === 'constructor') continue;
    proxy[name] = (request: unknown, overrides: CallOverrides = {}) =>
      new Promise((resolve, reject) => {
        const callOptions: Partial<CallOptions> = {};
        let deadline = Date.now() + (overrides.deadlineMs ?? defaultDeadline);
        if (overrides.parent) {
          callOptions.parent = overrides.parent;
          deadline = Math.min(deadline, beforeParent(overrides.parent));
        }
        callOptions.deadline = deadline;
        const metadata = overrides.metadata?.clone() ?? new Metadata();
        metadata.setOptions({ waitForReady: true });
        (method as UnaryMethod<unknown, unknown>).call(
          client,
          request,
          metadata,
          callOptions,
          (err, res) => (err ? reject(fromServiceError(err, options.service)) : resolve(res)),
        );
      });
  }
  return proxy as AsyncClient<C>;
}
