/** A TCP relay to a local port, which a test cuts to take a connection's far end away. */
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net';

/** A TCP relay to a local port that a test can cut (dropping every connection) and restore. */
export class TcpRelay {
  readonly #server: NetServer;
  readonly #sockets = new Set<Socket>();
  #up = true;

  private constructor(server: NetServer) {
    this.#server = server;
  }

  static async start(targetPort: number): Promise<TcpRelay> {
    const server = createServer();
    const relay = new TcpRelay(server);
    server.on('connection', (client) => relay.#accept(client, targetPort));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return relay;
  }

  get port(): number {
    const address = this.#server.address();
    if (!address || typeof address === 'string') throw new Error('not listening');
    return address.port;
  }

  /** Drops every connection and refuses new ones until `restore()`. */
  cut(): void {
    this.#up = false;
    for (const s of this.#sockets) s.destroy();
  }

  restore(): void {
    this.#up = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #accept(client: Socket, targetPort: number): void {
    if (!this.#up) {
      client.destroy();
      return;
    }
    const target = connect(targetPort, '127.0.0.1');
    for (const [a, b] of [
      [client, target],
      [target, client],
    ] as const) {
      this.#sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        this.#sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  }
}
