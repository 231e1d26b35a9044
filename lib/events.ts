/**
 * Events for webhooks (spec §6): every state change that integrators hear of is published to
 * `events.<org>.<type>` as `{id, type, created_at, org_id, data}`, through the outbox of the
 * service that made the change. `id` identifies the event, so each endpoint gets one delivery of it.
 */
import { randomUUID } from 'node:crypto';
import { subjects } from './bus.js';
import type { OutboxMessage } from './outbox.js';
import { rfc3339 } from './time.js';

export const EVENT_TYPES = [
  'job.created',
  'job.printed',
  'job.failed',
  'job.cancelled',
  'job.retried',
  'station.online',
  'station.offline',
  'printer.status',
  'ping',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface SpoolEvent<T = unknown> {
  id: string;
  type: EventType;
  created_at: string;
  org_id: string;
  data: T;
}

export function eventMessage(
  orgId: string,
  type: EventType,
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
