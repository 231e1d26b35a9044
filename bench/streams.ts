/**
 * The event-stream clients, run as their own process (`bench/run.ts` forks it): holds many
 * `GET /v1/orgs/{org}/stream` connections open at once, each on its own socket as separate
 * browsers' would be, and notes when each event (by its id) arrives on each of them. To cost as
 * little CPU as it can beside the gateway it measures, it finds the `id:` lines in the bytes
 * without decoding them; one stream also reads `event:` and `data:`, to tell which job and event
 * type an id is. Keep-alive comments are counted on that stream only.
 */
import { type IncomingMessage, request } from 'node:http';
import { epochMs } from './clock.js';
import { serve } from './ipc.js';

interface Opened {
  res: IncomingMessage;
  close(): void;
}

const streams: Opened[] = [];
/** Arrival times (harness clock) of each event id, one entry per stream that received it. */
let arrivals = new Map<string, number[]>();
/** What each id is: the job and the event type, read from the first stream. */
let described = new Map<string, { jobId: string; type: string }>();
let comments = 0;
let ended = 0;

const ID_LINE = Buffer.from('\nid: ');
const NL = 0x0a;

function arrived(id: string, at: number): void {
  const list = arrivals.get(id);
  if (list) list.push(at);
  else arrivals.set(id, [at]);
}

/**
 * Notes the ids in a stream's bytes without decoding them: each message starts on a new line with
 * `id: ` (JSON bodies escape their line breaks, so `\nid: ` occurs nowhere else).
 */
function idScanner(): (chunk: Buffer) => void {
  // The stream's first message has no line break before it.
  let carry: Buffer = Buffer.from('\n');
  return (chunk) => {
    const at = epochMs();
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let from = 0;
    let done = 0;
    for (;;) {
      const p = buf.indexOf(ID_LINE, from);
      if (p < 0) break;
      const end = buf.indexOf(NL, p + ID_LINE.length);
      if (end < 0) {
        done = p;
        break;
      }
      arrived(buf.toString('latin1', p + ID_LINE.length, end), at);
      from = end;
      done = end;
    }
    // Keep what may hold the start of an id line split across chunks.
    carry = buf.subarray(Math.max(done, buf.length - ID_LINE.length - 20));
  };
}

function openOne(url: string, key: string, describe: boolean): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`the stream answered ${res.statusCode}`));
          return;
        }
        res.on('close', () => ended++);
        if (!describe) {
          res.on('data', idScanner());
          resolve({ res, close: () => req.destroy() });
          return;
        }
        res.setEncoding('utf8');
        let buffered = '';
        let id = '';
        let type = '';
        res.on('data', (chunk: string) => {
          const at = epochMs();
          buffered += chunk;
          let nl = buffered.indexOf('\n');
          while (nl >= 0) {
            const line = buffered.slice(0, nl);
            buffered = buffered.slice(nl + 1);
            if (line.startsWith('id: ')) {
              id = line.slice(4);
              arrived(id, at);
            } else if (line.startsWith(':')) {
              comments++;
            } else if (line.startsWith('event: ')) {
              type = line.slice(7);
            } else if (line.startsWith('data: ')) {
              try {
                const body = JSON.parse(line.slice(6)) as { data: { job?: { id: string } } };
                described.set(id, { jobId: body.data.job?.id ?? '', type });
              } catch {
                // not an event body
              }
            }
            nl = buffered.indexOf('\n');
          }
        });
        resolve({ res, close: () => req.destroy() });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const handlers = {
  /** Opens `count` streams, `concurrency` handshakes at a time. */
  async open(p: {
    url: string;
    key: string;
    count: number;
    concurrency: number;
  }): Promise<{ opened: number; failed: number; errors: string[]; ms: number }> {
    const started = epochMs();
    const errors: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(p.concurrency, p.count) }, async () => {
        while (next < p.count) {
          const i = next++;
          try {
            streams.push(await openOne(p.url, p.key, i === 0 && streams.length === 0));
          } catch (err) {
            errors.push((err as Error).message);
          }
        }
      }),
    );
    return {
      opened: p.count - errors.length,
      failed: errors.length,
      errors: [...new Set(errors)].slice(0, 5),
      ms: epochMs() - started,
    };
  },

  /** Forgets what arrived so far. */
  async reset(): Promise<void> {
    arrivals = new Map();
    described = new Map();
    comments = 0;
  },

  async status(): Promise<{ open: number; ended: number; messages: number; comments: number }> {
    let messages = 0;
    for (const list of arrivals.values()) messages += list.length;
    return { open: streams.length - ended, ended, messages, comments };
  },

  /** Every event id that arrived: what it is and when it reached each stream. */
  async arrivals(): Promise<Array<{ id: string; jobId: string; type: string; at: number[] }>> {
    return [...arrivals.entries()].map(([id, at]) => ({
      id,
      jobId: described.get(id)?.jobId ?? '',
      type: described.get(id)?.type ?? '',
      at,
    }));
  },

  async close(): Promise<void> {
    for (const s of streams.splice(0)) s.close();
    ended = 0;
  },
};

export type StreamsApi = typeof handlers;

serve(handlers);
