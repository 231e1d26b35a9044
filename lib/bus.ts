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
  type StreamConfig,
} from '@nats-io/jetstream';
import { connect, credsAuthenticator, type NatsConnection, nanos } from '@nats-io/transport-node';
import type { Logger } from './logger.js';

export type { NatsConnection };

const HOUR = 60 * 60 * 1000;

/** The streams Spool uses; created or updated at start by every process that publishes. */
export const STREAMS: Array<Partial<StreamConfig> & { name: string; subjects: string[] }> = [
  { name: 'DISPATCH', subjects: ['dispatch.>'], max_age: nanos(7 * 24 * HOUR) },
  { name: 'REPORTS', subjects: ['reports.>'], max_age: nanos(7 * 24 * HOUR) },
  { name: 'EVENTS', subjects: ['events.>'], max_age: nanos(7 * 24 * HOUR) },
  // Account changes other processes must hear of quickly, such as a revoked key.
  { name: 'ACCOUNTS', subjects: ['accounts.>'], max_age: nanos(24 * HOUR) },
];

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
  /** Jobs for one station: offers and withdrawals, written by the jobs outbox. */
  dispatch: (orgId: string, stationId: string) => `dispatch.${orgId}.${stationId}`,
  /** What a station reported about its jobs, read by the jobs service. */
  reports: (orgId: string, stationId: string) => `reports.${orgId}.${stationId}`,
  /** An event for webhooks, such as `events.<org>.job.printed`. */
  event: (orgId: string, type: string) => `events.${orgId}.${type}`,
  /** Core NATS (not stored): a station's newest link announces itself so older ones close. */
  linkOpened: (stationId: string) => `links.${stationId}.opened`,
  /** Core NATS: the station's token was revoked or replaced; its links close. */
  linkRevoked: (stationId: string) => `links.${stationId}.revoked`,
  /** Everything about one station's links. */
  links: (stationId: string) => `links.${stationId}.*`,
} as const;

export async function connectBus(options: {
  url: string;
  name: string;
  logger: Logger;
  /** A NATS credentials file (user JWT and NKey seed), as `nsc` or the NATS operator writes it. */
  credsFile?: string | undefined;
}): Promise<NatsConnection> {
  const creds = options.credsFile ? await readFile(options.credsFile) : undefined;
  const nc = await connect({
    servers: options.url.split(','),
    name: options.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...(creds ? { authenticator: credsAuthenticator(new Uint8Array(creds)) } : {}),
  });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
        options.logger.warn({ nats: s.type }, 'nats connection status');
      }
    }
  })();
  return nc;
}

/** Creates the streams, or brings an existing stream's configuration up to date. */
export async function ensureStreams(nc: NatsConnection): Promise<JetStreamManager> {
  const jsm = await jetstreamManager(nc);
  for (const stream of STREAMS) {
    const config = { ...stream, duplicate_window: nanos(DUPLICATE_WINDOW_MS) };
    try {
      await jsm.streams.info(stream.name);
      await jsm.streams.update(stream.name, config);
    } catch (err) {
      const missing =
        err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
      if (!missing) throw err;
      await jsm.streams.add(config);
    }
  }
  return jsm;
}
