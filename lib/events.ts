/**
 * Events for webhooks (spec §6) and the event stream: every state change that integrators hear of is published to
 * `events.<org>.<type>` as `{id, type, created_at, org_id, data}`, through the outbox of the
 * service that made the change. `id` identifies the event, so each endpoint gets one delivery of it.
 */
import { randomUUID } from 'node:crypto';
import { subjects } from './bus.js';
import {
  EVENT_TYPES,
  RESOURCE_EVENT_TYPES,
  type StreamEventType,
} from './contracts/event-types.js';
import { isUuid } from './ids.js';
import type { OutboxMessage } from './outbox.js';
import { rfc3339 } from './time.js';

export {
  EVENT_TYPES,
  type EventType,
  isWebhookEventType,
  PUBLISHED_EVENT_TYPES,
  RESOURCE_EVENT_TYPES,
  STREAM_EVENT_TYPES,
  type StreamEventType,
} from './contracts/event-types.js';

export interface SpoolEvent<T = unknown> {
  id: string;
  type: StreamEventType;
  created_at: string;
  org_id: string;
  data: T;
}

export function eventMessage(
  orgId: string,
  type: StreamEventType,
  data: unknown,
  at: Date,
): OutboxMessage {
  const event: SpoolEvent = {
    id: randomUUID(),
    type,
    created_at: rfc3339(at),
    org_id: orgId,
    data,
  };
  return { subject: subjects.event(orgId, type), payload: event };
}

/** The body every webhook receiver gets, and every event stream's `data:`: exactly `{type, created_at, org_id, data}` (spec §6). */
export function deliveryBody(event: Pick<SpoolEvent, 'type' | 'created_at' | 'org_id' | 'data'>) {
  return Buffer.from(
    JSON.stringify({
      type: event.type,
      created_at: event.created_at,
      org_id: event.org_id,
      data: event.data,
    }),
  );
}

/**
 * The event in a message of the `EVENTS` stream, or undefined when it is not one integrators are
 * told of. Pings are never published there: the test action makes them, one endpoint at a time.
 * Resource events (`station.created`…) are read too: the stream sends them, webhooks skip them.
 */
export function parseEvent(value: unknown): SpoolEvent | undefined {
  const e = value as Partial<SpoolEvent> | null;
  if (
    !e ||
    typeof e !== 'object' ||
    typeof e.id !== 'string' ||
    !isUuid(e.id) ||
    typeof e.org_id !== 'string' ||
    !isUuid(e.org_id) ||
    typeof e.created_at !== 'string' ||
    !(
      (EVENT_TYPES as readonly string[]).includes(e.type as string) ||
      (RESOURCE_EVENT_TYPES as readonly string[]).includes(e.type as string)
    ) ||
    e.type === 'ping' ||
    e.data === undefined
  ) {
    return undefined;
  }
  return e as SpoolEvent;
}
