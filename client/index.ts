/** Spool's client package: what integrators use beside the HTTP API. */
export {
  DEFAULT_TOLERANCE_SECONDS,
  isWebhookVerificationError,
  parseSignatureHeader,
  type VerifyOptions,
  verifyWebhook,
  WEBHOOK_ERROR_CODES,
  type WebhookErrorCode,
  type WebhookEvent,
  WebhookVerificationError,
} from './webhooks.js';
