/** Collects the webhook events published on `events.>`, as the webhooks service will read them. */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { SpoolEvent } from '../../lib/events.js';

export interface EventLog {
  events: SpoolEvent<Record<string, unknown>>[];
  /** Waits for an event matching `match` and returns it. */
  waitFor(
    match: (e: SpoolEvent<Record<string, unknown>>) => boolean,
    timeoutMs?: number,
  ): Promise<SpoolEvent<Record<string, unknown>>>;
  close(): Promise<void>;
}

export async function collectEvents(url: string): Promise<EventLog> {
  const nc: NatsConnection = await connect({ servers: url });
  const events: SpoolEvent<Record<string, unknown>>[] = [];
  const waiters = new Set<() => void>();
  nc.subscribe('events.>', {
    callback: (_err, msg) => {
      events.push(msg.json());
      for (const w of waiters) w();
    },
  });
  await nc.flush();
  return {
    events,
    waitFor(match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event in ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => nc.close(),
  };
}
