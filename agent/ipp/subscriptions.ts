/**
 * IPP event notifications, pulled (RFC 3995 subscriptions, RFC 3996 `ippget`): a subscription to
 * a printer's events, or to every queue of a CUPS server, its lease renewed and cancelled, and the
 * events since a sequence number. Get-Notifications asks the server to hold the request until
 * something happens (`notify-wait`); a server that does not hold it (CUPS answers at once) is asked
 * again by the caller.
 */
import { call, type IppEndpoint } from './client.js';
import {
  type Attribute,
  allAttributes,
  GROUP,
  groupsOf,
  IppError,
  integer,
  OPERATION,
  operationAttributes,
  STATUS,
  strings,
  TAG,
} from './protocol.js';

/** What a subscription is to: the endpoint (whose `printerUri` requests name) and the events. */
export interface SubscriptionTarget {
  endpoint: IppEndpoint;
  /** `notify-events` keywords (`printer-state-changed`, …). */
  events: string[];
  /** `requesting-user-name`, the subscription's owner: only its owner may renew or cancel it. */
  user: string;
}

export interface Lease {
  /** `notify-subscription-id`. */
  id: number;
  /** The lease the server granted, in seconds; 0 when it does not end. */
  seconds: number;
}

export interface Notifications {
  /** The sequence numbers of the events since the one asked after, in order. */
  sequences: number[];
  /** Their `notify-subscribed-event` keywords. */
  events: string[];
  /** The server ended the subscription (`successful-ok-events-complete`): no event will follow. */
  ended: boolean;
}

/**
 * Whether an error says the subscription is gone: its lease ran out, or the server restarted and
 * forgot it (`client-error-not-found`). A new one is then needed; the server still takes them.
 */
export function subscriptionGone(error: unknown): boolean {
  return error instanceof IppError && error.status === STATUS.notFound;
}

/** Create-Printer-Subscriptions with `notify-pull-method` `ippget`, for `leaseSeconds`. */
export async function createSubscription(
  target: SubscriptionTarget,
  leaseSeconds: number,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<Lease> {
  const response = await call(
    target.endpoint,
    {
      operation: OPERATION.createPrinterSubscriptions,
      groups: [
        { tag: GROUP.operation, attributes: operationAttributes(printerUri(target), user(target)) },
        {
          tag: GROUP.subscription,
          attributes: [
            { tag: TAG.keyword, name: 'notify-pull-method', values: ['ippget'] },
            { tag: TAG.keyword, name: 'notify-events', values: target.events },
            { tag: TAG.integer, name: 'notify-lease-duration', values: [leaseSeconds] },
          ],
        },
      ],
    },
    options,
  );
  const attributes = allAttributes(response);
  const id = integer(attributes, 'notify-subscription-id');
  if (id === undefined) {
    const why = integer(attributes, 'notify-status-code');
    throw new IppError(
      `${target.endpoint.printerUri} made no subscription${why === undefined ? '' : ` (notify-status-code 0x${why.toString(16)})`}`,
    );
  }
  // A server that grants the lease asked for may not say so (CUPS does not).
  return { id, seconds: integer(attributes, 'notify-lease-duration') ?? leaseSeconds };
}

/** Get-Notifications for the events from `sequence` on, asking the server to wait for one. */
export async function getNotifications(
  target: SubscriptionTarget,
  id: number,
  sequence: number,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<Notifications> {
  const response = await call(
    target.endpoint,
    {
      operation: OPERATION.getNotifications,
      groups: [
        {
          tag: GROUP.operation,
          attributes: operationAttributes(
            printerUri(target),
            user(target),
            { tag: TAG.integer, name: 'notify-subscription-ids', values: [id] },
            { tag: TAG.integer, name: 'notify-sequence-numbers', values: [sequence] },
            { tag: TAG.boolean, name: 'notify-wait', values: [true] },
          ),
        },
      ],
    },
    options,
  );
  const sequences: number[] = [];
  const events: string[] = [];
  for (const event of groupsOf(response, GROUP.eventNotification)) {
    const number = integer(event, 'notify-sequence-number');
    if (number === undefined || number < sequence) continue;
    sequences.push(number);
    events.push(...strings(event, 'notify-subscribed-event'));
  }
  return { sequences, events, ended: response.status === STATUS.eventsComplete };
}

/** Renew-Subscription for `leaseSeconds` more; resolves with the lease granted. */
export async function renewSubscription(
  target: SubscriptionTarget,
  id: number,
  leaseSeconds: number,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<number> {
  const response = await call(
    target.endpoint,
    subscriptionRequest(target, OPERATION.renewSubscription, id, {
      tag: TAG.integer,
      name: 'notify-lease-duration',
      values: [leaseSeconds],
    }),
    options,
  );
  return integer(allAttributes(response), 'notify-lease-duration') ?? leaseSeconds;
}

/** Cancel-Subscription. */
export async function cancelSubscription(
  target: SubscriptionTarget,
  id: number,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<void> {
  await call(
    target.endpoint,
    subscriptionRequest(target, OPERATION.cancelSubscription, id),
    options,
  );
}

function subscriptionRequest(
  target: SubscriptionTarget,
  operation: number,
  id: number,
  ...more: Attribute[]
) {
  return {
    operation,
    groups: [
      {
        tag: GROUP.operation,
        attributes: operationAttributes(
          printerUri(target),
          user(target),
          { tag: TAG.integer, name: 'notify-subscription-id', values: [id] },
          ...more,
        ),
      },
    ],
  };
}

function printerUri(target: SubscriptionTarget): Attribute {
  return { tag: TAG.uri, name: 'printer-uri', values: [target.endpoint.printerUri] };
}

function user(target: SubscriptionTarget): Attribute {
  return { tag: TAG.name, name: 'requesting-user-name', values: [target.user] };
}
