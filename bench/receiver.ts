/**
 * Webhook receivers for the harness: plain Node HTTP servers on loopback, one per port (each port
 * is one endpoint's origin, as distinct customers' servers are), answering 200 at once and noting
 * when each delivery arrived and which job it was about. They do not verify signatures: the
 * receiver's cost is the same for Spool and for the undici ceiling, and kept small for both.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { epochMs } from './clock.js';

export interface Arrival {
  port: number;
  path: string;
  at: number;
  type: string;
  /** `data.job.id` of a job event, else ''. */
  jobId: string;
  deliveryId: string;
}

export class Receivers {
  readonly arrivals: Arrival[] = [];
  readonly #servers: Server[] = [];
  readonly #listeners = new Set<(a: Arrival) => void>();

  /** Calls `fn` for each arrival from now on; returns a function that stops it. */
  onArrival(fn: (a: Arrival) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  async listen(ports: number[]): Promise<void> {
    for (const port of ports) {
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const at = epochMs();
          let type = '';
          let jobId = '';
          try {
            const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
              type?: string;
              data?: { job?: { id?: string } };
            };
            type = event.type ?? '';
            jobId = event.data?.job?.id ?? '';
          } catch {
            // not JSON: still an arrival
          }
          const arrival: Arrival = {
            port,
            path: req.url ?? '',
            at,
            type,
            jobId,
            deliveryId: String(req.headers['service-delivery'] ?? ''),
          };
          this.arrivals.push(arrival);
          for (const fn of this.#listeners) fn(arrival);
          res.writeHead(200, { 'content-length': '0' });
          res.end();
        });
      });
      // Longer than any sender's idle timeout, so a kept-alive connection is never cut mid-use.
      server.keepAliveTimeout = 120_000;
      server.headersTimeout = 130_000;
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
      this.#servers.push(server);
    }
  }

  /** Takes the arrivals so far (optionally only those on `path`), leaving the rest. */
  take(path?: string): Arrival[] {
    const taken: Arrival[] = [];
    const kept: Arrival[] = [];
    for (const a of this.arrivals) (path === undefined || a.path === path ? taken : kept).push(a);
    this.arrivals.length = 0;
    this.arrivals.push(...kept);
    return taken;
  }

  async close(): Promise<void> {
    for (const server of this.#servers) {
      server.closeAllConnections();
      server.close();
    }
    this.#servers.length = 0;
  }
}
