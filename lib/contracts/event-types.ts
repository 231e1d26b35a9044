/**
 * The event types of spec §6, in its table's order: what webhook endpoints subscribe to, what the
 * event stream sends and what the console offers. Plain data with no imports, so the console can
 * read it as the services do.
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
