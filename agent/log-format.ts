/**
 * Log lines for a person at a terminal: pino writes JSON, and this destination turns each line into
 * `13:04:07 INFO  station link up  station_id=… org_id=…`. Off a terminal (systemd's journal, a
 * file, a pipe) the agent keeps JSON, which log collectors read.
 */
import type { DestinationStream } from 'pino';

const LEVELS: Record<string, string> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
  fatal: 'FATAL',
};

// Fields every line has, or that the layout shows already.
const HIDDEN = new Set(['level', 'time', 'msg', 'name', 'pid', 'hostname']);

/** Formats one pino JSON line; a line that is not JSON is returned as it is. */
export function formatLogLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '';
  const level = LEVELS[String(record.level)] ?? String(record.level ?? '').toUpperCase();
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(record)) {
    if (HIDDEN.has(key) || value === undefined) continue;
    if (key === 'err' && value && typeof value === 'object') {
      const err = value as { message?: unknown; stack?: unknown };
      fields.push(`err=${JSON.stringify(String(err.message ?? ''))}`);
      if (record.level === 'debug' || record.level === 'trace') stack = String(err.stack ?? '');
      continue;
    }
    fields.push(
      `${key}=${typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`,
    );
  }
  const msg = typeof record.msg === 'string' ? record.msg : '';
  return `${time} ${level} ${msg}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}\n${stack ? `${stack}\n` : ''}`;
}

/** A pino destination writing {@link formatLogLine} lines to `out`. */
export function prettyDestination(out: NodeJS.WritableStream): DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) {
        if (line !== '') out.write(formatLogLine(line));
      }
    },
  };
}
