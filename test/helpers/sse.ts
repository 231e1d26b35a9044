/**
 * A Server-Sent Events client over node:http, as a browser's EventSource reads a stream: it parses
 * `id:`, `event:`, `data:` and comment lines as they arrive and keeps every message with the
 * time it arrived.
 */
import { request } from 'node:http';

export interface SseMessage {
  id: string;
  event: string;
  data: string;
  /** `Date.now()` when the message's last line arrived. */
  at: number;
}

export interface SseStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  messages: SseMessage[];
  /** Comment lines, without the leading colon. */
  comments: string[];
  /** Resolves when the server ends the stream (or the connection breaks). */
  ended: Promise<'end' | 'error'>;
  /** Resolves when `done` holds of the messages so far; rejects after `timeoutMs`. */
  until(done: (messages: SseMessage[]) => boolean, timeoutMs?: number): Promise<SseMessage[]>;
  /** The body of a non-200 answer. */
  body(): Promise<string>;
  close(): void;
}

export function openStream(
  url: string,
  options: { token?: string; lastEventId?: string; headers?: Record<string, string> } = {},
): Promise<SseStream> {
  const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      const messages: SseMessage[] = [];
      const comments: string[] = [];
      const waiters = new Set<() => void>();
      const notify = () => {
        for (const w of [...waiters]) w();
      };
      let raw = '';
      let buffered = '';
      let current: { id: string; event: string; data: string[] } = { id: '', event: '', data: [] };
      let lastId = '';
      res.setEncoding('utf8');
      const ended = new Promise<'end' | 'error'>((done) => {
        res.on('end', () => done('end'));
        res.on('error', () => done('error'));
        res.on('close', () => done(res.complete ? 'end' : 'error'));
      });
      res.on('data', (chunk: string) => {
        if (res.statusCode !== 200) {
          raw += chunk;
          return;
        }
        buffered += chunk;
        let nl = buffered.indexOf('\n');
        while (nl >= 0) {
          const line = buffered.slice(0, nl).replace(/\r$/, '');
          buffered = buffered.slice(nl + 1);
          if (line === '') {
            if (current.data.length > 0) {
              lastId = current.id || lastId;
              messages.push({
                id: lastId,
                event: current.event || 'message',
                data: current.data.join('\n'),
                at: Date.now(),
              });
            }
            current = { id: '', event: '', data: [] };
          } else if (line.startsWith(':')) {
            comments.push(line.slice(1).trim());
          } else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
            else if (field === 'data') current.data.push(value);
          }
          nl = buffered.indexOf('\n');
        }
        notify();
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        messages,
        comments,
        ended,
        until(done, timeoutMs = 10_000) {
          return new Promise((ok, fail) => {
            const check = () => {
              if (done(messages)) {
                waiters.delete(check);
                clearTimeout(timer);
                ok(messages);
              }
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(
                new Error(
                  `stream condition not met in ${timeoutMs} ms; got ${JSON.stringify(messages.map((m) => m.event))}`,
                ),
              );
            }, timeoutMs);
            waiters.add(check);
            check();
          });
        },
        async body() {
          await ended;
          return raw;
        },
        close() {
          req.destroy();
        },
      });
    });
    req.on('error', reject);
    req.end();
  });
}
