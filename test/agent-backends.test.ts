import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { NotSentError, type PrintJob } from '../agent/backends/backend.js';
import { lpArguments, parsePrinterStatus, parseRequestId } from '../agent/backends/cups.js';
import { createFileBackend, fileNameFor } from '../agent/backends/file.js';
import { createIppPrinterBackend } from '../agent/backends/ipp-printer.js';
import { createRawBackend } from '../agent/backends/raw.js';
import { parsePrinterSpec } from '../agent/index.js';
import { capabilitiesOf, jobTemplate, printerStatusOf, statusOf } from '../agent/ipp/attributes.js';
import {
  type Attribute,
  decodeResponse,
  encodeRequest,
  GROUP,
  groupOf,
  operationAttributes,
  TAG,
  type Value,
} from '../agent/ipp/protocol.js';
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
    ['front=ipp://', /"ipp:\/\/" names no host/],
    ['front=ipp:printer', /"ipp:printer" names no host/],
    ['front=ipps://user:pw@host/ipp/print', /no user, query or fragment/],
    [
      'front=lpd:queue',
      /unknown backend "lpd".*file:DIR, cups:QUEUE, cups:\*, raw:HOST:PORT, ipp:/,
    ],
  ];
  for (const [spec, message] of cases) {
    t.throws(() => parsePrinterSpec(spec), { name: 'PrinterSpecError', message }, spec);
  }
  t.deepEqual(parsePrinterSpec('front=ipps://[fe80::1]:8443/ipp/print').backend, {
    kind: 'ipp',
    uri: 'ipps://[fe80::1]:8443/ipp/print',
  });
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
    message: `raw 127.0.0.1:${port}: nothing takes connections on that port (ECONNREFUSED)`,
  });
  // Nothing went out, so the agent may keep the job for when the printer is back.
  t.true(err instanceof NotSentError);
  t.like(await backend.status(), {
    status: 'offline',
    detail: `raw 127.0.0.1:${port}: nothing takes connections on that port (ECONNREFUSED)`,
  });
});

test('an IPP printer that is not there reads offline saying why, and its job is not sent', async (t) => {
  const port = await freePort();
  const backend = createIppPrinterBackend(`ipp://127.0.0.1:${port}/ipp/print`);
  const why = 'nothing takes connections on that port (ECONNREFUSED)';
  t.like(await backend.status(), {
    status: 'offline',
    detail: `ipp ipp://127.0.0.1:${port}/ipp/print: ${why}`,
  });
  const err = await t.throwsAsync(backend.print(job()), { message: `ipp: ${why}` });
  // Nothing reached the printer, so the job waits for it rather than fail.
  t.true(err instanceof NotSentError);
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
    message: `raw 127.0.0.1:${address.port}: nothing takes connections on that port (ECONNREFUSED)`,
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
  t.deepEqual(
    statusOf({
      enabled: false,
      printing: false,
      reasons: [],
      message: '',
      disabled: 'the queue is disabled',
    }),
    { status: 'offline', detail: 'the queue is disabled' },
  );
});

/** A Get-Printer-Attributes answer as an IPP Everywhere printer sends it, decoded. */
function printerAnswer(attributes: Attribute[]) {
  // A request encodes like a response: the operation code sits where the status would.
  return decodeResponse(
    encodeRequest({
      operation: 0,
      requestId: 1,
      groups: [
        {
          tag: GROUP.operation,
          attributes: operationAttributes({
            tag: TAG.uri,
            name: 'printer-uri',
            values: ['ipp://p/ipp/print'],
          }),
        },
        { tag: GROUP.printer, attributes },
      ],
    }),
  );
}

test('IPP messages encode and decode: ranges, collections, sets and out-of-band values', (t) => {
  const media = {
    'media-size': [{ 'x-dimension': [21000], 'y-dimension': [29700] }],
    'media-source': ['main'],
  };
  const answer = printerAnswer([
    { tag: TAG.integer, name: 'job-id', values: [42] },
    { tag: TAG.boolean, name: 'color-supported', values: [false] },
    { tag: TAG.rangeOfInteger, name: 'copies-supported', values: [{ lower: 1, upper: 999 }] },
    { tag: TAG.keyword, name: 'sides-supported', values: ['one-sided', 'two-sided-long-edge'] },
    {
      tag: TAG.begCollection,
      name: 'media-col-ready',
      values: [media, { 'media-source': ['manual'] }],
    },
    { tag: TAG.unknown, name: 'printer-geo-location', values: [''] },
    { tag: TAG.enum, name: 'printer-state', values: [3] },
  ]);
  t.is(answer.status, 0);
  t.is(answer.requestId, 1);
  const printer = groupOf(answer, GROUP.printer);
  t.deepEqual(printer.get('job-id'), [42]);
  t.deepEqual(printer.get('color-supported'), [false]);
  t.deepEqual(printer.get('copies-supported'), [{ lower: 1, upper: 999 }]);
  t.deepEqual(printer.get('sides-supported'), ['one-sided', 'two-sided-long-edge']);
  t.deepEqual(printer.get('media-col-ready'), [media, { 'media-source': ['manual'] }]);
  t.deepEqual(printer.get('printer-geo-location'), []);
  t.deepEqual(printer.get('printer-state'), [3]);
  t.throws(
    () => decodeResponse(encodeRequest({ operation: 0, requestId: 1, groups: [] }).subarray(0, 5)),
    {
      message: /short IPP response/,
    },
  );
});

test('capabilities come from IPP printer attributes, for a device and for a CUPS queue', (t) => {
  const printer = groupOf(
    printerAnswer([
      {
        tag: TAG.keyword,
        name: 'media-supported',
        values: [
          'iso_a4_210x297mm',
          'na_letter_8.5x11in',
          'oe_photo-l_3.5x5in',
          'custom_min_3x5in',
        ],
      },
      { tag: TAG.keyword, name: 'sides-supported', values: ['one-sided'] },
      { tag: TAG.boolean, name: 'color-supported', values: [true] },
      { tag: TAG.rangeOfInteger, name: 'copies-supported', values: [{ lower: 1, upper: 99 }] },
      { tag: TAG.keyword, name: 'media-source-supported', values: ['auto', 'main', 'manual'] },
      {
        tag: TAG.mimeMediaType,
        name: 'document-format-supported',
        values: ['application/octet-stream', 'application/pdf'],
      },
      { tag: TAG.boolean, name: 'page-ranges-supported', values: [true] },
      { tag: TAG.enum, name: 'orientation-requested-supported', values: [3, 4] },
    ]),
    GROUP.printer,
  );
  t.deepEqual(capabilitiesOf(printer, false), {
    paperSizes: ['A4', 'Letter', 'oe_photo-l_3.5x5in'],
    duplex: false,
    color: true,
    copies: true,
    pageOptions: true,
    trays: ['main', 'manual'],
    documentFormats: ['application/pdf'],
  });
  // CUPS converts any document and applies copies and page options whatever the printer says.
  t.like(capabilitiesOf(new Map(), true), { copies: true, pageOptions: true, documentFormats: [] });
  // A device that says nothing of copies or page ranges is refused them at creation.
  t.like(capabilitiesOf(new Map(), false), { copies: false, pageOptions: false });
});

test('an IPP printer reads out of paper whatever suffix its state gives the reason', (t) => {
  const read = (state: number, reasons: string[]) =>
    printerStatusOf(
      new Map<string, Value[]>([
        ['printer-state', [state]],
        ['printer-state-reasons', reasons],
      ]),
    ).status;
  // Idle with no paper (its jobs wait), and a job waiting for paper.
  t.is(read(3, ['media-empty-report']), 'out_of_paper');
  t.is(read(4, ['media-empty-warning', 'media-needed-warning']), 'out_of_paper');
  t.is(read(4, ['cover-open-warning']), 'door_open');
  // Low toner is only said.
  t.is(read(3, ['toner-low-report']), 'ready');
  t.is(read(4, ['none']), 'printing');
  t.is(read(5, []), 'offline');
});

test("a job's options become IPP job template attributes", (t) => {
  t.deepEqual(jobTemplate(NO_OPTIONS, 1), []);
  t.deepEqual(
    jobTemplate(
      {
        ...NO_OPTIONS,
        duplex: 'two_sided_long_edge',
        color: 'monochrome',
        paper: 'A4',
        pages: '1-3,5',
        rotate: 90,
        fitToPage: true,
      },
      2,
    ),
    [
      { tag: TAG.integer, name: 'copies', values: [2] },
      { tag: TAG.keyword, name: 'sides', values: ['two-sided-long-edge'] },
      { tag: TAG.keyword, name: 'print-color-mode', values: ['monochrome'] },
      { tag: TAG.keyword, name: 'media', values: ['iso_a4_210x297mm'] },
      {
        tag: TAG.rangeOfInteger,
        name: 'page-ranges',
        values: [
          { lower: 1, upper: 3 },
          { lower: 5, upper: 5 },
        ],
      },
      { tag: TAG.enum, name: 'orientation-requested', values: [4] },
      { tag: TAG.keyword, name: 'print-scaling', values: ['fit'] },
    ],
  );
  // A tray goes in media-col, with the size beside it.
  t.deepEqual(jobTemplate({ ...NO_OPTIONS, tray: 'manual', paper: 'Letter' }, 1), [
    {
      tag: TAG.begCollection,
      name: 'media-col',
      values: [{ 'media-source': ['manual'], 'media-size-name': ['na_letter_8.5x11in'] }],
    },
  ]);
});
