/**
 * A private nats-server with JetStream for one test file, with its store in a temporary
 * directory that `stop()` removes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '../../lib/bus.js';
import { type NatsServer, startNatsServer } from '../../lib/nats-server.js';

/** A test nats-server; `url` and `port` stay the same across `restart()`. */
export interface TestNats {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** The pid of the current server process; it changes on `restart()`. */
  readonly pid: number;
  /** Stops the server (or waits for a killed one to exit) and starts it on the same port and store. */
  restart(): Promise<void>;
  /** Sends a signal (default SIGKILL) to the current server without waiting, to simulate a crash. */
  kill(signal?: NodeJS.Signals): void;
  /** Stops the server and removes its store. */
  stop(): Promise<void>;
}

/** Starts a nats-server with JetStream on a random port and a fresh temporary store. */
export async function startTestNats(): Promise<TestNats> {
  const storeDir = await mkdtemp(join(tmpdir(), 'spool-test-nats-'));
  let server: NatsServer;
  try {
    server = await startNatsServer({ storeDir });
  } catch (error) {
    await rm(storeDir, { recursive: true, force: true });
    throw error;
  }
  const { url, port } = server;
  return {
    url,
    port,
    storeDir,
    get pid() {
      return server.pid;
    },
    async restart() {
      await server.stop();
      server = await startNatsServer({ storeDir, port });
    },
    kill(signal?: NodeJS.Signals) {
      server.kill(signal);
    },
    async stop() {
      await server.stop();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}

/**
 * Waits until JetStream answers on `nc` again after its server restarted. Until then the
 * connection is reconnecting, and what it publishes meanwhile is never stored nor acknowledged.
 */
export async function untilJetStreamAnswers(nc: NatsConnection): Promise<JetStreamManager> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const jsm = await jetstreamManager(nc, { timeout: 1_000 });
      await jsm.streams.info('EVENTS');
      return jsm;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
