/**
 * The `--printer NAME=BACKEND` argument of `spool agent`: which printers a station drives and how.
 */
import { isAbsolute, resolve } from 'node:path';
import { endpointOf } from './ipp/client.js';

/** How the agent reaches one printer. */
export type BackendSpec =
  | { kind: 'file'; dir: string }
  | { kind: 'cups'; queue: string }
  | { kind: 'raw'; host: string; port: number }
  | { kind: 'ipp'; uri: string };

/** One `--printer` argument, parsed. */
export interface PrinterSpec {
  /** The name the agent reports; with `cups:*`, the prefix of every discovered queue's name. */
  name: string;
  backend: BackendSpec;
}

/** The queue of a `cups:*` spec: every queue the CUPS server has. */
export const ALL_CUPS_QUEUES = '*';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
// CUPS queue names: printable characters except space, tab, `/`, `\`, `#`, `'` and `"` (≤ 127).
const CUPS_QUEUE = /^[^\s/\\#'"]{1,127}$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

const USAGE =
  'expected NAME=BACKEND where NAME is letters, digits, ".", "_" or "-" (at most 64) and BACKEND ' +
  'is file:DIR, cups:QUEUE, cups:*, raw:HOST:PORT, ipp://HOST[:PORT]/PATH or ipps://HOST[:PORT]/PATH';

/** A `--printer` argument that cannot be used; the message says why and what is expected. */
export class PrinterSpecError extends Error {
  constructor(spec: string, reason: string) {
    super(`invalid printer ${JSON.stringify(spec)}: ${reason}`);
    this.name = 'PrinterSpecError';
  }
}

/**
 * Parses `NAME=BACKEND`. `file:DIR` is resolved against `cwd`. With `cups:*` the NAME is a prefix
 * (`office=cups:*` reports queue `hp` as `office/hp`), and `*=cups:*` reports the queue names as
 * they are. Throws {@link PrinterSpecError}.
 */
export function parsePrinterSpec(spec: string, cwd: string = process.cwd()): PrinterSpec {
  const eq = spec.indexOf('=');
  if (eq < 0) throw new PrinterSpecError(spec, `no "=": ${USAGE}`);
  const name = spec.slice(0, eq);
  const backend = spec.slice(eq + 1);
  const colon = backend.indexOf(':');
  const kind = colon < 0 ? backend : backend.slice(0, colon);
  const rest = colon < 0 ? '' : backend.slice(colon + 1);

  if (!(kind === 'cups' && rest === ALL_CUPS_QUEUES && name === '*') && !NAME.test(name)) {
    throw new PrinterSpecError(spec, `bad printer name ${JSON.stringify(name)}: ${USAGE}`);
  }
  switch (kind) {
    case 'file': {
      if (rest === '')
        throw new PrinterSpecError(spec, 'file: needs a directory, as in file:/var/spool/out');
      return { name, backend: { kind: 'file', dir: isAbsolute(rest) ? rest : resolve(cwd, rest) } };
    }
    case 'cups': {
      if (rest !== ALL_CUPS_QUEUES && !CUPS_QUEUE.test(rest)) {
        throw new PrinterSpecError(
          spec,
          `bad CUPS queue ${JSON.stringify(rest)}: name a queue (see lpstat -e) or use cups:*`,
        );
      }
      return { name, backend: { kind: 'cups', queue: rest } };
    }
    case 'raw':
      return { name, backend: parseRaw(spec, rest) };
    case 'ipp':
    case 'ipps':
      try {
        return { name, backend: { kind: 'ipp', uri: endpointOf(backend).printerUri } };
      } catch (error) {
        throw new PrinterSpecError(spec, (error as Error).message);
      }
    default:
      throw new PrinterSpecError(spec, `unknown backend ${JSON.stringify(kind)}: ${USAGE}`);
  }
}

function parseRaw(spec: string, rest: string): BackendSpec {
  // raw:HOST:PORT, with an IPv6 host in brackets: raw:[fe80::1]:9100.
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(rest);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || host === undefined) {
    throw new PrinterSpecError(spec, 'raw: needs HOST:PORT, as in raw:192.168.1.20:9100');
  }
  if (m[2] !== undefined && !HOST.test(host)) {
    throw new PrinterSpecError(spec, `bad host ${JSON.stringify(host)}`);
  }
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new PrinterSpecError(spec, `bad port ${JSON.stringify(m[3])}: expected 1 to 65535`);
  }
  return { kind: 'raw', host, port };
}

/** The name a queue found by `cups:*` is reported under. */
export function discoveredPrinterName(prefix: string, queue: string): string {
  return prefix === '*' ? queue : `${prefix}/${queue}`;
}
