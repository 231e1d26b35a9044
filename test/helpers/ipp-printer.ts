/**
 * A real IPP Everywhere printer for the IPP tests: CUPS's `ippeveprinter`, on a free port of the
 * private network the IPP phase runs in (test/helpers/netns.ts).
 *
 * ippeveprinter runs a print command, written here, for each job, and reads CUPS-filter lines from
 * its stderr: `ATTR: job-impressions-completed=N` sets the job's impressions, `STATE: +reason` and
 * `STATE: -reason` add and remove the printer's state reasons (only its own set of keywords, see
 * {@link PrinterReason}); they stay after the job, and the printer adds `-warning` while printing
 * and `-report` while idle. An `ERROR:` line becomes the job's `job-state-message`, and a command
 * that exits non-zero aborts the job. Outside a job, only its web forms change its state: the
 * media form sets `media-empty` and `media-low` by the sheets in its trays, and while
 * `media-empty` is set ippeveprinter starts no job (the job waits, processing, with
 * `media-needed`).
 *
 * The command here records each job's IPP attributes, reports the state the test set, waits while
 * that state stops a printer (or the test holds jobs), and then fails or completes the job with the
 * impressions the test set.
 *
 * With `-K DIR`, ippeveprinter also takes TLS on its port, from any client that starts a handshake,
 * with a certificate for the host name `-n` gives it: `DIR/NAME.crt` and `DIR/NAME.key` when they
 * are there, even out of date, and otherwise a pair it makes, self-signed (for that name and
 * `NAME.local`), in DIR the first time a client asks. It still takes plain IPP on that port, so a
 * printer here that takes TLS is reached through a gate that passes on only connections that begin
 * with a TLS handshake, as a printer set to require TLS would: a client that dialled it without TLS
 * reaches nothing.
 */
import { X509Certificate } from 'node:crypto';
import {
  chmod,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { freePort } from './ports.js';
import { type Process, runProcess, spawnProcess } from './processes.js';

/** The printer-state-reasons keywords ippeveprinter knows; it ignores any other. */
export type PrinterReason =
  | 'other'
  | 'cover-open'
  | 'input-tray-missing'
  | 'marker-supply-empty'
  | 'marker-supply-low'
  | 'marker-waste-almost-full'
  | 'marker-waste-full'
  | 'media-empty'
  | 'media-jam'
  | 'media-low'
  | 'media-needed'
  | 'moving-to-paused'
  | 'paused'
  | 'spool-area-full'
  | 'toner-empty'
  | 'toner-low';

/** Reasons a printer cannot print with: a job waits in the print command while one is set. */
const STOPPING: PrinterReason[] = [
  'cover-open',
  'input-tray-missing',
  'marker-supply-empty',
  'marker-waste-full',
  'media-empty',
  'media-jam',
  'media-needed',
  'paused',
  'spool-area-full',
  'toner-empty',
];

export interface IppPrinter {
  /**
   * `ipp://127.0.0.1:PORT/ipp/print`; with {@link IppPrinterOptions.tls},
   * `ipps://localhost:GATE/ipp/print`, GATE a port that takes TLS only.
   */
  uri: string;
  /**
   * With {@link IppPrinterOptions.tls}: the file of the self-signed certificate the printer serves
   * (PEM).
   */
  certificate?: string;
  /** ippeveprinter's own port, where it takes plain IPP (the helpers here use it). */
  port: number;
  /** Its service name (DNS-SD and `printer-name`), unique to it. */
  name: string;
  /** Where ippeveprinter keeps the jobs' documents (`-d`). */
  spoolDir: string;
  /** The IPP attributes of each job the command ran for, oldest first (`IPP_SIDES` as `sides`). */
  jobs(): Promise<Array<Record<string, string>>>;
  /** How many impressions each job from now on says it printed (1 at first). */
  setImpressions(count: number): Promise<void>;
  /**
   * The printer's state reasons from now on, exactly these ([] for none). `media-empty` and
   * `media-low` show at once (the printer's media form empties or fills its trays), and while
   * `media-empty` is set the printer starts no job. The others are what a printer finds while
   * printing: the print command reports them, at once if a job is printing and otherwise when the
   * next one starts. A job stays processing while a reason that stops a printer is set (a jam, an
   * open cover, no paper...), and goes on when it is cleared.
   */
  setState(reasons: PrinterReason[]): Promise<void>;
  /** The reasons last given to {@link setState}. */
  state(): PrinterReason[];
  /** `setState` with `media-empty` added: out of paper. */
  emptyTray(): Promise<void>;
  /** `setState` without `media-empty`. */
  loadPaper(): Promise<void>;
  /** Jobs from now on stay processing, once the printer has their document, until released. */
  hold(): Promise<void>;
  release(): Promise<void>;
  /** Jobs from now on end aborted, `message` their `job-state-message`, until {@link succeed}. */
  fail(message?: string): Promise<void>;
  succeed(): Promise<void>;
  /** Get-Printer-Attributes ({@link getPrinterAttributes}). */
  attributes(names: string[]): Promise<IppAttributes>;
  output(): string;
  stop(): Promise<void>;
}

export interface IppPrinterOptions {
  /** Prints on both sides (`sides-supported` with the two-sided values). */
  twoSided?: boolean;
  /** Document formats it takes (default PDF, PWG raster and text). */
  formats?: string[];
  /**
   * Takes IPP over TLS, and only that at its {@link IppPrinter.uri}, as `localhost`, with a
   * self-signed certificate it made for that name; `'expired'`, with one for the same names that
   * expired on 1 January 2021 ({@link EXPIRED}), made here before it starts.
   */
  tls?: boolean | 'expired';
}

/** The host name a printer with {@link IppPrinterOptions.tls} has, and its certificate names. */
const TLS_HOST = 'localhost';

/** When the certificate of a printer with `tls: 'expired'` was valid (`openssl ca` dates, UTC). */
const EXPIRED = { start: '20200101000000Z', end: '20210101000000Z' };

/**
 * The print command. `state` holds the reasons the test wants, `reported` those the command last
 * reported, so a job reports only the difference: a full `STATE:` line would also wipe what
 * ippeveprinter set itself (`media-needed`).
 */
function printCommand(dir: string): string {
  const stopping = STOPPING.join('|');
  return `#!/bin/sh
dir='${dir}'
# The job's attributes, one per line, for the test to read.
env | grep '^IPP_' > "$dir/jobs/$(date +%s%N).env"
report() {
  want=$(cat "$dir/state")
  had=$(cat "$dir/reported")
  [ "$want" = "$had" ] && return
  gone=
  for reason in $(echo "$had" | tr , ' '); do
    case ",$want," in *",$reason,"*) ;; *) gone="$gone,$reason" ;; esac
  done
  [ -n "$gone" ] && echo "STATE: -\${gone#,}" >&2
  [ -n "$want" ] && echo "STATE: +$want" >&2
  printf '%s' "$want" > "$dir/reported"
}
stopped() {
  [ -e "$dir/hold" ] || grep -Eq '(^|,)(${stopping})(,|$)' "$dir/state"
}
report
while stopped; do
  sleep 0.05
  report
done
if [ -e "$dir/fail" ]; then
  echo "ERROR: $(cat "$dir/fail")" >&2
  exit 1
fi
echo "ATTR: job-impressions-completed=$(cat "$dir/impressions")" >&2
exit 0
`;
}

/** Where a printer registers its stop: a test's `t`, or a hook's list of cleanups. */
export interface Owner {
  teardown(stop: () => Promise<unknown>): void;
}

export async function startIppPrinter(
  t: Owner,
  options: IppPrinterOptions = {},
): Promise<IppPrinter> {
  const dir = await mkdtemp(join(tmpdir(), 'spool-ipp-printer-'));
  const command = join(dir, 'print');
  await writeFile(command, printCommand(dir));
  await chmod(command, 0o755);
  await writeFile(join(dir, 'impressions'), '1');
  await writeFile(join(dir, 'state'), '');
  await writeFile(join(dir, 'reported'), '');
  await mkdir(join(dir, 'jobs'));
  const spoolDir = join(dir, 'spool');
  await mkdir(spoolDir);
  const keys = join(dir, 'keys');
  if (options.tls) await mkdir(keys);
  if (options.tls === 'expired') {
    await expiredCertificate(dir, keys).catch(async (error: unknown) => {
      await rm(dir, { recursive: true, force: true });
      throw error;
    });
  }

  const port = await freePort();
  const name = `Spool test ${port}`;
  const formats = options.formats ?? ['application/pdf', 'image/pwg-raster', 'text/plain'];
  const printer: Process = spawnProcess(
    'ippeveprinter',
    [
      ...(options.twoSided ? ['-2'] : []),
      ...(options.tls ? ['-K', keys, '-n', TLS_HOST] : []),
      '-p',
      String(port),
      '-f',
      formats.join(','),
      '-c',
      command,
      '-d',
      spoolDir,
      name,
    ],
    { ...(process.env as Record<string, string>) },
  );
  const stop = async () => {
    await printer.stop();
    await rm(dir, { recursive: true, force: true });
  };
  t.teardown(stop);
  const gate = options.tls ? await tlsOnly(port) : undefined;
  if (gate) t.teardown(() => gate.close());
  const uri = gate
    ? `ipps://${TLS_HOST}:${gate.port}/ipp/print`
    : `ipp://127.0.0.1:${port}/ipp/print`;
  const attributes = (names: string[]) => getPrinterAttributes(port, names);
  const trays = await answering(port, printer).then(() => mediaForm(port));
  const certificate = options.tls ? await servedCertificate(port, keys) : undefined;

  let state: PrinterReason[] = [];
  // The command reads these files while a test writes them: each is replaced whole, never seen
  // half written.
  const put = async (file: string, text: string) => {
    await writeFile(join(dir, `${file}.new`), text);
    await rename(join(dir, `${file}.new`), join(dir, file));
  };
  const flag = (file: string, on: boolean, text = '') =>
    on ? put(file, text) : unlink(join(dir, file)).catch(() => {});
  const setState = async (reasons: PrinterReason[]) => {
    const media = (r: PrinterReason[]) =>
      ['media-empty', 'media-low'].filter((m) => r.includes(m as PrinterReason)).join();
    const changedMedia = media(reasons) !== media(state);
    state = [...new Set(reasons)];
    await put('state', state.join(','));
    if (!changedMedia) return;
    const sheets = state.includes('media-empty') ? 0 : state.includes('media-low') ? 5 : undefined;
    const res = await fetch(`http://127.0.0.1:${port}/media?${trays(sheets)}`);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`ippeveprinter's media form answered ${res.status}`);
  };

  return {
    uri,
    ...(certificate ? { certificate } : {}),
    port,
    name,
    spoolDir,
    async jobs() {
      const files = (await readdir(join(dir, 'jobs'))).sort();
      return Promise.all(
        files.map(async (file) => {
          const env = await readFile(join(dir, 'jobs', file), 'utf8');
          const attributes: Record<string, string> = {};
          for (const line of env.split('\n')) {
            const eq = line.indexOf('=');
            if (eq < 0) continue;
            const name = line.slice(4, eq).toLowerCase().replaceAll('_', '-');
            attributes[name] = line.slice(eq + 1);
          }
          return attributes;
        }),
      );
    },
    setImpressions: (count) => put('impressions', String(count)),
    setState,
    state: () => [...state],
    emptyTray: () => setState([...state, 'media-empty']),
    loadPaper: () => setState(state.filter((r) => r !== 'media-empty')),
    hold: () => flag('hold', true),
    release: () => flag('hold', false),
    fail: (message = 'the printer failed the job') => flag('fail', true, message),
    succeed: () => flag('fail', false),
    attributes,
    output: () => printer.output(),
    stop,
  };
}

/**
 * Reads the printer's media form: the trays it fills (`sizeN`, `typeN`, `levelN`, N the tray's
 * place in `media-source-supported`) with the paper it has in them. Returns the query that puts
 * `sheets` in every tray, or fills each (the largest level it offers) when `sheets` is undefined;
 * the paper stays what it was, so `media-ready` does not change.
 */
async function mediaForm(port: number): Promise<(sheets?: number) => string> {
  const html = await (await fetch(`http://127.0.0.1:${port}/media`)).text();
  const selects = new Map<string, string>();
  for (const m of html.matchAll(/<select name="(\w+)">(.*?)<\/select>/g)) {
    selects.set(m[1] as string, m[2] as string);
  }
  const trays: Array<{ i: string; size: string; type: string; full: number }> = [];
  for (const [field, options] of selects) {
    const i = /^level(\d+)$/.exec(field)?.[1];
    if (i === undefined) continue;
    const selected = (f: string) => /<option selected>([^<]*)</.exec(selects.get(f) ?? '')?.[1];
    const levels = [...options.matchAll(/value="(-?\d+)"/g)].map((v) => Number(v[1]));
    trays.push({
      i,
      size: selected(`size${i}`) ?? '',
      type: selected(`type${i}`) ?? '',
      full: Math.max(...levels),
    });
  }
  if (trays.length === 0) throw new Error(`ippeveprinter's media form has no trays:\n${html}`);
  return (sheets) =>
    new URLSearchParams(
      trays.flatMap(
        (tray): Array<[string, string]> => [
          [`size${tray.i}`, tray.size],
          [`type${tray.i}`, tray.type],
          [`level${tray.i}`, String(sheets ?? tray.full)],
        ],
      ),
    ).toString();
}

/**
 * Writes `keys/localhost.key` and a certificate for it, `keys/localhost.crt`, self-signed for
 * `localhost` and `localhost.local` (the names of the one ippeveprinter makes) and valid only
 * through 2020. `openssl req -x509` cannot date a certificate in the past; `openssl ca` can, with a
 * configuration and a database of its own, kept in `dir/ca`.
 */
async function expiredCertificate(dir: string, keys: string): Promise<void> {
  const ca = join(dir, 'ca');
  await mkdir(join(ca, 'issued'), { recursive: true });
  await writeFile(join(ca, 'index.txt'), '');
  await writeFile(join(ca, 'serial'), '01\n');
  const config = join(ca, 'openssl.cnf');
  await writeFile(
    config,
    `[req]
prompt = no
distinguished_name = name
[name]
CN = ${TLS_HOST}
[ca]
default_ca = printer
[printer]
database = index.txt
serial = serial
new_certs_dir = issued
default_md = sha256
policy = any_name
x509_extensions = server
[any_name]
commonName = supplied
[server]
subjectAltName = DNS:${TLS_HOST}, DNS:${TLS_HOST}.local
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
`,
  );
  const key = join(keys, `${TLS_HOST}.key`);
  const request = join(ca, 'request.csr');
  const openssl = async (args: string[]) => {
    const env = { ...(process.env as Record<string, string>) };
    const run = await runProcess('openssl', args, env, { cwd: ca });
    if (run.code !== 0) {
      throw new Error(
        `openssl ${args[0]} failed (${run.code}; Debian's openssl package has it):\n${run.stderr}`,
      );
    }
  };
  await openssl([
    'req',
    '-config',
    config,
    '-new',
    '-newkey',
    'rsa:2048',
    '-noenc',
    '-keyout',
    key,
    '-out',
    request,
  ]);
  await openssl([
    'ca',
    '-batch',
    '-config',
    config,
    '-selfsign',
    '-keyfile',
    key,
    '-in',
    request,
    '-out',
    join(keys, `${TLS_HOST}.crt`),
    '-notext',
    '-startdate',
    EXPIRED.start,
    '-enddate',
    EXPIRED.end,
  ]);
}

/**
 * The file of the certificate a printer started with `-K keys` serves: the first TLS handshake
 * makes ippeveprinter write it when there was none, before it answers, so it is whole once the
 * handshake is done. Throws unless the file holds the certificate the handshake showed.
 */
async function servedCertificate(port: number, keys: string): Promise<string> {
  const served = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      servername: TLS_HOST,
      rejectUnauthorized: false,
    });
    socket.setTimeout(15_000, () => socket.destroy(new Error('no TLS handshake in 15 s')));
    socket.once('secureConnect', () => {
      const { raw } = socket.getPeerCertificate();
      socket.end();
      resolve(raw);
    });
    socket.once('error', (error) =>
      reject(new Error(`ippeveprinter took no TLS handshake: ${error.message}`)),
    );
  });
  const file = join(keys, `${TLS_HOST}.crt`);
  const pem = await readFile(file, 'utf8').catch(() => '');
  if (!pem.includes('BEGIN CERTIFICATE')) {
    throw new Error(
      `ippeveprinter made no certificate at ${file}: ${(await readdir(keys)).join(', ')}`,
    );
  }
  if (!new X509Certificate(pem).raw.equals(served)) {
    throw new Error(`ippeveprinter serves a certificate other than the one at ${file}`);
  }
  return file;
}

/**
 * A port that passes on to the printer's `port` only the connections that begin with a TLS
 * handshake record (type 22) and closes any other at its first byte. Like ippeveprinter it
 * listens on every address (the private network has only loopback), since `localhost` may be
 * dialled at 127.0.0.1 or at ::1.
 */
async function tlsOnly(port: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    track(client);
    client.once('data', (first: Buffer) => {
      if (first[0] !== 0x16) {
        client.destroy();
        return;
      }
      const printer = tcpConnect(port, '127.0.0.1');
      track(printer);
      client.once('close', () => printer.destroy());
      printer.once('close', () => client.destroy());
      printer.write(first);
      client.pipe(printer);
      printer.pipe(client);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, resolve);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the TLS gate has no port');
  return {
    port: address.port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Resolves once the printer answers Get-Printer-Attributes; rejects if it exits first. */
async function answering(port: number, printer: Process): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (printer.child.exitCode !== null) {
      throw new Error(`ippeveprinter exited (${printer.child.exitCode}):\n${printer.output()}`);
    }
    try {
      await getPrinterAttributes(port, ['printer-state']);
      return;
    } catch (error) {
      if (Date.now() > deadline) {
        throw new Error(`ippeveprinter did not answer: ${error}\n${printer.output()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** An IPP attribute's values as text, integers and enums as numbers, booleans as such. */
export type IppAttributes = Map<string, Array<string | number | boolean>>;

/** The IPP operations the tests send, by their code (RFC 8011). */
export const IPP_OPERATION = {
  printJob: 0x0002,
  getJobAttributes: 0x0009,
  getPrinterAttributes: 0x000b,
} as const;

/**
 * Sends an IPP request to a printer here, encoded in this file so that the tests see the printer
 * through none of the agent's code: the operation attributes after the charset, language and
 * printer-uri (a number is sent as an integer, a string as the keyword, mime type or name its tag
 * says), then `document`. Resolves with the status code and every attribute of the answer, by
 * name; collections are not decoded.
 */
export async function ippRequest(
  port: number,
  operation: number,
  attributes: Array<[tag: number, name: string, value: string | number]> = [],
  document?: Buffer,
): Promise<{ status: number; attributes: IppAttributes }> {
  const parts: Buffer[] = [Buffer.from([2, 0, operation >> 8, operation & 0xff, 0, 0, 0, 1, 0x01])];
  const all: Array<[number, string, string | number]> = [
    [0x47, 'attributes-charset', 'utf-8'],
    [0x48, 'attributes-natural-language', 'en'],
    [0x45, 'printer-uri', `ipp://127.0.0.1:${port}/ipp/print`],
    ...attributes,
  ];
  for (const [tag, name, value] of all) {
    const n = Buffer.from(name);
    const v = typeof value === 'number' ? Buffer.alloc(4) : Buffer.from(value);
    if (typeof value === 'number') v.writeInt32BE(value);
    const head = Buffer.alloc(5 + n.length);
    head.writeUInt8(tag, 0);
    head.writeUInt16BE(n.length, 1);
    n.copy(head, 3);
    head.writeUInt16BE(v.length, 3 + n.length);
    parts.push(head, v);
  }
  parts.push(Buffer.from([0x03]), document ?? Buffer.alloc(0));

  const res = await fetch(`http://127.0.0.1:${port}/ipp/print`, {
    method: 'POST',
    headers: { 'content-type': 'application/ipp' },
    body: Buffer.concat(parts),
  });
  const body = Buffer.from(await res.arrayBuffer());
  if (!res.ok) throw new Error(`IPP operation 0x${operation.toString(16)}: HTTP ${res.status}`);

  const answer: IppAttributes = new Map();
  let at = 8;
  let last = '';
  while (at < body.length) {
    const tag = body.readUInt8(at++);
    if (tag === 0x03) break;
    if (tag < 0x10) continue; // the start of an attribute group
    const nameLength = body.readUInt16BE(at);
    const name = body.toString('utf8', at + 2, at + 2 + nameLength);
    at += 2 + nameLength;
    const valueLength = body.readUInt16BE(at);
    const value = body.subarray(at + 2, at + 2 + valueLength);
    at += 2 + valueLength;
    if (name !== '') last = name;
    const decoded =
      tag === 0x21 || tag === 0x23
        ? value.readInt32BE(0)
        : tag === 0x22
          ? value.readUInt8(0) === 1
          : value.toString('utf8');
    answer.set(last, [...(answer.get(last) ?? []), decoded]);
  }
  return { status: body.readUInt16BE(2), attributes: answer };
}

/** Get-Printer-Attributes; rejects unless the printer answers successful-ok. */
export async function getPrinterAttributes(port: number, names: string[]): Promise<IppAttributes> {
  const { status, attributes } = await ippRequest(
    port,
    IPP_OPERATION.getPrinterAttributes,
    names.map((name, i) => [0x44, i === 0 ? 'requested-attributes' : '', name]),
  );
  if (status !== 0) throw new Error(`Get-Printer-Attributes: status 0x${status.toString(16)}`);
  return attributes;
}
