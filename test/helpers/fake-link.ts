/**
 * A stand-in for the stations service's end of the station link, for agent tests: a real grpc-js
 * server implementing `StationLink` on 127.0.0.1 (port 0 at first, the same port after
 * `restart()`) that plays docs/station-link.md — token check, `welcome` after `hello`,
 * `accepted` for each report — and lets a test offer, withdraw and cut links.
 */
import { createHash } from 'node:crypto';
import {
  status as GrpcStatus,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
} from '@grpc/grpc-js';
import {
  type AgentHello,
  type AgentMessage,
  type PrintOptions,
  type ServerMessage,
  type StationLinkServer,
  StationLinkService,
} from '../../gen/spool/v1/stations.js';

export const GOOD_TOKEN = 'svc_dev_test_token';
const CHUNK_SIZE = 256 * 1024;

export interface FakeLinkOptions {
  /** Tokens the server takes (default: {@link GOOD_TOKEN}). */
  tokens?: string[];
  /** Answer every `received` and `result` with `accepted` (default true); may change later. */
  autoAccept?: boolean;
  /** Serve TLS with this key pair instead of plaintext. */
  tls?: { key: Buffer; cert: Buffer };
}

export interface OfferSpec {
  jobId: string;
  attempt?: number;
  printerName: string;
  document: Buffer | string;
  contentType?: string;
  title?: string;
  options?: Partial<PrintOptions>;
  /** Chunk size (default 256 KiB). */
  chunkSize?: number;
  /** Overrides, to offer a document that does not match. */
  sha256?: string;
  size?: number;
  /** W3C trace context the offer carries. */
  traceContext?: Record<string, string>;
  /** A pool job's offer: the agent claims it before printing. */
  claim?: boolean;
  priority?: number;
}

export function printerIdFor(name: string): string {
  return `printer-${name}`;
}

export class FakeConnection {
  readonly token: string;
  /** Every message the agent sent, hello included. */
  readonly messages: AgentMessage[] = [];
  readonly closed: Promise<void>;
  readonly #call: ServerDuplexStream<AgentMessage, ServerMessage>;
  readonly #link: FakeLink;
  readonly #waiters = new Set<() => void>();
  #ended = false;

  constructor(
    call: ServerDuplexStream<AgentMessage, ServerMessage>,
    link: FakeLink,
    token: string,
  ) {
    this.#call = call;
    this.#link = link;
    this.token = token;
    this.closed = new Promise((resolve) => {
      const close = () => {
        this.#ended = true;
        resolve();
        this.#notify();
      };
      call.on('end', close);
      call.on('cancelled', close);
      call.on('error', close);
      call.on('close', close);
    });
    call.on('data', (message: AgentMessage) => this.#onMessage(message));
  }

  get hello(): AgentHello | undefined {
    return this.messages[0]?.hello;
  }

  /** The reports (`received`, `result`) the agent sent after its hello, in order. */
  reports(): AgentMessage[] {
    return this.messages.filter((m) => m.received || m.result);
  }

  /** Resolves with the first message (past or future) that matches. */
  waitFor(match: (m: AgentMessage) => boolean, timeoutMs = 10_000): Promise<AgentMessage> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.messages.find(match);
        if (found) {
          done();
          resolve(found);
        } else if (this.#ended) {
          done();
          reject(new Error(`link closed before the message came; got ${describe(this.messages)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for a message; got ${describe(this.messages)}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** Waits for the `result` of a job attempt. */
  async result(jobId: string, attempt = 1, timeoutMs?: number) {
    const m = await this.waitFor(
      (x) => x.result?.jobId === jobId && x.result.attempt === attempt,
      timeoutMs,
    );
    if (!m.result) throw new Error('unreachable');
    return m.result;
  }

  send(message: ServerMessage): void {
    this.#call.write(message);
  }

  welcome(printerNames: string[]): void {
    this.send({
      welcome: {
        stationId: 'station-1',
        orgId: 'org-1',
        printerIds: Object.fromEntries(printerNames.map((n) => [n, printerIdFor(n)])),
        homeRegion: 'default',
        serverRegion: 'default',
        stationName: 'Front desk',
      },
    });
  }

  /** Sends `offer` and the document in chunks. */
  offer(spec: OfferSpec): void {
    const document = Buffer.isBuffer(spec.document) ? spec.document : Buffer.from(spec.document);
    const attempt = spec.attempt ?? 1;
    this.send({
      offer: {
        jobId: spec.jobId,
        attempt,
        printerId: printerIdFor(spec.printerName),
        printerName: spec.printerName,
        claim: spec.claim ?? false,
        priority: spec.priority ?? 50,
        title: spec.title ?? `job ${spec.jobId}`,
        contentType: spec.contentType ?? 'text/plain',
        size: spec.size ?? document.length,
        sha256: spec.sha256 ?? createHash('sha256').update(document).digest('hex'),
        traceContext: spec.traceContext ?? {},
        options: {
          copies: 1,
          duplex: '',
          color: '',
          paper: '',
          tray: '',
          pages: '',
          fitToPage: false,
          rotate: 0,
          ...spec.options,
        },
      },
    });
    const size = spec.chunkSize ?? CHUNK_SIZE;
    let offset = 0;
    do {
      const data = document.subarray(offset, offset + size);
      const last = offset + data.length >= document.length;
      this.send({ chunk: { jobId: spec.jobId, offset, data: Buffer.from(data), last } });
      offset += data.length;
      if (last) break;
    } while (offset < document.length);
  }

  withdraw(jobId: string, attempt = 1): void {
    this.send({ withdrawn: { jobId, attempt } });
  }

  accept(jobId: string, attempt: number, kind: 'received' | 'result'): void {
    this.send({ accepted: { jobId, attempt, kind } });
  }

  /** Ends the stream: with OK, or with the given status (as a restarting server would). */
  end(code: GrpcStatus = GrpcStatus.OK, details = ''): void {
    if (code === GrpcStatus.OK) this.#call.end();
    else this.#call.emit('error', { code, details });
  }

  #onMessage(message: AgentMessage): void {
    this.messages.push(message);
    if (message.hello && this.#link.autoWelcome) {
      this.welcome(message.hello.printers.map((p) => p.name));
    }
    if (this.#link.autoAccept) {
      if (message.received)
        this.accept(message.received.jobId, message.received.attempt, 'received');
      if (message.result) this.accept(message.result.jobId, message.result.attempt, 'result');
    }
    this.#notify();
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }
}

function describe(messages: AgentMessage[]): string {
  return JSON.stringify(
    messages.map((m) => {
      const [kind, body] = Object.entries(m).find(([, v]) => v !== undefined) ?? ['?', undefined];
      return kind === 'hello' ? 'hello' : { [kind]: body };
    }),
  );
}

export class FakeLink {
  readonly tokens: Set<string>;
  autoAccept: boolean;
  autoWelcome = true;
  readonly connections: FakeConnection[] = [];
  /** Connections refused for their token. */
  refused = 0;
  #server: Server | undefined;
  #port = 0;
  #taken = 0;
  readonly #waiters = new Set<() => void>();
  readonly #tls: FakeLinkOptions['tls'];

  private constructor(options: FakeLinkOptions) {
    this.#tls = options.tls;
    this.tokens = new Set(options.tokens ?? [GOOD_TOKEN]);
    this.autoAccept = options.autoAccept ?? true;
  }

  static async start(options: FakeLinkOptions = {}): Promise<FakeLink> {
    const link = new FakeLink(options);
    await link.#listen();
    return link;
  }

  get address(): string {
    return `127.0.0.1:${this.#port}`;
  }

  /**
   * The next connection not yet handed out by this method (in the order they came), once its
   * hello has come (and, with `autoWelcome`, the welcome has gone out).
   */
  async nextConnection(timeoutMs = 10_000): Promise<FakeConnection> {
    const conn = await this.#nextConnection(timeoutMs);
    await conn.waitFor((m) => m.hello !== undefined, timeoutMs);
    return conn;
  }

  #nextConnection(timeoutMs: number): Promise<FakeConnection> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const conn = this.connections[this.#taken];
        if (conn) {
          this.#taken += 1;
          done();
          resolve(conn);
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(`no new station link in ${timeoutMs} ms (${this.connections.length} so far)`),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** Drops every link and listens again on the same port, as a restarted server does. */
  async restart(): Promise<void> {
    this.#server?.forceShutdown();
    this.#server = undefined;
    await this.#listen();
  }

  /** Stops listening, dropping every link. */
  async stop(): Promise<void> {
    this.#server?.forceShutdown();
    this.#server = undefined;
  }

  async #listen(): Promise<void> {
    const server = new Server();
    const impl: StationLinkServer = {
      connect: (call) => this.#onCall(call),
    };
    server.addService(StationLinkService, impl);
    this.#port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(
        `127.0.0.1:${this.#port}`,
        this.#tls
          ? ServerCredentials.createSsl(null, [
              { private_key: this.#tls.key, cert_chain: this.#tls.cert },
            ])
          : ServerCredentials.createInsecure(),
        (err, port) => (err ? reject(err) : resolve(port)),
      );
    });
    this.#server = server;
  }

  #onCall(call: ServerDuplexStream<AgentMessage, ServerMessage>): void {
    const header = call.metadata.get('authorization')[0];
    const token = typeof header === 'string' ? header.replace(/^Bearer /, '') : '';
    if (!this.tokens.has(token)) {
      this.refused += 1;
      call.emit('error', {
        code: GrpcStatus.UNAUTHENTICATED,
        details: 'unknown or revoked device token',
      });
      return;
    }
    this.connections.push(new FakeConnection(call, this, token));
    for (const waiter of [...this.#waiters]) waiter();
  }
}
