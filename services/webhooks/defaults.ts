/**
 * The webhooks service's default settings, in a module of their own so that the configuration's
 * variables (cli/config.ts) and the benchmark read them without loading the service.
 */
import type { WebhooksSettings } from './index.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

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
