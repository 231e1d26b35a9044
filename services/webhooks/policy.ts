/**
 * When a webhook delivery is tried again, when it gives up and when its endpoint is disabled, as
 * pure functions of the attempt, its outcome, the endpoint's state and the clock's value: the
 * worker follows {@link retryAt} when an answer comes in, the claim follows {@link claimStep}
 * before it sends, and the recording of an outcome follows {@link nextStep}. Nothing here reads a
 * clock, a database or the network, so each rule is tested with plain numbers and dates.
 */
import { rfc3339 } from '../../lib/time.js';

const SECOND = 1000;
const DAY = 24 * 60 * 60 * SECOND;

/** The longest `Retry-After` honoured; a larger one counts as this. */
export const MAX_RETRY_AFTER_MS = 7 * DAY;

/** Why an endpoint was disabled: by its organization or an operator, a 410, or failing too long. */
export type DisabledReason = 'operator' | 'gone' | 'failing';

/** The settings the rules read (defaults.ts holds their defaults). */
export interface RetryPolicy {
  /** Waits between the attempts of a round; a round makes one attempt more than there are waits. */
  retryWaitsMs: readonly number[];
  /** Fraction by which each wait is lengthened at random, so retries do not arrive in step. */
  jitter: number;
  /** How long an endpoint may fail every attempt before it is disabled. */
  failingDisableMs: number;
}

/** What a delivery's notice says once it ends because its endpoint is disabled. */
export const DISABLED_NOTICE: Readonly<Record<DisabledReason, string>> = {
  operator: 'not sent again: the endpoint was disabled',
  gone: 'not sent again: the endpoint answered 410 Gone and was disabled',
  failing: 'not sent again: the endpoint was disabled after failing every attempt for 5 days',
};

/** The notice of a delivery whose round's last attempt was abandoned by a worker that stopped. */
export const LAST_ATTEMPT_ABANDONED =
  'no attempts left: the outcome of the last one is unknown, as the worker sending it stopped';

/** Attempts a round makes: one more than there are waits between them. */
export function attemptsPerRound(policy: Pick<RetryPolicy, 'retryWaitsMs'>): number {
  return policy.retryWaitsMs.length + 1;
}

/**
 * A receiver's `Retry-After` (seconds, or an HTTP date) as milliseconds from `now`; undefined when
 * absent or unreadable.
 */
export function retryAfterMs(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * SECOND, MAX_RETRY_AFTER_MS);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now.getTime()), MAX_RETRY_AFTER_MS);
}

/**
 * The wait after the `roundAttempt`-th attempt of a round failed, with jitter, and never shorter
 * than the receiver's `Retry-After`; undefined when that was the last attempt.
 */
export function retryDelayMs(
  roundAttempt: number,
  waits: readonly number[],
  options: { jitter: number; random: () => number; retryAfterMs?: number | undefined },
): number | undefined {
  const base = waits[roundAttempt - 1];
  if (base === undefined) return undefined;
  const jittered = base + Math.floor(base * options.jitter * options.random());
  return Math.max(jittered, options.retryAfterMs ?? 0);
}

/** An attempt's answer, as the worker has it when it comes in. */
export interface Answer {
  succeeded: boolean;
  /** The receiver's `Retry-After` header, if any. */
  retryAfter?: string | undefined;
}

/**
 * When to try again after the `roundAttempt`-th attempt of a round, answered at `now`: undefined
 * after a success and after the round's last attempt. `random` draws the jitter (0 to 1).
 */
export function retryAt(
  roundAttempt: number,
  answer: Answer,
  now: Date,
  policy: Pick<RetryPolicy, 'retryWaitsMs' | 'jitter'>,
  random: () => number,
): Date | undefined {
  if (answer.succeeded) return undefined;
  const delay = retryDelayMs(roundAttempt, policy.retryWaitsMs, {
    jitter: policy.jitter,
    random,
    retryAfterMs: retryAfterMs(answer.retryAfter, now),
  });
  return delay === undefined ? undefined : new Date(now.getTime() + delay);
}

/** What a claim does with a due delivery: send its next attempt, or end it with a notice. */
export type ClaimStep = { send: true } | { send: false; notice: string };

/**
 * Whether a due delivery may be sent: not when its endpoint is disabled (or gone: `enabled` is
 * null) and not when its round has no attempts left (the last one was abandoned).
 */
export function claimStep(
  roundAttempts: number,
  endpoint: { enabled: boolean | null; disabledReason: string | null },
  maxAttempts: number,
): ClaimStep {
  if (!endpoint.enabled) {
    const reason = (endpoint.disabledReason || 'operator') as DisabledReason;
    return { send: false, notice: DISABLED_NOTICE[reason] };
  }
  if (roundAttempts >= maxAttempts) return { send: false, notice: LAST_ATTEMPT_ABANDONED };
  return { send: true };
}

/** An attempt's outcome, as recorded. */
export interface Outcome {
  succeeded: boolean;
  statusCode: number;
  /** When the worker would try again ({@link retryAt}); undefined when the round is over. */
  retryAt: Date | undefined;
}

/** The endpoint's state as the recording reads it. */
export interface EndpointHealth {
  enabled: boolean;
  /** When the endpoint's current run of failed attempts began; null when its last one succeeded. */
  failingSince: Date | null;
}

/** What follows an attempt's outcome. */
export type Step =
  | { kind: 'succeeded' }
  | { kind: 'retry'; retryAt: Date }
  /** Ended failed; `notice` undefined keeps the delivery's notice as it was. */
  | { kind: 'giveUp'; notice: string | undefined }
  /** The endpoint is disabled, and the delivery ends failed. */
  | { kind: 'disable'; reason: Exclude<DisabledReason, 'operator'>; notice: string };

/** A step, and the endpoint's run of failures after the outcome. */
export interface Decision {
  step: Step;
  failingSince: Date | null;
}

/**
 * What follows an attempt started at `startedAt` with `outcome`, recorded at `now`: success ends
 * the delivery and the endpoint's run of failures; a 410 from an enabled endpoint disables it, and
 * so does failing every attempt for `failingDisableMs`; a failure to an endpoint disabled
 * meanwhile ends the delivery; otherwise it is tried again at `retryAt`, or given up once the
 * round has no attempts left.
 */
export function nextStep(
  startedAt: Date,
  outcome: Outcome,
  endpoint: EndpointHealth,
  now: Date,
  policy: Pick<RetryPolicy, 'failingDisableMs'>,
): Decision {
  if (outcome.succeeded) return { step: { kind: 'succeeded' }, failingSince: null };
  const failingSince = endpoint.failingSince ?? startedAt;
  if (endpoint.enabled && outcome.statusCode === 410) {
    const notice = 'the endpoint answered 410 Gone, so it was disabled';
    return { step: { kind: 'disable', reason: 'gone', notice }, failingSince };
  }
  if (endpoint.enabled && now.getTime() - failingSince.getTime() >= policy.failingDisableMs) {
    const notice = `every attempt to the endpoint since ${rfc3339(failingSince)} failed, so it was disabled`;
    return { step: { kind: 'disable', reason: 'failing', notice }, failingSince };
  }
  if (!endpoint.enabled) {
    return { step: { kind: 'giveUp', notice: DISABLED_NOTICE.operator }, failingSince };
  }
  if (outcome.retryAt) return { step: { kind: 'retry', retryAt: outcome.retryAt }, failingSince };
  return { step: { kind: 'giveUp', notice: undefined }, failingSince };
}
