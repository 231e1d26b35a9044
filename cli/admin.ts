/**
 * `spool admin …`: the operator's commands. Each sends one request to the gateway's `/admin/v1` and
 * prints the JSON it answers; an error prints the error body to stderr and exits 1.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Env, readConfig } from '../lib/config.js';
import { adminClientConfig } from './config.js';

export interface AdminClient {
  request(method: string, path: string, body?: unknown): Promise<unknown>;
}

export class AdminError extends Error {
  readonly body: string;
  readonly status: number;

  constructor(status: number, body: string) {
    super(`the gateway answered ${status}`);
    this.name = 'AdminError';
    this.status = status;
    this.body = body;
  }
}

export async function adminClient(env: Env): Promise<AdminClient> {
  const config = readConfig(env, adminClientConfig);
  let token = config.adminToken;
  if (!token) {
    const file = join(config.dataDir, 'admin-token');
    try {
      token = (await readFile(file, 'utf8')).trim();
    } catch {
      throw new Error(`set SPOOL_ADMIN_TOKEN, or run spool dev here so that ${file} exists`);
    }
  }
  const base = config.url.replace(/\/$/, '');
  return {
    async request(method, path, body) {
      const res = await fetch(`${base}/admin/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (!res.ok) throw new AdminError(res.status, text);
      return text === '' ? undefined : JSON.parse(text);
    },
  };
}
