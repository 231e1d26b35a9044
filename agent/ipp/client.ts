/**
 * Sends IPP requests over HTTP (RFC 8010 §4): to a printer at `ipp://` or `ipps://`, or to CUPS on
 * its domain socket. A request's status code is checked here: a client or server error throws
 * {@link IppError} naming it and the printer's `status-message`; a printer's TLS certificate the
 * agent refuses throws {@link CertificateError}, saying why in words.
 */
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PeerCertificate } from 'node:tls';
import {
  decodeResponse,
  encodeRequest,
  GROUP,
  groupOf,
  IppError,
  type Request,
  type Response,
  statusName,
  strings,
} from './protocol.js';

/** Where IPP requests go: a host and port (TLS for ipps), or a domain socket; and the path. */
export interface IppEndpoint {
  host?: string;
  port?: number;
  socketPath?: string;
  path: string;
  tls?: boolean;
  /** The `printer-uri` operation attribute the endpoint's printer answers to. */
  printerUri: string;
}

const DEFAULT_PORT = 631;

/**
 * Reads `ipp://HOST[:PORT]/PATH` or `ipps://…` (IPv6 hosts in brackets). Throws with a message
 * that says what is expected.
 */
export function endpointOf(uri: string): IppEndpoint {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new Error(`cannot read ${JSON.stringify(uri)} as a URI; expected ipp://HOST[:PORT]/PATH`);
  }
  if (url.protocol !== 'ipp:' && url.protocol !== 'ipps:') {
    throw new Error(`${JSON.stringify(uri)} is not an ipp:// or ipps:// URI`);
  }
  if (url.hostname === '') throw new Error(`${JSON.stringify(uri)} names no host`);
  if (url.username || url.password || url.search || url.hash) {
    throw new Error(`${JSON.stringify(uri)}: an IPP printer URI has no user, query or fragment`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? DEFAULT_PORT : Number(url.port);
  const path = url.pathname === '' ? '/' : url.pathname;
  return { host, port, path, tls: url.protocol === 'ipps:', printerUri: url.href };
}

/** A printer's URI with no port when it is IPP's own, for details and logs. */
export function describe(endpoint: IppEndpoint): string {
  return endpoint.socketPath ?? endpoint.printerUri;
}

/**
 * An `ipps://` printer's certificate was refused, so nothing was sent: no CA the agent trusts
 * issued it (a printer's own self-signed certificate, until someone trusts it), or it names
 * another host, or it is out of date. Its message says which, and for an untrusted one how to
 * trust it; `cause` is Node's error.
 */
export class CertificateError extends Error {
  override name = 'CertificateError';
}

/** OpenSSL's verify results for a certificate that no CA the agent trusts vouches for. */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_UNTRUSTED',
]);

/** OpenSSL's verify results for a certificate out of date. */
const OUT_OF_DATE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);

/**
 * `error` as a {@link CertificateError} when it is Node refusing the certificate of the printer
 * dialled at `host`; any other error as it is.
 */
function certificateError(error: Error, host: string | undefined): Error {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  if (UNTRUSTED.has(code)) {
    return new CertificateError(
      `the printer's certificate is not trusted (${error.message}); to trust it, put it, or the ` +
        "CA that issued it, in a PEM file named by NODE_EXTRA_CA_CERTS in the agent's environment " +
        'and restart the agent',
      { cause: error },
    );
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    // Node's message lists only the certificate's IP addresses when an address was dialled.
    // A certificate may name a host twice (those CUPS makes do), which is said once.
    const alt = (error as { cert?: PeerCertificate }).cert?.subjectaltname;
    const names = alt && [...new Set(alt.split(', '))].join(', ');
    return new CertificateError(
      `the printer's certificate is not for ${host}${names ? ` (it names ${names})` : ''}; dial ` +
        'the printer by a name its certificate has',
      { cause: error },
    );
  }
  if (OUT_OF_DATE.has(code)) {
    return new CertificateError(`the printer's certificate was refused: ${error.message}`, {
      cause: error,
    });
  }
  return error;
}

let nextRequestId = 1;

/**
 * Sends `request` (its request id filled in), with `document` after it when given, and decodes
 * the answer. Throws {@link IppError} when the printer answers an error status, another HTTP
 * status, or nothing within `timeoutMs`, and {@link CertificateError} when its certificate is
 * refused; a network error (refused, unreachable) is thrown as it is.
 */
export async function call(
  endpoint: IppEndpoint,
  request: Omit<Request, 'requestId'>,
  options: { document?: Buffer; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<Response> {
  const requestId = nextRequestId;
  nextRequestId = (nextRequestId % 0x7fff_ffff) + 1;
  const head = encodeRequest({ ...request, requestId });
  const body = options.document ? Buffer.concat([head, options.document]) : head;
  const data = await post(endpoint, body, options.timeoutMs ?? 30_000, options.signal);
  const response = decodeResponse(data);
  if (response.status >= 0x0400) {
    const message = strings(groupOf(response, GROUP.operation), 'status-message')[0];
    throw new IppError(
      `${describe(endpoint)} answered ${statusName(response.status)}${message ? `: ${message}` : ''}`,
      response.status,
    );
  }
  return response;
}

function post(
  endpoint: IppEndpoint,
  body: Buffer,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Buffer> {
  const options: RequestOptions = {
    ...(endpoint.socketPath
      ? { socketPath: endpoint.socketPath }
      : { host: endpoint.host, port: endpoint.port }),
    method: 'POST',
    path: endpoint.path,
    headers: { 'Content-Type': 'application/ipp', 'Content-Length': body.length },
    timeout: timeoutMs,
    ...(signal ? { signal } : {}),
  };
  const send = endpoint.tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) {
          reject(new IppError(`${describe(endpoint)} answered HTTP ${res.statusCode}`));
        } else resolve(Buffer.concat(chunks));
      });
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(new IppError(`no answer from ${describe(endpoint)} in ${timeoutMs} ms`)),
    );
    req.on('error', (error) => reject(certificateError(error, endpoint.host)));
    req.end(body);
  });
}
