/**
 * The agent's end of the station link (docs/station-link.md): one `StationLink.Connect` stream at
 * a time, opened with the device token, re-opened with capped exponential backoff and full jitter
 * whenever it ends, except when the server refuses the token. Given several server addresses, it
 * tries them in turn (see {@link splitServers}).
 */
import {
  type ChannelCredentials,
  type ClientDuplexStream,
  status as GrpcStatus,
  credentials as grpcCredentials,
  Metadata,
  type StatusObject,
} from '@grpc/grpc-js';
import {
  type AgentHello,
  type AgentMessage,
  type ServerMessage,
  StationLinkClient,
  type Welcome,
} from '../gen/spool/v1/stations.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { type BackoffOptions, backoffDelay } from './backoff.js';
import { TokenRefusedError } from './errors.js';

/** A link that stayed up this long resets the backoff to its first step. */
export const BACKOFF_RESET_AFTER_MS = 60_000;
const DEFAULT_WELCOME_TIMEOUT_MS = 30_000;

/** A gRPC target URI (`dns:///…`, `ipv4:a:1,b:2`), which grpc-js resolves itself. */
export function isTargetUri(address: string): boolean {
  return /^(dns|ipv4|ipv6|unix|unix-abstract|vsock):/.test(address);
}

/**
 * The addresses in a `--server` value: a comma-separated list of `host:port` (a region's own load
 * balancer first, then others to fall back on). A gRPC target URI (`dns:///…`, `ipv4:a:1,b:2`) is
 * one address, since grpc-js resolves its list itself.
 */
export function splitServers(server: string): string[] {
  if (isTargetUri(server)) return [server];
  return server
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * What makes a server address unusable as the station link's: a URL (the link is gRPC, not the
 * HTTP API), or a host without its port, which gRPC would take as port 443 and wait on forever.
 */
export function serverProblems(server: string): string[] {
  return splitServers(server).flatMap((address) => {
    if (isTargetUri(address)) return [];
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(address)) {
      return [
        `server ${JSON.stringify(address)} is a URL: give the station link's HOST:PORT, without ${address.split('//')[0]}//`,
      ];
    }
    if (!/:\d{1,5}$/.test(address)) {
      return [
        `server ${JSON.stringify(address)} has no port: give HOST:PORT, the station port of Spool (spool dev's STATION_PORT, 7070 by default)`,
      ];
    }
    return [];
  });
}

export interface LinkOptions {
  /**
   * The stations service's link listener: `host:port`, or several separated by commas. The first
   * is used at start and after a link that was up ends; each attempt that fails before the
   * server's welcome moves on to the next, so an agent returns to its first choice when it can.
   */
  server: string;
  token: string;
  /** Where the token came from, for the error that says it was refused. */
  tokenSource?: string | undefined;
  logger: Logger;
  clock: Clock;
  backoff: BackoffOptions;
  /** Default: plaintext. */
  credentials?: ChannelCredentials;
  /** A link without `welcome` this long after `hello` is dropped and opened again (default 30 s). */
  welcomeTimeoutMs?: number;
  random?: () => number;
  /** The hello for a new link; called for each connection. */
  hello(): AgentHello;
  /** `server` welcomed the agent: the link is up and {@link Link.send} works. */
  onWelcome(welcome: Welcome, server: string): void;
  /** Every server message after the welcome, in order. */
  onMessage(message: ServerMessage): void;
  /** The link that was up has ended. */
  onDown(): void;
  /** An attempt ended (before or after a welcome) and the next is `retryInMs` away. */
  onRetry?(info: { server: string; code: string; details: string; retryInMs: number }): void;
}

export interface Link {
  /** Sends on the link that is up; false (nothing sent) while there is none. */
  send(message: AgentMessage): boolean;
  readonly up: boolean;
  /** Closes the link for good; resolves when it is closed. */
  stop(): Promise<void>;
  /** Resolves after {@link stop}; rejects with {@link TokenRefusedError} on `UNAUTHENTICATED`. */
  readonly done: Promise<void>;
}

interface Outcome {
  code: GrpcStatus;
  details: string;
  welcomedAt: Date | undefined;
}

/**
 * An HTTP/1 server (Spool's HTTP port, say) answers the HTTP/2 preface with something grpc-js
 * cannot parse, and the attempt ends UNAVAILABLE with "Protocol error".
 */
/** The server ended this link for a newer one of the same station (services/stations/link.ts). */
function isReplaced(outcome: Outcome): boolean {
  return outcome.code === GrpcStatus.ABORTED && /replaced by a newer link/.test(outcome.details);
}

function looksLikeHttp(outcome: Outcome): boolean {
  return (
    outcome.welcomedAt === undefined &&
    outcome.code === GrpcStatus.UNAVAILABLE &&
    /Protocol error/i.test(outcome.details)
  );
}

export function startLink(options: LinkOptions): Link {
  const { token, logger, clock, backoff } = options;
  const servers = splitServers(options.server);
  if (servers.length === 0) throw new Error('the agent needs the server address (HOST:PORT)');
  const credentials = options.credentials ?? grpcCredentials.createInsecure();
  const welcomeTimeoutMs = options.welcomeTimeoutMs ?? DEFAULT_WELCOME_TIMEOUT_MS;
  const random = options.random ?? Math.random;

  let stopping = false;
  let call: ClientDuplexStream<AgentMessage, ServerMessage> | undefined;
  let up = false;
  let wake: (() => void) | undefined;

  const connectOnce = (server: string): Promise<Outcome> =>
    new Promise((resolve) => {
      // A channel per attempt, with its own subchannels: the agent's backoff is the only one.
      const client = new StationLinkClient(server, credentials, {
        'grpc.use_local_subchannel_pool': 1,
        'grpc.keepalive_time_ms': 30_000,
        'grpc.keepalive_timeout_ms': 10_000,
      });
      const metadata = new Metadata();
      metadata.set('authorization', `Bearer ${token}`);
      const current = client.connect(metadata);
      call = current;
      let welcomedAt: Date | undefined;
      let finished = false;
      const welcomeTimer = setTimeout(() => {
        logger.warn(
          { server, timeout_ms: welcomeTimeoutMs },
          'no welcome from the server; reconnecting',
        );
        current.cancel();
      }, welcomeTimeoutMs);

      const finish = (s: Pick<StatusObject, 'code' | 'details'>) => {
        if (finished) return;
        finished = true;
        clearTimeout(welcomeTimer);
        call = undefined;
        if (up) {
          up = false;
          safely(() => options.onDown(), 'onDown');
        }
        client.close();
        // grpc-js ends some details with an empty "Resolution note: ", which says nothing.
        resolve({
          code: s.code,
          details: s.details.replace(/\s*Resolution note:\s*$/, ''),
          welcomedAt,
        });
      };

      current.on('data', (message: ServerMessage) => {
        if (finished) return;
        if (welcomedAt === undefined) {
          if (!message.welcome) {
            logger.warn(
              { message: Object.keys(message) },
              'ignoring a server message before welcome',
            );
            return;
          }
          clearTimeout(welcomeTimer);
          welcomedAt = clock.now();
          up = true;
          logger.info(
            {
              station: message.welcome.stationName,
              station_id: message.welcome.stationId,
              org_id: message.welcome.orgId,
            },
            'station link up',
          );
          safely(() => options.onWelcome(message.welcome as Welcome, server), 'onWelcome');
          return;
        }
        if (message.welcome) {
          logger.warn('ignoring a second welcome');
          return;
        }
        safely(() => options.onMessage(message), 'onMessage');
      });
      // The status event carries the outcome; without a listener an error would be thrown.
      current.on('error', () => {});
      current.on('status', (s: StatusObject) => finish(s));
      current.on('end', () => {
        // The server finished its side; finish ours so the call can complete.
        current.end();
      });
      current.write({ hello: options.hello() });
    });

  function safely(fn: () => void, what: string): void {
    try {
      fn();
    } catch (err) {
      logger.error({ err, handler: what }, 'station link handler failed');
    }
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });

  // Servers already reported as not speaking the link, so the error is logged once, not per retry.
  const notLink = new Set<string>();

  const done = (async () => {
    let attempt = 0;
    let next = 0;
    /** Links in a row the server ended for a newer one. */
    let replaced = 0;
    while (!stopping) {
      const server = servers[next % servers.length] as string;
      const outcome = await connectOnce(server);
      if (stopping) return;
      if (outcome.code === GrpcStatus.UNAUTHENTICATED) {
        throw new TokenRefusedError(server, outcome.details, options.tokenSource);
      }
      if (
        outcome.welcomedAt !== undefined &&
        clock.now().getTime() - outcome.welcomedAt.getTime() >= BACKOFF_RESET_AFTER_MS
      ) {
        attempt = 0;
      }
      // The server ends a link when a newer one of the same station comes: another agent has
      // this station's token. Twice running, say so: the two split the station's jobs.
      replaced = isReplaced(outcome) ? replaced + 1 : 0;
      if (replaced === 2) {
        logger.error(
          { server },
          "another agent is linking with this station's token: each new link of one ends the other's, and the two split the station's jobs; give each machine its own station (spool admin station create) and token",
        );
      }
      const http = looksLikeHttp(outcome);
      const notTheLink = `${server} looks like an HTTP server, not Spool's station link; the station port is STATION_PORT, 7070 by default`;
      if (http && !notLink.has(server)) {
        notLink.add(server);
        logger.error({ server }, `${notTheLink} (the agent keeps retrying)`);
      }
      next = outcome.welcomedAt === undefined ? next + 1 : 0;
      const delay = backoffDelay(attempt, backoff, random);
      attempt += 1;
      const code = String(GrpcStatus[outcome.code] ?? outcome.code);
      safely(
        () =>
          options.onRetry?.({
            server,
            code,
            // What `spool agent status` shows as the last error: the reason, not gRPC's words.
            details: http ? notTheLink : outcome.details,
            retryInMs: delay,
          }),
        'onRetry',
      );
      logger.warn(
        {
          server,
          code,
          details: outcome.details,
          retry_in_ms: delay,
          ...(servers.length > 1 ? { next_server: servers[next % servers.length] } : {}),
        },
        'station link down; reconnecting',
      );
      await sleep(delay);
    }
  })();

  return {
    send(message: AgentMessage): boolean {
      if (!up || !call) return false;
      try {
        call.write(message);
        return true;
      } catch (err) {
        logger.warn({ err }, 'could not send on the station link');
        return false;
      }
    },
    get up() {
      return up;
    },
    async stop(): Promise<void> {
      stopping = true;
      call?.cancel();
      wake?.();
      await done.catch(() => {});
    },
    done,
  };
}
