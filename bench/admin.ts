/**
 * The operator API (`/admin/v1`, docs/api.md) as the harness uses it to set up organizations, API
 * keys, stations and webhook endpoints, many calls at once over a keep-alive pool.
 */
import { Pool } from 'undici';

export interface Station {
  id: string;
  token: string;
}

export class Admin {
  readonly #pool: Pool;
  readonly #token: string;

  constructor(baseUrl: string, token: string, connections = 32) {
    this.#pool = new Pool(baseUrl, { connections, pipelining: 1 });
    this.#token = token;
  }

  async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await this.#pool.request({
      path,
      method,
      headers: {
        authorization: `Bearer ${this.#token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300)
      throw new Error(`${method} ${path} answered ${res.statusCode}: ${text}`);
    return JSON.parse(text) as T;
  }

  async createOrg(name: string): Promise<string> {
    return (await this.call<{ org: { id: string } }>('POST', '/admin/v1/orgs', { name })).org.id;
  }

  /** A live key with the job scopes (or `scopes`); returns its secret. */
  async createKey(
    orgId: string,
    scopes = ['jobs:write', 'jobs:read', 'printers:read'],
  ): Promise<string> {
    const res = await this.call<{ secret: string }>('POST', `/admin/v1/orgs/${orgId}/keys`, {
      mode: 'live',
      name: 'bench',
      scopes,
    });
    return res.secret;
  }

  /** Creates `count` stations with `concurrency` calls in flight. */
  async createStations(orgId: string, count: number, concurrency = 32): Promise<Station[]> {
    const stations: Station[] = new Array(count);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, count) }, async () => {
        while (next < count) {
          const i = next++;
          const res = await this.call<{ station: { id: string }; token: string }>(
            'POST',
            `/admin/v1/orgs/${orgId}/stations`,
            { name: `bench-${i}` },
          );
          stations[i] = { id: res.station.id, token: res.token };
        }
      }),
    );
    return stations;
  }

  async createWebhook(orgId: string, url: string, events: string[]): Promise<string> {
    const res = await this.call<{ endpoint: { id: string } }>(
      'POST',
      `/admin/v1/orgs/${orgId}/webhooks`,
      { url, events },
    );
    return res.endpoint.id;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
