/**
 * One delivery attempt over HTTP (spec §6): a POST of the exact stored body with the signature
 * headers computed now, answered by any 2xx within the timeout. Everything else is a failure: a
 * 3xx (redirects are never followed), a 4xx or 5xx, a timeout, a refused or reset connection, or
 * an address the SSRF guard refuses. undici's `request()` with a pooled agent, which DESIGN §6
 * measured several times faster than `fetch()`.
 */
import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher, request } from 'undici';
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

function header(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function readStart(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      // Leaving the loop destroys the stream: a long answer is not read to its end.
      if (size >= limit) break;
    }
  } catch {
    // The status is what counts; a body cut short only shortens the log.
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
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
      let res: Dispatcher.ResponseData;
      try {
        res = await request(attempt.url, {
          dispatcher: agent,
          method: 'POST',
          headers,
          body: attempt.body,
          signal: AbortSignal.timeout(timeoutMs),
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
      } catch (err) {
        return failed(describe(err, timeoutMs));
      }
      const responseBody = await readStart(res.body, RESPONSE_BODY_LIMIT);
      const status = res.statusCode;
      const result: AttemptResult = {
        succeeded: status >= 200 && status < 300,
        statusCode: status,
        error: '',
        durationMs: elapsed(),
        responseBody,
        retryAfter: header(res.headers, 'retry-after'),
      };
      if (!result.succeeded) {
        const location = header(res.headers, 'location');
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
