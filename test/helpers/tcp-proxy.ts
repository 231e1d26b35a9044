/**
 * A TCP proxy on loopback that a test can cut, restore and slow down, to put a network fault
 * between two servers that talk to each other directly (NATS gateways, for one).
 */
import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';

export interface TcpProxyOptions {
  /** Where every accepted connection is forwarded. */
  target: { host: string; port: number };
  /** Address to listen on; defaults to `127.0.0.1`. */
  host?: string;
  /** Port to listen on; `0` (the default) lets the kernel pick one. */
  port?: number;
}

/** A running proxy. Connections made through it see every fault; its port stays the same. */
export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  /**
   * Destroys every connection through the proxy and resolves once they are closed. Until
   * `restore()`, a new connection is accepted and closed at once, as a peer behind a firewall
   * that resets would be, so the two sides see the link down rather than slow.
   */
  cut(): Promise<void>;
  /** Lets new connections through again. */
  restore(): void;
  /**
   * Delays every chunk, in each direction, by `ms` from when the proxy read it (0 turns the delay
   * off). Chunks keep their order: one read after a change in delay is never sent before one
   * read earlier.
   */
  setDelay(ms: number): void;
  /** Closes the listener and every connection. */
  stop(): Promise<void>;
}

/** Starts a proxy and resolves once it listens. */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const host = options.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  let refusing = false;
  let delayMs = 0;

  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  const server = createServer({ allowHalfOpen: true }, (client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ ...options.target, allowHalfOpen: true });
    track(client);
    track(upstream);
    // An error or an abrupt close on one side ends the other, as a broken link would.
    for (const [socket, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      socket.on('error', () => other.destroy());
      socket.once('close', (hadError) => {
        if (hadError || !socket.readableEnded) other.destroy();
      });
      relay(socket, other, () => delayMs);
    }
  });
  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');

  const destroyAll = async (): Promise<void> => {
    const open = [...sockets];
    for (const socket of open) socket.destroy();
    await Promise.all(
      open.filter((socket) => !socket.closed).map((socket) => once(socket, 'close')),
    );
  };

  let stopped: Promise<void> | undefined;
  return {
    host,
    port: address.port,
    async cut() {
      refusing = true;
      await destroyAll();
    },
    restore() {
      if (!stopped) refusing = false;
    },
    setDelay(ms: number) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`invalid delay ${ms}`);
      delayMs = ms;
    },
    stop() {
      stopped ??= (async () => {
        refusing = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await destroyAll();
        await closed;
      })();
      return stopped;
    },
  };
}

/**
 * Copies `from` to `to`, holding each chunk until `delay()` ms after it was read, and ends `to`
 * after the last chunk when `from` ends. Without a delay and with nothing queued, a chunk is
 * written at once.
 */
function relay(from: Socket, to: Socket, delay: () => number): void {
  // `chunk: null` marks the end of `from`.
  const queue: Array<{ due: number; chunk: Buffer | null }> = [];
  let timer: NodeJS.Timeout | undefined;
  let draining = false;

  const send = (chunk: Buffer | null): void => {
    if (to.destroyed) return;
    if (chunk === null) {
      to.end();
    } else if (!to.write(chunk) && !draining) {
      // Back-pressure: stop reading until the slow side has taken what it was given.
      draining = true;
      from.pause();
      to.once('drain', () => {
        draining = false;
        from.resume();
      });
    }
  };

  const flush = (): void => {
    timer = undefined;
    const now = Date.now();
    while (queue.length > 0 && (queue[0]?.due ?? 0) <= now) {
      send(queue.shift()?.chunk ?? null);
    }
    const next = queue[0];
    if (next) timer = setTimeout(flush, next.due - now);
  };

  const push = (chunk: Buffer | null): void => {
    const ms = delay();
    if (ms === 0 && queue.length === 0) {
      send(chunk);
      return;
    }
    // Never before the chunk ahead of it, even if the delay was lowered in between.
    const due = Math.max(Date.now() + ms, queue.at(-1)?.due ?? 0);
    queue.push({ due, chunk });
    timer ??= setTimeout(flush, due - Date.now());
  };

  from.on('data', (chunk: Buffer) => push(chunk));
  from.once('end', () => push(null));
  to.once('close', () => {
    clearTimeout(timer);
    queue.length = 0;
  });
}
