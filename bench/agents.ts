/**
 * Simulated station agents, run as their own process (`bench/run.ts` forks it): each holds one
 * station link (docs/station-link.md), reports one printer, prints to a discard backend (answers
 * every complete offer at once with `received` and then `result printed`), and reconnects when
 * the server ends its stream. Links are spread over a few HTTP/2 connections (`streamsPerChannel`
 * streams each) so that 10,000 links do not need 10,000 sockets on the harness's side.
 *
 * The links speak gRPC over `node:http2` directly (a request's headers, length-prefixed protobuf
 * messages each way, `grpc-status` in the trailers) rather than through @grpc/grpc-js's client,
 * which the real agent uses: the harness shares the machine's cores with Spool, and grpc-js's
 * per-call machinery (resolving, load-balancing and subchannel calls, interceptors, credentials
 * metadata) took about half of this process's CPU while 10,000 links connected.
 */
import http2 from 'node:http2';
import {
  AgentMessage,
  type PrinterReport,
  ServerMessage,
  StationLinkService,
} from '../gen/spool/v1/stations.js';
import { epochMs } from './clock.js';
import { serve } from './ipc.js';

const PRINTER: PrinterReport = {
  name: 'bench',
  status: 'ready',
  detail: '',
  capabilities: {
    paperSizes: ['A4', 'Letter'],
    duplex: true,
    color: false,
    copies: true,
    pageOptions: true,
  },
};

/** gRPC status codes the links act on. */
const UNAUTHENTICATED = 16;

const channels: Channel[] = [];
const links: SimLink[] = [];
/** When each job's offer reached its agent. */
const offeredAt = new Map<string, number>();
const counts = { offers: 0, printed: 0, ended: 0, reconnects: 0 };

/** One HTTP/2 connection to the link address, opened again when the server ends it. */
class Channel {
  readonly #origin: string;
  #session: http2.ClientHttp2Session | undefined;

  constructor(address: string) {
    this.#origin = `http://${address}`;
  }

  get session(): http2.ClientHttp2Session {
    if (!this.#session || this.#session.closed || this.#session.destroyed) {
      const session = http2.connect(this.#origin);
      // A failed connection fails its streams, which reconnect; the session's own error is noise.
      session.on('error', () => {});
      this.#session = session;
    }
    return this.#session;
  }

  close(): void {
    this.#session?.close();
    this.#session = undefined;
  }
}

function channel(address: string, index: number, streamsPerChannel: number): Channel {
  const n = Math.floor(index / streamsPerChannel);
  let found = channels[n];
  if (!found) {
    found = new Channel(address);
    channels[n] = found;
  }
  return found;
}

/** A gRPC message on the wire: a zero (uncompressed) byte, the length, the protobuf bytes. */
function frame(message: AgentMessage): Buffer {
  const body = AgentMessage.encode(message).finish();
  const out = Buffer.allocUnsafe(5 + body.length);
  out[0] = 0;
  out.writeUInt32BE(body.length, 1);
  out.set(body, 5);
  return out;
}

/** Cuts a response's DATA into its messages, which may span chunks or share one. */
function deframer(onMessage: (msg: ServerMessage) => void): (chunk: Buffer) => void {
  let pending: Buffer | undefined;
  return (chunk) => {
    let buf = pending ? Buffer.concat([pending, chunk]) : chunk;
    pending = undefined;
    while (buf.length >= 5) {
      const end = 5 + buf.readUInt32BE(1);
      if (buf.length < end) break;
      onMessage(ServerMessage.decode(buf.subarray(5, end)));
      buf = buf.subarray(end);
    }
    if (buf.length > 0) pending = buf;
  };
}

/**
 * One simulated agent's link. Like the real agent, it connects again when the stream ends for
 * any reason but a refused token (servers end connections every few minutes), after a short
 * backoff with jitter.
 */
class SimLink {
  readonly #channel: Channel;
  readonly #token: string;
  #stream: http2.ClientHttp2Stream | undefined;
  #closing = false;
  #backoffMs = 500;
  open = false;
  printerId = '';

  constructor(channel: Channel, token: string) {
    this.#channel = channel;
    this.#token = token;
  }

  /** Opens the link; resolves once the server has said welcome the first time. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => this.#connect(resolve, reject));
  }

  close(): void {
    this.#closing = true;
    this.#stream?.close(http2.constants.NGHTTP2_CANCEL);
  }

  #connect(welcomed?: () => void, failed?: (err: Error) => void): void {
    const stream = this.#channel.session.request({
      ':method': 'POST',
      ':path': StationLinkService.connect.path,
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: `Bearer ${this.#token}`,
    });
    this.#stream = stream;
    this.open = true;
    const attempts = new Map<string, number>();
    /** The stream's grpc-status, from its trailers (or its headers, when it had no messages). */
    let status: number | undefined;
    stream.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) status = Number(headers['grpc-status']);
    });
    stream.on('trailers', (trailers) => {
      status = Number(trailers['grpc-status']);
    });
    stream.on(
      'data',
      deframer((msg) => {
        if (msg.welcome) {
          this.printerId = msg.welcome.printerIds[PRINTER.name] ?? '';
          this.#backoffMs = 500;
          welcomed?.();
        }
        if (msg.offer) {
          counts.offers++;
          attempts.set(msg.offer.jobId, msg.offer.attempt);
          if (!offeredAt.has(msg.offer.jobId)) offeredAt.set(msg.offer.jobId, epochMs());
        }
        if (msg.chunk?.last) {
          // The discard backend: the whole document is here, so it is received and printed.
          const { jobId } = msg.chunk;
          const attempt = attempts.get(jobId) ?? 1;
          attempts.delete(jobId);
          stream.write(frame(AgentMessage.fromPartial({ received: { jobId, attempt } })));
          stream.write(
            frame(
              AgentMessage.fromPartial({ result: { jobId, attempt, printed: true, detail: '' } }),
            ),
          );
          counts.printed++;
        }
      }),
    );
    // A reset stream says why in 'error'; 'close' always follows.
    stream.on('error', () => {});
    stream.on('close', () => {
      this.open = false;
      counts.ended++;
      if (failed && !this.printerId) {
        failed(new Error(`the link ended before welcome (grpc-status ${status ?? 'none'})`));
        return;
      }
      if (this.#closing || status === UNAUTHENTICATED) return;
      const wait = this.#backoffMs * (0.5 + Math.random());
      this.#backoffMs = Math.min(this.#backoffMs * 2, 10_000);
      setTimeout(() => {
        if (this.#closing) return;
        counts.reconnects++;
        this.#connect();
      }, wait);
    });
    stream.write(
      frame(AgentMessage.fromPartial({ hello: { agentVersion: 'bench', printers: [PRINTER] } })),
    );
  }
}

const handlers = {
  /**
   * Opens a link per token, at most `concurrency` handshakes at a time (as agents coming back
   * after an outage would, spread by their backoff), and reports how long all of them took.
   */
  async connect(p: {
    address: string;
    tokens: string[];
    streamsPerChannel: number;
    concurrency: number;
  }) {
    const started = epochMs();
    const cpuBefore = process.cpuUsage();
    const printerIds: string[] = new Array(p.tokens.length).fill('');
    const errors: string[] = [];
    let next = 0;
    let failed = 0;
    const base = links.length;
    await Promise.all(
      Array.from({ length: Math.min(p.concurrency, p.tokens.length) }, async () => {
        while (next < p.tokens.length) {
          const i = next++;
          try {
            const link = new SimLink(
              channel(p.address, base + i, p.streamsPerChannel),
              p.tokens[i] as string,
            );
            await link.start();
            links.push(link);
            printerIds[i] = link.printerId;
          } catch (err) {
            failed++;
            if (errors.length < 5) errors.push(String(err));
          }
        }
      }),
    );
    const cpu = process.cpuUsage(cpuBefore);
    return {
      elapsedMs: epochMs() - started,
      /** This process's own CPU over the connect, in core·s: the harness's share of the cores. */
      cpuS: (cpu.user + cpu.system) / 1e6,
      printerIds,
      failed,
      errors,
    };
  },

  /** How many links are still open. */
  async status() {
    return { open: links.filter((l) => l.open).length, ...counts };
  },

  /** When each of `ids` was offered (null: never); forgets every offer seen so far. */
  async offerTimes(p: { ids: string[] }): Promise<Array<number | null>> {
    const out = p.ids.map((id) => offeredAt.get(id) ?? null);
    offeredAt.clear();
    return out;
  },

  /** Ends every link and closes the connections. */
  async disconnect() {
    for (const link of links) link.close();
    links.length = 0;
    for (const c of channels) c.close();
    channels.length = 0;
    offeredAt.clear();
  },
};

export type AgentsApi = typeof handlers;

serve(handlers);
