/**
 * The load generator's HTTP side: `POST /v1/orgs/{org}/jobs` over a keep-alive undici pool, with
 * a tiny text document, timed on the harness clock.
 */
import { Pool } from 'undici';
import { epochMs } from './clock.js';

export interface JobTarget {
  spoolUrl: string;
  key: string;
  orgId: string;
  /** Printers jobs go to, picked round robin or at random. */
  printerIds: string[];
  pick?: 'round-robin' | 'random';
  /** A pool jobs go to instead (`pool_id`), whose member Spool chooses. */
  poolId?: string;
}

export interface Posted {
  /** The job's id, or '' when the POST failed. */
  id: string;
  status: number;
  /** When the POST was due (open loop) or sent (closed loop). */
  sentAt: number;
  answeredAt: number;
  error?: string;
}

const DOCUMENT = 'Spool benchmark page\n'.repeat(4);

export class JobPoster {
  readonly #pool: Pool;
  readonly #target: JobTarget;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  #seq = 0;

  constructor(target: JobTarget, connections: number) {
    this.#target = target;
    this.#pool = new Pool(target.spoolUrl, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
    });
    this.#path = `/v1/orgs/${target.orgId}/jobs`;
    this.#headers = {
      authorization: `Bearer ${target.key}`,
      'content-type': 'application/json',
    };
  }

  #printer(): string {
    const ids = this.#target.printerIds;
    const i =
      this.#target.pick === 'random'
        ? Math.floor(Math.random() * ids.length)
        : this.#seq % ids.length;
    return ids[i] as string;
  }

  /** Posts one job; `dueAt` is when it should have been sent (open loop), now by default. */
  async post(dueAt = epochMs()): Promise<Posted> {
    const seq = this.#seq++;
    const body = JSON.stringify({
      ...(this.#target.poolId ? { pool_id: this.#target.poolId } : { printer_id: this.#printer() }),
      title: 'bench',
      reference: `bench-${seq}`,
      content: { type: 'text', data: DOCUMENT },
    });
    try {
      const res = await this.#pool.request({
        path: this.#path,
        method: 'POST',
        headers: this.#headers,
        body,
      });
      const text = await res.body.text();
      const answeredAt = epochMs();
      if (res.statusCode !== 201) {
        return {
          id: '',
          status: res.statusCode,
          sentAt: dueAt,
          answeredAt,
          error: text.slice(0, 300),
        };
      }
      const id = (JSON.parse(text) as { job: { id: string } }).job.id;
      return { id, status: 201, sentAt: dueAt, answeredAt };
    } catch (err) {
      return { id: '', status: 0, sentAt: dueAt, answeredAt: epochMs(), error: String(err) };
    }
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
