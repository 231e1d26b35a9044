/**
 * The bytes of the event streams: an event as its SSE message (`id`, `event`, `data`), made once
 * and written to every stream that wants it, and the `Last-Event-ID` a client resumes from.
 */
import type { JsMsg } from '@nats-io/jetstream';
import { deliveryBody, parseEvent, type StreamEventType } from '../lib/events.js';

/** One event as it goes on the wire. */
export interface Piece {
  /** The message's bytes, made once and written to every stream that wants it. */
  bytes: Buffer;
  /** The same as one chunk of a chunked body, made when a stream first needs it. */
  chunk?: Buffer;
}

export interface Frame extends Piece {
  seq: number;
  type: StreamEventType;
}

/** The bytes as one chunk of a chunked HTTP/1.1 body. */
export function chunkOf(bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, CRLF]);
}

const CRLF = Buffer.from('\r\n');

export const KEEP_ALIVE: Piece = { bytes: Buffer.from(': keep-alive\n\n') };

/** The SSE message of one event: `id`, `event` and the webhook body as `data`. */
export function eventFrame(seq: number, type: string, body: Buffer | string): string {
  // JSON.stringify escapes line breaks inside strings, so the body is one line.
  return `id: ${seq}\nevent: ${type}\ndata: ${body}\n\n`;
}

/** The sequence a `Last-Event-ID` names, or undefined when it is not one of ours. */
export function parseEventId(text: string): number | undefined {
  if (!/^[1-9]\d{0,15}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** What the feed reads of a stored event: a consumer's message or one fetched by sequence. */
export type StoredEvent = Pick<JsMsg, 'subject' | 'seq' | 'json'>;

export function frameOf(msg: StoredEvent): { orgId: string; frame: Frame } | undefined {
  let event: ReturnType<typeof parseEvent>;
  try {
    event = parseEvent(msg.json());
  } catch {
    return undefined;
  }
  // The subject names the organization too; an event that disagrees goes to no one.
  if (!event || msg.subject !== `events.${event.org_id}.${event.type}`) return undefined;
  return {
    orgId: event.org_id,
    frame: {
      seq: msg.seq,
      type: event.type,
      bytes: Buffer.from(eventFrame(msg.seq, event.type, deliveryBody(event))),
    },
  };
}
