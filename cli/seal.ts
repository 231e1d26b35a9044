/**
 * `spool seal FILE`: seals a document to a Spool server's public key (DESIGN §4) and prints the
 * `content` object of a sealed job, so integrators can send sealed jobs without implementing
 * RFC 9180 themselves.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { type Env, readConfig, url } from '../lib/config.js';
import { SEALING_ALGORITHM, seal } from '../lib/sealing.js';

const sealConfig = {
  url: url('SPOOL_URL', ['http', 'https'], {
    description: 'where the gateway answers',
    default: 'http://localhost:8080',
  }),
};

const TYPES: Record<string, string> = { '.pdf': 'application/pdf', '.txt': 'text/plain' };

export interface SealFlags {
  contentType?: string;
  publicKey?: string;
  /** Where the gateway answers; beats SPOOL_URL. */
  url?: string;
}

export async function sealFile(file: string, flags: SealFlags, env: Env) {
  const config = readConfig(
    flags.url === undefined ? env : { ...env, SPOOL_URL: flags.url },
    sealConfig,
  );
  let publicKey = flags.publicKey;
  if (!publicKey) {
    const res = await fetch(`${config.url.replace(/\/$/, '')}/v1/public/server-key`);
    if (!res.ok)
      throw new Error(`the server key could not be fetched: ${res.status} ${await res.text()}`);
    const key = (await res.json()) as { public_key: string; algorithm: string };
    if (key.algorithm !== SEALING_ALGORITHM) {
      throw new Error(`the server seals with ${key.algorithm}, which this spool does not know`);
    }
    publicKey = key.public_key;
  }
  const contentType =
    flags.contentType ?? TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
  const sealed = await seal(publicKey, await readFile(file));
  return { type: 'sealed', content_type: contentType, ...sealed };
}
