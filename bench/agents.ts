/**
 * Simulated station agents, run as their own process (`bench/run.ts` forks it): each holds one
 * station link (docs/station-link.md), reports one printer, prints to a discard backend (answers
 * every complete offer at once with `received` and then `result printed`), and reconnects when
 * the server ends its stream. Links are spread over a few HTTP/2 connections (`streamsPerChannel`
 * streams each) so that 10,000 links do not need 10,000 sockets on the harness's side.
 */
import {
  type ClientDuplexStream,
  credentials,
  status as GrpcStatus,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import {
  AgentMessage,
  type PrinterReport,
  type ServerMessage,
  StationLinkClient,
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

const clients: StationLinkClient[] = [];
const links: SimLink[] = [];
/** When each job's offer reached its agent. */
const offeredAt = new Map<string, number>();
const counts = { offers: 0, printed: 0, ended: 0, reconnects: 0 };

function channel(address: string, index: number, streamsPerChannel: number): StationLinkClient {
  const n = Math.floor(index / streamsPerChannel);
  let client = clients[n];
  if (!client) {
    // A subchannel pool of its own makes each client its own HTTP/2 connection.
    client = new StationLinkClient(address, credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      'grpc.max_receive_message_length': 8 * 1024 * 1024,
    });
    clients[n] = client;
  }
  return client;
}

/**
 * One simulated agent's link. Like the real agent, it connects again when the stream ends for
 * any reason but a refused token (servers end connections every few minutes), after a short
 * backoff with jitter.
 */
class SimLink {
  readonly #client: StationLinkClient;
  readonly #token: string;
  #call: ClientDuplexStream<AgentMessage, ServerMessage> | undefined;
  #closing = false;
  #backoffMs = 500;
  open = false;
  printerId = '';

  constructor(client: StationLinkClient, token: string) {
    this.#client = client;
    this.#token = token;
  }

  /** Opens the link; resolves once the server has said welcome the first time. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => this.#connect(resolve, reject));
  }

  close(): void {
    this.#closing = true;
    this.#call?.cancel();
  }

  #connect(welcomed?: () => void, failed?: (err: Error) => void): void {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${this.#token}`);
    const call = this.#client.connect(metadata);
    this.#call = call;
    this.open = true;
    const attempts = new Map<string, number>();
    let ended = false;
    call.on('data', (msg: ServerMessage) => {
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
        call.write(AgentMessage.fromPartial({ received: { jobId, attempt } }));
        call.write(
          AgentMessage.fromPartial({ result: { jobId, attempt, printed: true, detail: '' } }),
        );
        counts.printed++;
      }
    });
    const onEnd = (err?: ServiceError) => {
      if (ended) return;
      ended = true;
      this.open = false;
      counts.ended++;
      if (failed && !this.printerId) {
        failed(err ?? new Error('the link ended before welcome'));
        return;
      }
      if (this.#closing || err?.code === GrpcStatus.UNAUTHENTICATED) return;
      const wait = this.#backoffMs * (0.5 + Math.random());
      this.#backoffMs = Math.min(this.#backoffMs * 2, 10_000);
      setTimeout(() => {
        if (this.#closing) return;
        counts.reconnects++;
        this.#connect();
      }, wait);
    };
    call.on('error', (err: ServiceError) => onEnd(err));
    call.on('end', () => onEnd());
    call.write(AgentMessage.fromPartial({ hello: { agentVersion: 'bench', printers: [PRINTER] } }));
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
    return { elapsedMs: epochMs() - started, printerIds, failed, errors };
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
    for (const client of clients) client.close();
    clients.length = 0;
    offeredAt.clear();
  },
};

export type AgentsApi = typeof handlers;

serve(handlers);
