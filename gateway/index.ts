/**
 * The gateway deployable: `createGateway` builds the HTTP server from the connections it is given
 * (used by `spool serve gateway` and `spool dev`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NatsConnection } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { createApp } from './app.js';
import type { Backends } from './clients.js';
import { followRevocations, KeyCache } from './key-cache.js';

export interface GatewayOptions {
  nc: NatsConnection;
  backends: Backends;
  logger: Logger;
  clock: Clock;
  operatorToken: string;
  bodyLimit: number;
  maxDocumentBytes: number;
  trustProxy: boolean;
  keyCacheTtlMs?: number;
}

export interface Gateway {
  server: Server;
  cache: KeyCache;
  /** Listens on host:port (0 for any free port) and resolves the port. */
  listen(host: string, port: number): Promise<number>;
  /** Turns readiness false, stops accepting, and waits for requests in flight up to `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const logger = options.logger.child({ service: 'gateway' });
  const cache = new KeyCache({
    clock: options.clock,
    ...(options.keyCacheTtlMs === undefined ? {} : { ttlMs: options.keyCacheTtlMs }),
    load: (hash) =>
      options.backends.accounts.authenticateApiKey({ keyHash: hash }).then((res) => {
        if (!res.key) throw new Error('accounts answered without a key');
        return { key: res.key, orgName: res.orgName };
      }),
  });
  const stopFollowing = followRevocations(options.nc, cache, logger);
  let draining = false;
  const app = createApp({
    backends: options.backends,
    cache,
    clock: options.clock,
    logger,
    operatorToken: options.operatorToken,
    bodyLimit: options.bodyLimit,
    maxDocumentBytes: options.maxDocumentBytes,
    trustProxy: options.trustProxy,
    ready: async () => !draining && !options.nc.isClosed(),
  });
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;

  return {
    server,
    cache,
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      }),
    async close(graceMs = 10_000) {
      draining = true;
      stopFollowing();
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
    },
  };
}
