/**
 * Structured JSON logging with pino. Secrets never reach a log line: the redact paths below cover
 * the places they could appear, and code logs key ids, never keys.
 */
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
];

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
  };
  return destination ? pino(options, destination) : pino(options);
}

/** A logger that writes nothing; for tests and library use. */
export const silentLogger: Logger = pino({ level: 'silent' });
