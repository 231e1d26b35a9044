/**
 * Spans and W3C trace context for the hops no instrumentation library covers: NATS messages, the
 * outbox, the station link and webhook deliveries. Trace context travels as a plain record of
 * `traceparent` (and `tracestate`) wherever a job goes: outbox rows, NATS headers, job rows, link
 * messages, webhook delivery rows. Without an SDK (tracing off) every call here is a no-op.
 */

import type { MsgHdrs } from '@nats-io/transport-node';
import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from '@opentelemetry/api';

export { type Span, SpanKind };

export const tracer = trace.getTracer('spool');

/** Whether an SDK records spans in this process (lib/telemetry.ts says so when it starts one). */
let recording = false;

/**
 * Marks spans recorded from now on. Until then {@link inSpan} runs its function at once, without
 * a span, and the hot paths ask {@link tracing} before building a span's attributes and parent
 * (on the print path a header decode and a few objects per message, for spans nobody kept).
 */
export function setTracing(on: boolean): void {
  recording = on;
}

/** Whether spans are recorded in this process. */
export function tracing(): boolean {
  return recording;
}

/** What {@link inSpan} hands its function when no span is recorded. */
const NOT_RECORDED: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Trace context fields, as stored in rows and sent in messages. */
export type TraceCarrier = Record<string, string>;

/** The trace context of `ctx` (the active one by default) as a record; empty when not tracing. */
export function traceCarrier(ctx: Context = context.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context a carrier describes; the root context when it describes none. */
export function contextFrom(carrier: TraceCarrier | undefined): Context {
  return carrier ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

/** Writes the active trace context into NATS message headers. */
export function injectHeaders(headers: MsgHdrs, ctx: Context = context.active()): void {
  propagation.inject(ctx, headers, { set: (h, key, value) => h.set(key, value) });
}

/** The trace context NATS message headers carry; the root context when they carry none. */
export function contextFromHeaders(headers: MsgHdrs | undefined): Context {
  if (!headers) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers, HEADERS_GETTER);
}

const HEADERS_GETTER: TextMapGetter<MsgHdrs> = {
  get: (h, key) => h.get(key) || undefined,
  keys: (h) => h.keys(),
};

/**
 * The trace context a NATS message's headers carry, read (and the headers decoded) only when
 * spans are recorded; the root context otherwise.
 */
export function contextOfMessage(msg: { readonly headers?: MsgHdrs | undefined }): Context {
  return recording ? contextFromHeaders(msg.headers) : ROOT_CONTEXT;
}

export interface SpanSpec {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; the active context by default. */
  parent?: Context;
}

/**
 * Runs `fn` in a new active span and ends it when `fn` settles. A throw is recorded on the span,
 * which is marked as an error, and rethrown. With no span recorded, runs `fn` at once.
 */
export function inSpan<T>(
  name: string,
  spec: SpanSpec,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!recording) {
    try {
      return fn(NOT_RECORDED);
    } catch (err) {
      return Promise.reject(err);
    }
  }
  const options = { kind: spec.kind ?? SpanKind.INTERNAL, attributes: spec.attributes ?? {} };
  return tracer.startActiveSpan(name, options, spec.parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      recordError(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks a span failed with `err`. */
export function recordError(span: Span, err: unknown): void {
  const error = err instanceof Error ? err : new Error(String(err));
  span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}

/** The span name part for a subject: its first token (`dispatch.<org>.<station>` → `dispatch`). */
function subjectFamily(subject: string): string {
  const dot = subject.indexOf('.');
  return dot < 0 ? subject : subject.slice(0, dot);
}

/** Messaging attributes of a NATS publish or receive (OpenTelemetry semantic conventions). */
export function natsAttributes(
  operation: 'publish' | 'process',
  subject: string,
  messageId?: string,
): Attributes {
  return {
    'messaging.system': 'nats',
    'messaging.operation.name': operation,
    'messaging.operation.type': operation === 'publish' ? 'send' : 'process',
    'messaging.destination.name': subject,
    ...(messageId ? { 'messaging.message.id': messageId } : {}),
  };
}

/** The span name for publishing to or processing from `subject` (`publish dispatch`). */
export function natsSpanName(operation: 'publish' | 'process', subject: string): string {
  return `${operation} ${subjectFamily(subject)}`;
}

/** Attributes naming what a span is about, under Spool's own namespace. */
export function spoolAttributes(ids: {
  orgId?: string;
  jobId?: string;
  stationId?: string;
  printerId?: string;
  attempt?: number;
}): Attributes {
  const out: Attributes = {};
  if (ids.orgId) out['spool.org.id'] = ids.orgId;
  if (ids.jobId) out['spool.job.id'] = ids.jobId;
  if (ids.stationId) out['spool.station.id'] = ids.stationId;
  if (ids.printerId) out['spool.printer.id'] = ids.printerId;
  if (ids.attempt !== undefined) out['spool.job.attempt'] = ids.attempt;
  return out;
}
