import type { Scope } from './scopes.js';

/**
 * The event types of spec §6, in its table's order: what webhook endpoints subscribe to, what the
 * event stream sends and what the console offers. Plain data (its one import is a type), so the
 * console can read it as the services do.
 */
export const EVENT_TYPES = [
  'job.created',
  'job.printed',
  'job.failed',
  'job.cancelled',
  'job.retried',
  'job.rerouted',
  'station.online',
  'station.offline',
  'printer.status',
  'ping',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The types of the changes that are published (every type but `ping`, which the test action
 * sends to one endpoint): what the event stream carries and what the console lists.
 */
export const PUBLISHED_EVENT_TYPES: readonly Exclude<EventType, 'ping'>[] = EVENT_TYPES.filter(
  (t): t is Exclude<EventType, 'ping'> => t !== 'ping',
);

/**
 * Changes to an organization's resources that consoles need to stay current: locations and
 * stations created, changed and deleted, printers reported for the first time, with other
 * capabilities and deleted (a printer's status is `printer.status`), pools created, changed and
 * deleted, API keys
 * made and revoked, members added, given another role and removed, invitations sent and gone
 * (withdrawn, replaced or accepted), webhook endpoints made, changed and deleted. Only the event
 * stream carries them; webhook endpoints cannot subscribe to them and `*` does not include them
 * (docs/realtime.md).
 */
export const RESOURCE_EVENT_TYPES = [
  'location.created',
  'location.updated',
  'location.deleted',
  'station.created',
  'station.updated',
  'station.deleted',
  'printer.created',
  'printer.updated',
  'printer.deleted',
  'pool.created',
  'pool.updated',
  'pool.deleted',
  'api_key.created',
  'api_key.revoked',
  'member.created',
  'member.updated',
  'member.deleted',
  'invitation.created',
  'invitation.deleted',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
] as const;

export type ResourceEventType = (typeof RESOURCE_EVENT_TYPES)[number];

/** Every type of event (the stream sends them all but `ping`). */
export type StreamEventType = EventType | ResourceEventType;

/** Every type the event stream sends, which `?types=` may name and the console listens to. */
export const STREAM_EVENT_TYPES: readonly Exclude<StreamEventType, 'ping'>[] = [
  ...PUBLISHED_EVENT_TYPES,
  ...RESOURCE_EVENT_TYPES,
];

/**
 * Who may receive an event type on the stream, beside the stream's own `jobs:read`: a key or
 * session with that scope, or `members` for the organization's signed-in people only (no scope
 * reads API keys, so no API key receives their events).
 */
export type EventReaders = Scope | 'members';

export const EVENT_READERS: Readonly<Record<Exclude<StreamEventType, 'ping'>, EventReaders>> = {
  'job.created': 'jobs:read',
  'job.printed': 'jobs:read',
  'job.failed': 'jobs:read',
  'job.cancelled': 'jobs:read',
  'job.retried': 'jobs:read',
  'job.rerouted': 'jobs:read',
  'station.online': 'jobs:read',
  'station.offline': 'jobs:read',
  'printer.status': 'jobs:read',
  'location.created': 'locations:read',
  'location.updated': 'locations:read',
  'location.deleted': 'locations:read',
  'station.created': 'printers:read',
  'station.updated': 'printers:read',
  'station.deleted': 'printers:read',
  'printer.created': 'printers:read',
  'printer.updated': 'printers:read',
  'printer.deleted': 'printers:read',
  'pool.created': 'printers:read',
  'pool.updated': 'printers:read',
  'pool.deleted': 'printers:read',
  'api_key.created': 'members',
  'api_key.revoked': 'members',
  'member.created': 'members',
  'member.updated': 'members',
  'member.deleted': 'members',
  'invitation.created': 'members',
  'invitation.deleted': 'members',
  'webhook_endpoint.created': 'webhooks:read',
  'webhook_endpoint.updated': 'webhooks:read',
  'webhook_endpoint.deleted': 'webhooks:read',
};

/** Whether `type` is one webhooks carry (every published type of spec §6 and `job.rerouted`). */
export function isWebhookEventType(type: string): type is EventType {
  return (EVENT_TYPES as readonly string[]).includes(type);
}
