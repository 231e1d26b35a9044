/**
 * The webhooks service's default settings, in a module of their own so that the configuration's
 * variables (cli/config.ts) and the benchmark read them without loading the service. The retry
 * policy (policy.ts) reads the settings these fill in.
 */
import type { RetryPolicy } from './policy.js';
import type { WebhooksSettings } from './settings.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * Spec §6: waits between the 8 attempts: 30 s, 2 min, 10 min, 30 min, 2 h, 6 h, 12 h. A delivery
 * makes one attempt more than there are waits.
 */
export const RETRY_WAITS_MS: readonly number[] = [
  30 * SECOND,
  2 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  6 * HOUR,
  12 * HOUR,
];

/** Each wait is lengthened by up to this fraction, at random, so retries do not arrive in step. */
export const RETRY_JITTER = 0.1;

/** An endpoint that fails every attempt this long is disabled. */
export const FAILING_DISABLE_MS = 5 * DAY;

/** The retry policy as the specification has it. */
export const RETRY_POLICY: RetryPolicy = {
  retryWaitsMs: RETRY_WAITS_MS,
  jitter: RETRY_JITTER,
  failingDisableMs: FAILING_DISABLE_MS,
};

export const WEBHOOK_DEFAULTS = {
  allowInsecure: false,
  timeoutMs: 15_000,
  retryWaitsMs: RETRY_WAITS_MS,
  rotationGraceMs: 24 * HOUR,
  maxPayloadBytes: 256 * 1024,
  concurrency: 256,
  endpointConcurrency: 16,
  pollMs: 1_000,
} satisfies Omit<WebhooksSettings, 'secretKey'>;
