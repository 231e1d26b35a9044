/**
 * A webhook receiver for tests: a real HTTP server on loopback that records every request with its
 * raw body and answers as the test tells it (a status, a redirect, silence until the timeout).
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The exact bytes of the body. */
  body: Buffer;
  /** `Service-Delivery` and `Service-Delivery-Attempt`, for convenience. */
  delivery: string;
  attempt: number;
}

/** How to answer a request; `hang` never answers (the sender's timeout ends it). */
export type Reply =
  | { status: number; headers?: Record<string, string>; body?: string }
  | 'hang'
  | 'reset';

export interface Receiver {
  url: string;
  requests: Received[];
  /** Decides each answer; 200 by default. */
  reply: (req: Received) => Reply | Promise<Reply>;
  /** Requests being answered right now, at most so far. */
  concurrent: { now: number; max: number };
  /** Resolves when `done` holds of the requests received so far. */
  until(done: (requests: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  /** The JSON bodies received for one delivery id. */
  forDelivery(id: string): Received[];
  close(): Promise<void>;
}

export async function startReceiver(
  reply: (req: Received) => Reply | Promise<Reply> = () => ({ status: 200 }),
): Promise<Receiver> {
  const requests: Received[] = [];
  const listeners = new Set<() => void>();
  const concurrent = { now: 0, max: 0 };
  const receiver: Receiver = {
    url: '',
    requests,
    reply,
    concurrent,
    until(done, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (done(requests)) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(requests);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(
              `receiver: condition not met in ${timeoutMs} ms; got ${requests.length} requests`,
            ),
          );
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    forDelivery: (id) => requests.filter((r) => r.delivery === id),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const received: Received = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks),
      delivery: String(req.headers['service-delivery'] ?? ''),
      attempt: Number(req.headers['service-delivery-attempt'] ?? 0),
    };
    requests.push(received);
    concurrent.now++;
    concurrent.max = Math.max(concurrent.max, concurrent.now);
    for (const l of listeners) l();
    const answer = await receiver.reply(received);
    if (answer === 'hang') {
      res.on('close', () => concurrent.now--);
      return;
    }
    concurrent.now--;
    if (answer === 'reset') {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, answer.headers ?? {});
    res.end(answer.body ?? '');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/** A URL on loopback where nothing listens: connections are refused. */
export async function downUrl(): Promise<string> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return `http://127.0.0.1:${port}/hooks`;
}

/** A reply that answers 200 only once `open` is called, counting the requests waiting for it. */
export interface Gate {
  reply(): Promise<Reply>;
  open(): void;
  /** Requests waiting now, and at most so far. */
  waiting: { now: number; max: number };
}

export function gate(): Gate {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const waiting = { now: 0, max: 0 };
  return {
    waiting,
    open: () => open(),
    async reply() {
      waiting.now++;
      waiting.max = Math.max(waiting.max, waiting.now);
      await opened;
      waiting.now--;
      return { status: 200 };
    },
  };
}
