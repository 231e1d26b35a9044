/**
 * One delivery attempt over HTTP (spec §6): a POST of the exact stored body with the signature
 * headers computed now, answered by any 2xx within the timeout. Everything else is a failure: a
 * 3xx (redirects are never followed), a 4xx or 5xx, a timeout, a refused or reset connection, or
 * an address the SSRF guard refuses. Sent through a pooled undici agent with a dispatch handler of
 * its own (DESIGN §6 measured undici several times faster than `fetch()`): it takes the status,
 * two headers and the start of the body as they come, where `request()` would wrap the answer in
 * a stream and an async resource for each attempt.
 */
import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher } from 'undici';
import { createConnector, isBlockedAddressError } from '../../lib/ssrf.js';
import { signatureHeaders } from './signing.js';

/** The user agent names webhooks version 2 (spec §6, §9). */
export const USER_AGENT = 'Spool-Webhooks/2';

/** How much of a receiver's answer the delivery log keeps. */
export const RESPONSE_BODY_LIMIT = 1024;

export interface SenderOptions {
  /** Milliseconds a receiver has to answer (spec: 15 s). */
  timeoutMs: number;
  /** Allow `http://` and non-public addresses (`spool dev`, `SPOOL_WEBHOOKS_ALLOW_INSECURE`). */
  allowInsecure: boolean;
  /** Connections kept per receiver origin; the worker's per-endpoint cap is the real limit. */
  connectionsPerOrigin: number;
}

export interface AttemptRequest {
  url: string;
  deliveryId: string;
  /** The attempt's number, sent as `Service-Delivery-Attempt`. */
  attempt: number;
  body: Buffer;
  /** Secrets that sign now, current first. */
  secrets: readonly string[];
  /** The attempt's time; the signatures' timestamp. */
  at: Date;
}

export interface AttemptResult {
  succeeded: boolean;
  /** 0 when no status arrived. */
  statusCode: number;
  /** Why the attempt failed, in words for the log; empty on success. */
  error: string;
  durationMs: number;
  /** The start of the answer's body, at most {@link RESPONSE_BODY_LIMIT} bytes. */
  responseBody: string;
  /** The receiver's `Retry-After`, as sent. */
  retryAfter: string | undefined;
}

export interface Sender {
  send(attempt: AttemptRequest): Promise<AttemptResult>;
  close(): Promise<void>;
}

function header(headers: Record<string, string | string[] | undefined>, name: string) {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** What a receiver answered: its status, the headers the log keeps, the start of its body. */
interface Answer {
  statusCode: number;
  retryAfter: string | undefined;
  location: string | undefined;
  bodyStart: string;
}

/** The error an attempt ends with when the receiver has not answered within the timeout. */
function timeoutError(timeoutMs: number): Error {
  const err = new Error(`no answer within ${timeoutMs} ms`);
  err.name = 'TimeoutError';
  return err;
}

/**
 * One POST through `agent`: resolves with the answer once its body ended or its first `limit`
 * bytes are in (the rest is not read: the connection is dropped), and rejects when no status
 * came. The whole exchange has `timeoutMs`, from now: a status that came in time counts even if
 * the body then stops short, which only shortens the log.
 */
function exchange(
  agent: Dispatcher,
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  timeoutMs: number,
  limit: number,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let controller: Dispatcher.DispatchController | undefined;
    /** Why the exchange stopped before undici handed over its controller. */
    let stopped: Error | undefined;
    let settled = false;
    const answer: Answer = {
      statusCode: 0,
      retryAfter: undefined,
      location: undefined,
      bodyStart: '',
    };
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err && answer.statusCode === 0) {
        reject(err);
        return;
      }
      answer.bodyStart = Buffer.concat(chunks, size).subarray(0, limit).toString('utf8');
      resolve(answer);
    };
    const stop = (reason: Error) => {
      if (controller && !controller.aborted) controller.abort(reason);
      else stopped ??= reason;
    };
    const timer = setTimeout(() => {
      const err = timeoutError(timeoutMs);
      settle(err);
      stop(err);
    }, timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (stopped) c.abort(stopped);
      },
      onResponseStart(_c, statusCode, responseHeaders) {
        // 1xx answers are interim; the status that counts comes after them.
        if (statusCode < 200) return;
        answer.statusCode = statusCode;
        answer.retryAfter = header(responseHeaders, 'retry-after');
        answer.location = header(responseHeaders, 'location');
      },
      onResponseData(_c, chunk) {
        if (settled) return;
        chunks.push(chunk);
        size += chunk.length;
        if (size >= limit) {
          settle();
          stop(new Error('the start of the answer is all the log keeps'));
        }
      },
      onResponseEnd() {
        settle();
      },
      onResponseError(_c, err) {
        settle(err);
      },
    };
    try {
      agent.dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers,
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        handler,
      );
    } catch (err) {
      settle(err as Error);
    }
  });
}

function describe(err: unknown, timeoutMs: number): string {
  if (isBlockedAddressError(err)) return err.message;
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return `no answer within ${timeoutMs} ms`;
  }
  if (e.cause && e.cause !== err) return describe(e.cause, timeoutMs);
  switch (e.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection closed before an answer';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host name did not resolve';
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `could not connect within ${timeoutMs} ms`;
    case 'UND_ERR_HEADERS_TIMEOUT':
      return `no answer within ${timeoutMs} ms`;
    default:
      return e.message ? `request failed: ${e.message}` : 'request failed';
  }
}

export function createSender(options: SenderOptions): Sender {
  const agent = new Agent({
    connect: createConnector({ guard: !options.allowInsecure, timeoutMs: options.timeoutMs }),
    connections: options.connectionsPerOrigin,
    pipelining: 1,
    keepAliveTimeout: 10_000,
  });
  const { timeoutMs } = options;

  return {
    async send(attempt) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const failed = (error: string, statusCode = 0): AttemptResult => ({
        succeeded: false,
        statusCode,
        error,
        durationMs: elapsed(),
        responseBody: '',
        retryAfter: undefined,
      });
      if (!options.allowInsecure && !attempt.url.startsWith('https:')) {
        return failed('only https URLs are allowed');
      }
      const timestamp = Math.floor(attempt.at.getTime() / 1000);
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'service-delivery': attempt.deliveryId,
        'service-delivery-attempt': String(attempt.attempt),
        ...signatureHeaders({
          deliveryId: attempt.deliveryId,
          timestamp,
          body: attempt.body,
          secrets: attempt.secrets,
        }),
      };
      let answer: Answer;
      try {
        answer = await exchange(
          agent,
          new URL(attempt.url),
          headers,
          attempt.body,
          timeoutMs,
          RESPONSE_BODY_LIMIT,
        );
      } catch (err) {
        return failed(describe(err, timeoutMs));
      }
      const status = answer.statusCode;
      const result: AttemptResult = {
        succeeded: status >= 200 && status < 300,
        statusCode: status,
        error: '',
        durationMs: elapsed(),
        responseBody: answer.bodyStart,
        retryAfter: answer.retryAfter,
      };
      if (!result.succeeded) {
        const location = answer.location;
        result.error =
          status >= 300 && status < 400
            ? `redirect${location ? ` to ${location}` : ''} not followed`
            : `the receiver answered ${status}`;
      }
      return result;
    },
    close: () => agent.close(),
  };
}
