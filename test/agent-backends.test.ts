import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { NotSentError, type PrintJob } from '../agent/backends/backend.js';
import {
  lpArguments,
  mapCupsState,
  parseCapabilities,
  parsePrinterStatus,
  parseRequestId,
} from '../agent/backends/cups.js';
import { createFileBackend, fileNameFor } from '../agent/backends/file.js';
import { encodeRequest, parseResponse } from '../agent/backends/ipp.js';
import { createRawBackend } from '../agent/backends/raw.js';
import { parsePrinterSpec } from '../agent/index.js';
import type { PrintOptions } from '../gen/spool/v1/stations.js';
import { freePort } from './helpers/ports.js';

const NO_OPTIONS: PrintOptions = {
  copies: 1,
  duplex: '',
  color: '',
  paper: '',
  tray: '',
  pages: '',
  fitToPage: false,
  rotate: 0,
};

function job(overrides: Partial<PrintJob> = {}): PrintJob {
  return {
    id: 'job-1',
    attempt: 1,
    title: 'Invoice 42',
    contentType: 'application/pdf',
    document: Buffer.from('%PDF-1.7\n'),
    options: NO_OPTIONS,
    ...overrides,
  };
}

// ── printer specs ──

test('printer specs name a file directory, a CUPS queue, every CUPS queue or a raw socket', (t) => {
  t.deepEqual(parsePrinterSpec('front=file:/var/out'), {
    name: 'front',
    backend: { kind: 'file', dir: '/var/out' },
  });
  t.deepEqual(parsePrinterSpec('front=file:out', '/srv'), {
    name: 'front',
    backend: { kind: 'file', dir: '/srv/out' },
  });
  t.deepEqual(parsePrinterSpec('label-1=cups:Zebra_ZD420'), {
    name: 'label-1',
    backend: { kind: 'cups', queue: 'Zebra_ZD420' },
  });
  t.deepEqual(parsePrinterSpec('office=cups:*'), {
    name: 'office',
    backend: { kind: 'cups', queue: '*' },
  });
  t.deepEqual(parsePrinterSpec('*=cups:*'), { name: '*', backend: { kind: 'cups', queue: '*' } });
  t.deepEqual(parsePrinterSpec('laser=raw:192.168.1.20:9100'), {
    name: 'laser',
    backend: { kind: 'raw', host: '192.168.1.20', port: 9100 },
  });
  t.deepEqual(parsePrinterSpec('laser=raw:printer.local:9100'), {
    name: 'laser',
    backend: { kind: 'raw', host: 'printer.local', port: 9100 },
  });
  t.deepEqual(parsePrinterSpec('v6=raw:[fe80::1]:9100'), {
    name: 'v6',
    backend: { kind: 'raw', host: 'fe80::1', port: 9100 },
  });
});

test('bad printer specs are refused with a message that says what is wrong', (t) => {
  const cases: [string, RegExp][] = [
    ['front', /invalid printer "front": no "="/],
    ['=file:/x', /bad printer name ""/],
    ['my printer=file:/x', /bad printer name "my printer"/],
    ['*=file:/x', /bad printer name "\*"/],
    ['front=file:', /file: needs a directory/],
    ['front=cups:', /bad CUPS queue ""/],
    ['front=cups:has space', /bad CUPS queue "has space"/],
    ['front=raw:host', /raw: needs HOST:PORT/],
    ['front=raw:host:0', /bad port "0"/],
    ['front=raw:host:70000', /bad port "70000"/],
    ['front=raw:bad_host!:9100', /bad host "bad_host!"/],
    ['front=lpd:queue', /unknown backend "lpd".*file:DIR, cups:QUEUE, cups:\* or raw:HOST:PORT/],
  ];
  for (const [spec, message] of cases) {
    t.throws(() => parsePrinterSpec(spec), { name: 'PrinterSpecError', message }, spec);
  }
});

// ── file backend ──

test('file names are <job>-<attempt>.<pdf|txt|bin> by content type', (t) => {
  t.is(fileNameFor({ id: 'j1', attempt: 1, contentType: 'application/pdf' }), 'j1-1.pdf');
  t.is(fileNameFor({ id: 'j1', attempt: 2, contentType: 'text/plain; charset=utf-8' }), 'j1-2.txt');
  t.is(fileNameFor({ id: 'j1', attempt: 3, contentType: 'application/octet-stream' }), 'j1-3.bin');
  t.is(
    fileNameFor({ id: '../../etc/x', attempt: 1, contentType: 'text/plain' }),
    '.._.._etc_x-1.txt',
  );
});

test('the file backend writes the exact document, leaving no temporary file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'spool-file-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'nested', 'out');
  const backend = createFileBackend(out);
  t.like(await backend.status(), { status: 'ready' });
  const document = randomBytes(100_000);
  await backend.print(job({ document }));
  t.deepEqual(await readdir(out), ['job-1-1.pdf']);
  t.deepEqual(await readFile(join(out, 'job-1-1.pdf')), document);
});

test('the file backend reports a directory that went away', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'spool-file-test-'));
  const backend = createFileBackend(join(dir, 'out'));
  t.like(await backend.status(), { status: 'ready' });
  await rm(dir, { recursive: true });
  const status = await backend.status();
  t.is(status.status, 'error');
  t.regex(status.detail, /cannot write to .*out: .*ENOENT/);
});

test('a job for a file printer whose folder went away is not sent, and the folder is not made again', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'spool-file-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'share');
  const backend = createFileBackend(out);
  t.like(await backend.status(), { status: 'ready' });
  // The share is unmounted: writing where it was would print onto the local disk.
  await rm(out, { recursive: true });
  const err = await t.throwsAsync(backend.print(job({ options: { ...NO_OPTIONS, copies: 2 } })));
  t.true(err instanceof NotSentError, String(err));
  t.regex(err?.message ?? '', /file: could not write .*share.*ENOENT/);
  t.deepEqual(await readdir(dir), []);
  t.like(await backend.status(), { status: 'error' });

  // It comes back: the job prints, both copies.
  await mkdir(out);
  t.like(await backend.status(), { status: 'ready' });
  await backend.print(job({ options: { ...NO_OPTIONS, copies: 2 } }));
  t.deepEqual((await readdir(out)).sort(), ['job-1-1-copy2.pdf', 'job-1-1.pdf']);
});

// ── raw backend ──

async function rawPrinter(t: { teardown(fn: () => void): void }) {
  const received: Buffer[] = [];
  const server = createServer((socket) => {
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    socket.on('end', () => {
      if (parts.length > 0) received.push(Buffer.concat(parts));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  t.teardown(() => server.close());
  return { port: address.port, received };
}

test('the raw backend sends the exact bytes to the socket', async (t) => {
  const printer = await rawPrinter(t);
  const backend = createRawBackend({ host: '127.0.0.1', port: printer.port });
  const document = randomBytes(3 * 1024 * 1024);
  await backend.print(job({ document, contentType: 'application/octet-stream' }));
  t.is(printer.received.length, 1);
  t.true(printer.received[0]?.equals(document));
  t.like(await backend.status(), { status: 'ready' });
});

test('a raw printer that holds the connection open is done once every byte is written', async (t) => {
  const server = createServer({ allowHalfOpen: true }, () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const backend = createRawBackend({ host: '127.0.0.1', port: address.port, lingerMs: 50 });
  await t.notThrowsAsync(backend.print(job()));
});

test('a raw printer that is not there fails the job as not sent and reads offline', async (t) => {
  const port = await freePort();
  const backend = createRawBackend({ host: '127.0.0.1', port });
  const err = await t.throwsAsync(backend.print(job()), {
    message: `raw 127.0.0.1:${port}: ECONNREFUSED`,
  });
  // Nothing went out, so the agent may keep the job for when the printer is back.
  t.true(err instanceof NotSentError);
  t.like(await backend.status(), {
    status: 'offline',
    detail: `raw 127.0.0.1:${port}: ECONNREFUSED`,
  });
});

test('a raw printer that goes away after the first copy fails the job as sent', async (t) => {
  const received: Buffer[] = [];
  const server = createServer((socket) => {
    // One copy, then no more connections.
    server.close();
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    socket.on('end', () => {
      received.push(Buffer.concat(parts));
      socket.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const backend = createRawBackend({ host: '127.0.0.1', port: address.port, lingerMs: 50 });
  const err = await t.throwsAsync(backend.print(job({ options: { ...NO_OPTIONS, copies: 2 } })), {
    message: `raw 127.0.0.1:${address.port}: ECONNREFUSED`,
  });
  // A copy came out: sending the job again would print it again.
  t.false(err instanceof NotSentError);
  t.is(received.length, 1);
});

test('a raw printer that takes nothing times out with a detail', async (t) => {
  // Connections are accepted and never read, so the send stalls once the buffers fill.
  const server = createServer((socket) => socket.pause());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const backend = createRawBackend({ host: '127.0.0.1', port: address.port, idleTimeoutMs: 200 });
  await t.throwsAsync(backend.print(job({ document: Buffer.alloc(64 * 1024 * 1024) })), {
    message: /timed out sending/,
  });
});

// ── CUPS: commands and their output ──

test('lp arguments carry the title, copies and each print option', (t) => {
  const options: PrintOptions = {
    copies: 2,
    duplex: 'two_sided_long_edge',
    color: 'monochrome',
    paper: 'A4',
    tray: 'tray-2',
    pages: '1-3, 5',
    fitToPage: true,
    rotate: 90,
  };
  t.deepEqual(lpArguments('office', job({ options })), [
    '-d',
    'office',
    '-t',
    'Invoice 42',
    '-n',
    '2',
    '-o',
    'sides=two-sided-long-edge',
    '-o',
    'print-color-mode=monochrome',
    '-o',
    'media=A4',
    '-o',
    'media-source=tray-2',
    '-P',
    '1-3,5',
    '-o',
    'fit-to-page',
    '-o',
    'orientation-requested=4',
  ]);
  t.deepEqual(lpArguments('q', job({ title: '', options: { ...NO_OPTIONS, copies: 0 } })), [
    '-d',
    'q',
    '-t',
    'spool job job-1',
    '-n',
    '1',
  ]);
  t.deepEqual(lpArguments('q', job({ contentType: 'application/octet-stream' })).slice(-2), [
    '-o',
    'raw',
  ]);
  t.deepEqual(
    lpArguments('q', job({ options: { ...NO_OPTIONS, duplex: 'one_sided', rotate: 180 } })).slice(
      -4,
    ),
    ['-o', 'sides=one-sided', '-o', 'orientation-requested=6'],
  );
});

test('lp arguments refuse option values that could smuggle in other options', (t) => {
  const bad: [Partial<PrintOptions>, RegExp][] = [
    [{ paper: 'A4 job-hold-until=indefinite' }, /cannot use paper/],
    [{ tray: 'x,y' }, /cannot use tray/],
    [{ pages: '1-3;5' }, /cannot read pages/],
    [{ duplex: 'both' }, /unknown duplex/],
    [{ color: 'sepia' }, /unknown color/],
    [{ rotate: 45 }, /cannot rotate by 45 degrees/],
  ];
  for (const [options, message] of bad) {
    t.throws(() => lpArguments('q', job({ options: { ...NO_OPTIONS, ...options } })), { message });
  }
});

test('the CUPS job id is read from lp', (t) => {
  t.is(parseRequestId('request id is office-123 (1 file(s))\n'), 123);
  t.is(parseRequestId('request id is spool-test-a1b2-7 (1 file(s))'), 7);
  t.is(parseRequestId('lp: Error - no default destination'), undefined);
});

const LPSTAT_LONG_TAIL = [
  '\tForm mounted:',
  '\tContent types: any',
  '\tPrinter types: unknown',
  '\tDescription: office',
];

function lpstat(first: string, alerts: string, message?: string): string {
  return [
    first,
    ...(message === undefined ? [] : [`\t${message}`]),
    ...LPSTAT_LONG_TAIL,
    `\tAlerts: ${alerts}`,
    '\tLocation: ',
    '\tConnection: direct',
  ].join('\n');
}

const IDLE = 'printer office is idle.  enabled since Sun Nov 22 03:16:11 2026';

test('lpstat is mapped to the link statuses, with the raw reasons as detail', (t) => {
  const cases: [string, string, string][] = [
    [lpstat(IDLE, 'none'), 'ready', ''],
    [
      lpstat(
        'printer office now printing office-12.  enabled since Sun Nov 22 03:16:11 2026',
        'none',
      ),
      'printing',
      '',
    ],
    [
      lpstat(
        'printer office disabled since Sun Nov 22 03:16:59 2026 -',
        'paused',
        'paused for test',
      ),
      'offline',
      'paused; paused for test',
    ],
    [lpstat(IDLE, 'media-empty-error'), 'out_of_paper', 'media-empty-error'],
    [lpstat(IDLE, 'media-needed'), 'out_of_paper', 'media-needed'],
    [
      lpstat(IDLE, 'media-jam-error media-empty-error'),
      'paper_jam',
      'media-jam-error, media-empty-error',
    ],
    [lpstat(IDLE, 'door-open-error'), 'door_open', 'door-open-error'],
    // A warning does not stop the printer: one empty tray of several, a cover it prints with.
    [lpstat(IDLE, 'media-empty-warning'), 'ready', 'media-empty-warning'],
    [
      lpstat(IDLE, 'cover-open-warning media-jam-report'),
      'ready',
      'cover-open-warning, media-jam-report',
    ],
    [
      lpstat(
        'printer office now printing office-12.  enabled since Sun Nov 22 03:16:11 2026',
        'media-empty-warning',
      ),
      'printing',
      'media-empty-warning',
    ],
    [lpstat(IDLE, 'media-empty-warning media-jam'), 'paper_jam', 'media-empty-warning, media-jam'],
    [lpstat(IDLE, 'offline-report'), 'offline', 'offline-report'],
    [lpstat(IDLE, 'toner-empty-error'), 'error', 'toner-empty-error'],
    [lpstat(IDLE, 'toner-low-warning'), 'ready', 'toner-low-warning'],
    ['lpstat: something else', 'unknown', 'cannot read lpstat: lpstat: something else'],
  ];
  for (const [output, status, detail] of cases) {
    t.deepEqual(parsePrinterStatus(output), { status, detail }, output.split('\n')[0]);
  }
  t.deepEqual(mapCupsState({ enabled: false, printing: false, reasons: [], message: '' }), {
    status: 'offline',
    detail: 'the queue is disabled',
  });
});

test('capabilities are read from lpoptions', (t) => {
  const output = [
    'PageSize/Media Size: *Letter Legal A4 Custom.WIDTHxHEIGHT',
    'Duplex/2-Sided Printing: *None DuplexNoTumble DuplexTumble',
    'ColorModel/Color Mode: Gray *RGB',
    'Resolution/Resolution: *600dpi',
  ].join('\n');
  t.deepEqual(parseCapabilities(output), {
    paperSizes: ['Letter', 'Legal', 'A4'],
    duplex: true,
    color: true,
    copies: true,
    pageOptions: true,
  });
  t.deepEqual(
    parseCapabilities(
      'PageSize/Media Size: *A4\nColorModel/Color Mode: *Gray\nDuplex/Duplex: *None',
    ),
    {
      paperSizes: ['A4'],
      duplex: false,
      color: false,
      copies: true,
      pageOptions: true,
    },
  );
});

test('an IPP request encodes and an IPP response decodes', (t) => {
  const request = encodeRequest(0x0009, 7, [
    [0x47, 'attributes-charset', ['utf-8']],
    [0x44, 'requested-attributes', ['job-state', 'job-state-reasons']],
    [0x23, 'job-state', [9]],
  ]);
  t.is(request.readUInt16BE(2), 0x0009);
  t.is(request.readUInt32BE(4), 7);
  // A request parses like a response: the operation code sits where the status would.
  const parsed = parseResponse(request);
  t.is(parsed.status, 0x0009);
  t.deepEqual(parsed.attributes.get('requested-attributes'), ['job-state', 'job-state-reasons']);
  t.deepEqual(parsed.attributes.get('job-state'), [9]);
  t.deepEqual(parsed.attributes.get('attributes-charset'), ['utf-8']);
});
