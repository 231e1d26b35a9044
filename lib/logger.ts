/**
 * Structured JSON logging with pino. Secrets never reach a log line: the redact paths below cover
 * the places they could appear, and code logs key ids, never keys, and never document content or
 * webhook signatures. A line written inside a traced operation carries its `trace_id` and
 * `span_id`, so logs and traces meet.
 */
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'authorization',
  'req.headers.authorization',
  'headers.authorization',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'password',
  '*.password',
  'signature',
  '*.signature',
  'headers["service-signature"]',
  'headers["webhook-signature"]',
  'data',
  '*.data',
];

/** The active span's ids, for every log line written inside one. */
function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const ctx = span.spanContext();
  if (!isSpanContextValid(ctx)) return {};
  return {
    trace_id: ctx.traceId,
    span_id: ctx.spanId,
    trace_flags: `0${ctx.traceFlags.toString(16)}`,
  };
}

export interface LoggerConfig {
  level: string;
  /** A name for the process part that logs (`gateway`, `accounts`, …). */
  name: string;
}

export function createLogger(config: LoggerConfig, destination?: pino.DestinationStream): Logger {
  const options: LoggerOptions = {
    name: config.name,
    level: config.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: traceFields,
  };
  return destination ? pino(options, destination) : pino(options);
}

/** A logger that writes nothing; for tests and library use. */
export const silentLogger: Logger = pino({ level: 'silent' });
