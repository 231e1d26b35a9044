/**
 * `raw:HOST:PORT`: the document's bytes over a TCP connection, as to a printer's port 9100
 * (AppSocket/JetDirect). The printer interprets them; print options are not applied.
 */
import { connect } from 'node:net';
import {
  AS_IS_CAPABILITIES,
  type Backend,
  type Confirmation,
  copiesOf,
  HANDED_OFF,
  NotSentError,
  type PrinterStatus,
  type PrintJob,
} from './backend.js';
import { networkProblem } from './network.js';

export interface RawBackendOptions {
  host: string;
  port: number;
  /** Connecting may take this long (default 10 s). */
  connectTimeoutMs?: number;
  /** The connection may stall (no byte taken by the printer) this long (default 60 s). */
  idleTimeoutMs?: number;
  /**
   * After the last byte is written, how long to wait for the printer to close its side (default
   * 5 s). Many printers close once they have taken the job; some never do, so a job whose bytes
   * were all written counts as printed when this runs out.
   */
  lingerMs?: number;
}

const DEFAULTS = { connectTimeoutMs: 10_000, idleTimeoutMs: 60_000, lingerMs: 5_000 };
const PROBE_TIMEOUT_MS = 3_000;

export function createRawBackend(options: RawBackendOptions): Backend {
  const { host, port } = options;
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULTS.idleTimeoutMs;
  const lingerMs = options.lingerMs ?? DEFAULTS.lingerMs;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  let busy = 0;

  const send = (document: Buffer, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      let settled = false;
      let lingerTimer: NodeJS.Timeout | undefined;
      /** Until then, not a byte of the document went out. */
      let connected = false;
      const socket = connect({ host, port });
      const finish = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(lingerTimer);
        signal?.removeEventListener('abort', onAbort);
        socket.destroy();
        if (error) reject(error);
        else resolve();
      };
      const onAbort = () => finish(new Error(`raw ${where}: the agent stopped while sending`));
      signal?.addEventListener('abort', onAbort, { once: true });

      socket.setTimeout(connectTimeoutMs);
      socket.on('timeout', () => {
        finish(
          connected
            ? new Error(`raw ${where}: timed out sending`)
            : new NotSentError(`raw ${where}: timed out connecting`),
        );
      });
      socket.on('error', (error: NodeJS.ErrnoException) => {
        const message = `raw ${where}: ${networkProblem(error)}`;
        finish(connected ? new Error(message) : new NotSentError(message));
      });
      // What a printer says back (PJL status, say) is not needed, but must be read.
      socket.on('data', () => {});
      socket.on('close', () => {
        if (socket.writableFinished) finish();
        else
          finish(
            new Error(`raw ${where}: the printer closed the connection before taking the job`),
          );
      });
      socket.once('connect', () => {
        connected = true;
        socket.setTimeout(idleTimeoutMs);
        socket.end(document, () => {
          lingerTimer = setTimeout(() => finish(), lingerMs);
        });
      });
    });

  return {
    async print(job: PrintJob, signal?: AbortSignal): Promise<Confirmation> {
      busy += 1;
      try {
        // A raw printer takes the bytes as they are, so each copy is the document sent again.
        for (let copy = 1; copy <= copiesOf(job); copy += 1) {
          try {
            await send(job.document, signal);
          } catch (error) {
            // Once a copy came out, the job is no longer unsent: sending it again would repeat it.
            if (copy > 1 && error instanceof NotSentError) throw new Error(error.message);
            throw error;
          }
        }
        return HANDED_OFF;
      } finally {
        busy -= 1;
      }
    },

    async status(): Promise<PrinterStatus> {
      if (busy > 0) return { status: 'printing', detail: '', capabilities: AS_IS_CAPABILITIES };
      // Without a status protocol (SNMP, PJL) all the agent can know is whether the port answers.
      const problem = await probe(host, port, Math.min(connectTimeoutMs, PROBE_TIMEOUT_MS));
      return problem === undefined
        ? { status: 'ready', detail: '', capabilities: AS_IS_CAPABILITIES }
        : {
            status: 'offline',
            detail: `raw ${where}: ${problem}`,
            capabilities: AS_IS_CAPABILITIES,
          };
    },
  };
}

/** Opens and at once closes a connection; resolves with what went wrong, if anything. */
function probe(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (problem?: string) => {
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(timeoutMs, () => done('timed out connecting'));
    socket.once('connect', () => done());
    socket.once('error', (error) => done(networkProblem(error)));
  });
}
