/**
 * A bare station-link client for tests that drive the protocol by hand (docs/station-link.md):
 * it says hello with the given printers, collects offers with their documents, and sends the
 * reports a test asks for. The real agent (agent/) is tested end to end elsewhere.
 */
import { createHash } from 'node:crypto';
import { type ClientDuplexStream, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import {
  AgentMessage,
  type DeepPartial,
  type JobOffer,
  type PrinterReport,
  type ServerMessage,
  StationLinkClient,
  type Welcome,
} from '../../gen/spool/v1/stations.js';

export interface ReceivedJob {
  offer: JobOffer;
  document: Buffer;
}

export interface LinkClient {
  welcome: Welcome;
  /** Every complete job offered so far, in order (a redelivered job appears again). */
  jobs: ReceivedJob[];
  withdrawn: Array<{ jobId: string; attempt: number }>;
  accepted: Array<{ jobId: string; attempt: number; kind: string }>;
  /** Sends a message; fields left out take their protobuf defaults. */
  send(message: DeepPartial<AgentMessage>): void;
  /** Waits until `predicate` holds over the client's state. */
  until(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves with the status the server ended the stream with. */
  ended: Promise<ServiceError | null>;
  close(): void;
}

export function printer(name: string, status = 'ready', detail = ''): PrinterReport {
  return {
    name,
    status,
    detail,
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
}

export async function connectLink(
  address: string,
  token: string,
  printers: PrinterReport[],
  /** The job attempts the hello says the agent holds unfinished. */
  held: Array<{ jobId: string; attempt: number }> = [],
): Promise<LinkClient> {
  const client = new StationLinkClient(address, credentials.createInsecure());
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  const call: ClientDuplexStream<AgentMessage, ServerMessage> = client.connect(metadata);
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of listeners) l();
  };
  const state: Omit<LinkClient, 'send' | 'until' | 'ended' | 'close'> = {
    welcome: undefined as unknown as Welcome,
    jobs: [],
    withdrawn: [],
    accepted: [],
  };
  const partial = new Map<string, { offer: JobOffer; parts: Buffer[] }>();
  call.on('data', (msg: ServerMessage) => {
    if (msg.welcome) state.welcome = msg.welcome;
    if (msg.offer) partial.set(msg.offer.jobId, { offer: msg.offer, parts: [] });
    if (msg.chunk) {
      const p = partial.get(msg.chunk.jobId);
      p?.parts.push(Buffer.from(msg.chunk.data));
      if (p && msg.chunk.last) {
        partial.delete(msg.chunk.jobId);
        const document = Buffer.concat(p.parts);
        const sha = createHash('sha256').update(document).digest('hex');
        if (sha !== p.offer.sha256) throw new Error(`document of ${p.offer.jobId} does not match`);
        state.jobs.push({ offer: p.offer, document });
      }
    }
    if (msg.withdrawn) state.withdrawn.push(msg.withdrawn);
    if (msg.accepted) state.accepted.push(msg.accepted);
    notify();
  });
  const ended = new Promise<ServiceError | null>((resolve) => {
    call.on('error', (err: ServiceError) => {
      notify();
      resolve(err);
    });
    call.on('end', () => {
      notify();
      resolve(null);
    });
  });
  const until = (predicate: () => boolean, timeoutMs = 10_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (predicate()) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error('timed out waiting on the station link'));
      }, timeoutMs);
      listeners.add(check);
      check();
    });
  const link: LinkClient = Object.assign(state, {
    send: (message: DeepPartial<AgentMessage>) => {
      call.write(AgentMessage.fromPartial(message));
    },
    until,
    ended,
    close: () => {
      call.cancel();
      client.close();
    },
  });
  link.send({ hello: { agentVersion: 'test', printers, held } });
  await Promise.race([
    until(() => state.welcome !== undefined),
    ended.then((err) => {
      throw err ?? new Error('the link ended before welcome');
    }),
  ]);
  return link;
}
