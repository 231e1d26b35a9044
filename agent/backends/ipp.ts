/**
 * Just enough IPP (RFC 8010/8011) to ask CUPS how a job ended. `lpstat` lists a finished job the
 * same way whether it completed, was cancelled or was aborted; `Get-Job-Attributes` tells them
 * apart by `job-state`.
 */
import { request } from 'node:http';
import { userInfo } from 'node:os';

/** Where a CUPS server listens: `host[:port]` (port 631 by default) or a domain socket path. */
export type CupsServer = string;

export const JOB_STATE = {
  pending: 3,
  held: 4,
  processing: 5,
  stopped: 6,
  canceled: 7,
  aborted: 8,
  completed: 9,
} as const;

const OP_GET_JOB_ATTRIBUTES = 0x0009;
const TAG = {
  operation: 0x01,
  end: 0x03,
  integer: 0x21,
  boolean: 0x22,
  enum: 0x23,
  textWithoutLanguage: 0x41,
  nameWithoutLanguage: 0x42,
  keyword: 0x44,
  uri: 0x45,
  charset: 0x47,
  naturalLanguage: 0x48,
} as const;

type Value = string | number | boolean;

/** An IPP response: its status code and every attribute by name (groups merged). */
export interface IppResponse {
  status: number;
  attributes: Map<string, Value[]>;
}

export interface JobInfo {
  state: number;
  reasons: string[];
  message: string;
}

export class IppError extends Error {
  readonly status: number | undefined;

  constructor(message: string, status?: number) {
    super(message);
    this.name = 'IppError';
    this.status = status;
  }
}

/** `client-error-not-found`: CUPS no longer knows the job (its history was purged). */
export const IPP_NOT_FOUND = 0x0406;

/** Asks the CUPS server for a job's state, state reasons and printer message. */
export async function getJobInfo(
  server: CupsServer,
  jobId: number,
  timeoutMs = 10_000,
): Promise<JobInfo> {
  const body = encodeRequest(OP_GET_JOB_ATTRIBUTES, 1, [
    [TAG.charset, 'attributes-charset', ['utf-8']],
    [TAG.naturalLanguage, 'attributes-natural-language', ['en']],
    [TAG.uri, 'job-uri', [`ipp://localhost/jobs/${jobId}`]],
    [TAG.nameWithoutLanguage, 'requesting-user-name', [userName()]],
    [
      TAG.keyword,
      'requested-attributes',
      ['job-state', 'job-state-reasons', 'job-printer-state-message'],
    ],
  ]);
  const response = parseResponse(await post(server, '/jobs/', body, timeoutMs));
  if (response.status >= 0x0400) {
    throw new IppError(
      `CUPS answered IPP status 0x${response.status.toString(16).padStart(4, '0')}`,
      response.status,
    );
  }
  const state = response.attributes.get('job-state')?.[0];
  if (typeof state !== 'number') throw new IppError('CUPS sent no job-state');
  return {
    state,
    reasons: (response.attributes.get('job-state-reasons') ?? []).map(String),
    message: String(response.attributes.get('job-printer-state-message')?.[0] ?? ''),
  };
}

/** The user `lp` submits jobs as, so CUPS shows the job's owner everything. */
function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'spool-agent';
  }
}

type Attribute = [tag: number, name: string, values: Value[]];

export function encodeRequest(
  operation: number,
  requestId: number,
  attributes: Attribute[],
): Buffer {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(8);
  header.writeUInt8(2, 0); // IPP 2.0
  header.writeUInt8(0, 1);
  header.writeUInt16BE(operation, 2);
  header.writeUInt32BE(requestId, 4);
  parts.push(header, Buffer.from([TAG.operation]));
  for (const [tag, name, values] of attributes) {
    values.forEach((value, i) => {
      const nameBytes = Buffer.from(i === 0 ? name : '', 'utf8');
      const valueBytes = encodeValue(tag, value);
      const head = Buffer.alloc(3);
      head.writeUInt8(tag, 0);
      head.writeUInt16BE(nameBytes.length, 1);
      const len = Buffer.alloc(2);
      len.writeUInt16BE(valueBytes.length, 0);
      parts.push(head, nameBytes, len, valueBytes);
    });
  }
  parts.push(Buffer.from([TAG.end]));
  return Buffer.concat(parts);
}

function encodeValue(tag: number, value: Value): Buffer {
  if (tag === TAG.integer || tag === TAG.enum) {
    const b = Buffer.alloc(4);
    b.writeInt32BE(Number(value), 0);
    return b;
  }
  if (tag === TAG.boolean) return Buffer.from([value ? 1 : 0]);
  return Buffer.from(String(value), 'utf8');
}

/** Decodes a response; values of tags this client does not need come back as raw hex strings. */
export function parseResponse(data: Buffer): IppResponse {
  if (data.length < 9) throw new IppError('short IPP response');
  const status = data.readUInt16BE(2);
  const attributes = new Map<string, Value[]>();
  let pos = 8;
  let current: Value[] | undefined;
  while (pos < data.length) {
    const tag = data.readUInt8(pos);
    pos += 1;
    if (tag === TAG.end) break;
    if (tag < 0x10) {
      current = undefined; // a new attribute group
      continue;
    }
    if (pos + 2 > data.length) throw new IppError('truncated IPP response');
    const nameLength = data.readUInt16BE(pos);
    pos += 2;
    const name = data.toString('utf8', pos, pos + nameLength);
    pos += nameLength;
    const valueLength = data.readUInt16BE(pos);
    pos += 2;
    if (pos + valueLength > data.length) throw new IppError('truncated IPP response');
    const raw = data.subarray(pos, pos + valueLength);
    pos += valueLength;
    const value = decodeValue(tag, raw);
    if (nameLength > 0) {
      current = [];
      attributes.set(name, current);
    }
    // Out-of-band values (unknown, no-value) carry nothing.
    if (tag >= 0x20 && value !== undefined) current?.push(value);
  }
  return { status, attributes };
}

function decodeValue(tag: number, raw: Buffer): Value | undefined {
  if ((tag === TAG.integer || tag === TAG.enum) && raw.length === 4) return raw.readInt32BE(0);
  if (tag === TAG.boolean && raw.length === 1) return raw.readUInt8(0) !== 0;
  if (tag >= 0x40 && tag <= 0x49) return raw.toString('utf8');
  if (tag >= 0x20) return raw.toString('hex');
  return undefined;
}

function post(server: CupsServer, path: string, body: Buffer, timeoutMs: number): Promise<Buffer> {
  const target = server.startsWith('/') ? { socketPath: server } : hostAndPort(server);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...target,
        method: 'POST',
        path,
        headers: { 'Content-Type': 'application/ipp', 'Content-Length': body.length },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) {
            reject(new IppError(`CUPS answered HTTP ${res.statusCode}`));
          } else resolve(Buffer.concat(chunks));
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new IppError(`no answer from CUPS in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

function hostAndPort(server: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(server);
  const host = m?.[1] ?? m?.[2];
  if (!m || host === undefined)
    throw new IppError(`cannot read CUPS server ${JSON.stringify(server)}`);
  return { host, port: m[3] === undefined ? 631 : Number(m[3]) };
}
