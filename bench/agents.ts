/**
 * Simulated station agents, run as their own process (`bench/run.ts` forks it): each holds one
 * station link (docs/station-link.md), reports one printer, prints to a discard backend (answers
 * every complete offer at once with `received` and then `result printed`), and reconnects when
 * the server ends its stream. A pool job (`offer.claim`) is claimed first, as the real agent does:
 * `received {claim}` once the whole document is here and the printer can print, and printed only
 * once the server accepts the claim (a withdrawal drops it). The pool scenario can make a link's
 * printer busy (it then keeps pool jobs unclaimed, as a printer working through a long job does)
 * or report another status, and can read which printer printed each job and when. Links are spread over a few HTTP/2 connections (`streamsPerChannel`
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
import { takesPoolJobs } from '../lib/printer-status.js';
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
    trays: [],
    documentFormats: [],
  },
};

/** gRPC status codes the links act on. */
const UNAUTHENTICATED = 16;

const channels: Channel[] = [];
const links: SimLink[] = [];
/** When each job's offer reached its agent. */
const offeredAt = new Map<string, number>();
const counts = {
  offers: 0,
  printed: 0,
  ended: 0,
  reconnects: 0,
  /** Pool jobs claimed, claims the server accepted, and pool jobs withdrawn before printing. */
  claims: 0,
  claimsAccepted: 0,
  withdrawn: 0,
};

/** A job's `result printed`, sent by the link of `printerId` at `at`. */
export interface PrintedResult {
  jobId: string;
  printerId: string;
  at: number;
}

/** Printed results of the links opened with `track`, until taken. */
let printedResults: PrintedResult[] = [];

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
  readonly #track: boolean;
  /** The current stream's pool jobs kept unclaimed, and those claimed and not yet answered. */
  #unclaimed = new Map<string, number>();
  #claiming = new Map<string, number>();
  #write: ((message: AgentMessage) => void) | undefined;
  open = false;
  printerId = '';
  /** The status the printer reports (pool jobs are claimed only while it takes them). */
  status = 'ready';
  /** Busy: pool jobs wait unclaimed, as behind a long job, whatever the status. */
  busy = false;

  constructor(channel: Channel, token: string, track: boolean) {
    this.#channel = channel;
    this.#token = token;
    this.#track = track;
  }

  /** Pool jobs this link holds: kept unclaimed, or claimed and not yet answered. */
  get holding(): { unclaimed: number; claiming: number } {
    return { unclaimed: this.#unclaimed.size, claiming: this.#claiming.size };
  }

  /** Reports the printer's `status` (as `printers`); returns when it was written. */
  report(status: string): number {
    this.status = status;
    this.#write?.(AgentMessage.fromPartial({ printers: { printers: [{ ...PRINTER, status }] } }));
    const at = epochMs();
    this.claimWaiting();
    return at;
  }

  /** Claims the pool jobs kept unclaimed, if the printer can take them now. */
  claimWaiting(): void {
    if (this.busy || !takesPoolJobs(this.status)) return;
    for (const [jobId, attempt] of this.#unclaimed) this.#claim(jobId, attempt);
    this.#unclaimed.clear();
  }

  #claim(jobId: string, attempt: number): void {
    counts.claims++;
    this.#claiming.set(jobId, attempt);
    this.#write?.(AgentMessage.fromPartial({ received: { jobId, attempt, claim: true } }));
  }

  #printed(jobId: string, attempt: number): void {
    this.#write?.(
      AgentMessage.fromPartial({ result: { jobId, attempt, printed: true, detail: '' } }),
    );
    counts.printed++;
    if (this.#track) printedResults.push({ jobId, printerId: this.printerId, at: epochMs() });
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
    // A new stream starts afresh: the server offers again what this link had not claimed.
    this.#unclaimed = new Map();
    this.#claiming = new Map();
    this.#write = (message) => stream.write(frame(message));
    const attempts = new Map<string, number>();
    const pool = new Set<string>();
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
          if (msg.offer.claim) pool.add(msg.offer.jobId);
          if (!offeredAt.has(msg.offer.jobId)) offeredAt.set(msg.offer.jobId, epochMs());
        }
        if (msg.chunk?.last) {
          const { jobId } = msg.chunk;
          const attempt = attempts.get(jobId) ?? 1;
          attempts.delete(jobId);
          if (pool.delete(jobId)) {
            // A pool job: claimed when the printer can take it, printed once the claim is accepted.
            // Offered again while claimed (by two replicas), it is claimed once.
            if (!this.#claiming.has(jobId)) {
              this.#unclaimed.set(jobId, attempt);
              this.claimWaiting();
            }
          } else {
            // The discard backend: the whole document is here, so it is received and printed.
            stream.write(frame(AgentMessage.fromPartial({ received: { jobId, attempt } })));
            this.#printed(jobId, attempt);
          }
        }
        if (msg.accepted?.kind === 'received') {
          const { jobId, attempt } = msg.accepted;
          if (this.#claiming.get(jobId) === attempt) {
            this.#claiming.delete(jobId);
            counts.claimsAccepted++;
            this.#printed(jobId, attempt);
          }
        }
        if (msg.withdrawn) {
          const { jobId, attempt } = msg.withdrawn;
          const held =
            this.#claiming.get(jobId) === attempt || this.#unclaimed.get(jobId) === attempt;
          if (held) {
            this.#claiming.delete(jobId);
            this.#unclaimed.delete(jobId);
            counts.withdrawn++;
          }
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
      frame(
        AgentMessage.fromPartial({
          hello: { agentVersion: 'bench', printers: [{ ...PRINTER, status: this.status }] },
        }),
      ),
    );
  }
}

function linkOf(printerId: string): SimLink {
  const link = links.find((l) => l.printerId === printerId);
  if (!link) throw new Error(`no link reports printer ${printerId}`);
  return link;
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
    /** Keep each printed result (printer, time) for `takePrinted`. */
    track?: boolean;
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
              p.track ?? false,
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

  /** How many links are still open, and the pool jobs they hold unclaimed or claiming. */
  async status() {
    let unclaimed = 0;
    let claiming = 0;
    for (const l of links) {
      unclaimed += l.holding.unclaimed;
      claiming += l.holding.claiming;
    }
    return { open: links.filter((l) => l.open).length, unclaimed, claiming, ...counts };
  },

  /** The pool jobs the link of `printerId` holds: kept unclaimed, or claimed and unanswered. */
  async holding(p: { printerId: string }) {
    return linkOf(p.printerId).holding;
  },

  /**
   * Makes the printer of `printerId` busy or not: while busy, its link keeps pool jobs unclaimed
   * (a printer working through a long job); no longer busy, it claims them.
   */
  async busy(p: { printerId: string; busy: boolean }): Promise<void> {
    const link = linkOf(p.printerId);
    link.busy = p.busy;
    link.claimWaiting();
  },

  /** The link of `printerId` reports its printer in `status`; returns when it was sent. */
  async printerStatus(p: { printerId: string; status: string }): Promise<number> {
    return linkOf(p.printerId).report(p.status);
  },

  /** The printed results of tracked links since the last call; forgets them. */
  async takePrinted(): Promise<PrintedResult[]> {
    const out = printedResults;
    printedResults = [];
    return out;
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
    printedResults = [];
  },
};

export type AgentsApi = typeof handlers;

serve(handlers);
