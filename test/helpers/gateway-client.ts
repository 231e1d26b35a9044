/**
 * A client in front of several gateways, as integrators reach Spool behind a load balancer and as
 * docs/api.md asks them to behave: round robin over the gateways, and on a 503, a 504, a 409 for a
 * twin request still in progress, or a connection that failed, the same request again (with its
 * Idempotency-Key) after `Retry-After`. It keeps count of what it retried and of every error
 * answer that did not tell it when to try again.
 */
import { readdir } from 'node:fs/promises';
import type { ExecutionContext } from 'ava';
import { eventually } from './system.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface JobItem {
  id: string;
  reference: string;
  status: string;
}

export class GatewayClient {
  readonly #urls: string[];
  #next = 0;
  /** Error answers that are not an outage's, or that did not say when to try again. */
  readonly wrong: string[] = [];
  /** How many times each kind of answer or connection error was retried (`503`, `504`, `ECONNREFUSED`…). */
  readonly retried: Record<string, number> = {};

  constructor(urls: string[]) {
    this.#urls = urls;
  }

  async request<T>(
    method: string,
    path: string,
    options: { token: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: T }> {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const url = this.#urls[this.#next++ % this.#urls.length] as string;
      let wait = 50;
      try {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${options.token}`,
            ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
            ...options.headers,
          },
          ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
          signal: AbortSignal.timeout(20_000),
        });
        const text = await res.text();
        const retryAfter = res.headers.get('retry-after');
        const inProgress = res.status === 409 && text.includes('still in progress');
        // 503 and 504 both ask for the same request again: a 504's first try may have been done,
        // which its Idempotency-Key makes harmless.
        if (res.status !== 503 && res.status !== 504 && !inProgress) {
          if (res.status >= 400) this.wrong.push(`${method} ${path}: ${res.status} ${text}`);
          return { status: res.status, body: JSON.parse(text) as T };
        }
        this.#count(String(res.status));
        if (retryAfter === null) {
          this.wrong.push(`${method} ${path}: ${res.status} without Retry-After`);
        }
        // Retry-After is in seconds; this client waits at most one.
        wait = Math.min(Number(retryAfter ?? 1) * 1000, 1000);
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause;
        this.#count(cause?.code ?? (err as Error).name);
      }
      if (Date.now() > deadline) throw new Error(`${method} ${path}: no answer in 90 s`);
      await sleep(wait);
    }
  }

  /** Every job of the organization, page by page. */
  async allJobs(orgId: string, key: string): Promise<JobItem[]> {
    const items: JobItem[] = [];
    let cursor = '';
    do {
      const page = await this.request<{ items: JobItem[]; next_cursor: string }>(
        'GET',
        `/v1/orgs/${orgId}/jobs?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: key },
      );
      items.push(...page.body.items);
      cursor = page.body.next_cursor;
    } while (cursor);
    return items;
  }

  #count(kind: string) {
    this.retried[kind] = (this.retried[kind] ?? 0) + 1;
  }
}

/**
 * Checks what a fault run promises: the organization's jobs are exactly the `accepted` ones (none
 * lost, none made twice by a retry), all of them printed, and the file printers' folder `out` holds
 * one file per job's first attempt and nothing else.
 */
export async function assertPrintedOnce(
  t: ExecutionContext,
  run: { client: GatewayClient; orgId: string; key: string; accepted: string[]; out: string },
  timeoutMs: number,
): Promise<void> {
  const { client, orgId, key, accepted, out } = run;
  const jobs = await eventually(
    () => client.allJobs(orgId, key),
    (items) => items.length >= accepted.length && items.every((j) => j.status === 'printed'),
    timeoutMs,
  );
  t.deepEqual(
    jobs.map((j) => j.id).sort(),
    [...accepted].sort(),
    'the jobs are exactly the accepted ones: none lost, none made twice by a retry',
  );
  const files = (await readdir(out)).filter((f) => f.endsWith('.txt')).sort();
  t.deepEqual(
    files,
    accepted.map((id) => `${id}-1.txt`).sort(),
    'each accepted job printed once, and nothing else printed',
  );
}
