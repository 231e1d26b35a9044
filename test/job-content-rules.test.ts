import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import type { PrintJob } from '../agent/backends/backend.js';
import { createFileBackend } from '../agent/backends/file.js';
import { createRawBackend } from '../agent/backends/raw.js';
import {
  type PrinterCapabilities,
  type PrinterReport,
  PrintOptions,
} from '../gen/spool/v1/stations.js';
import { SCOPES } from '../lib/credentials.js';
import { seal } from '../lib/sealing.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { minimalPdf } from './helpers/pdf.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Ctx {
  sys: TestSystem;
  orgId: string;
  key: string;
  link: LinkClient;
  /** A full printer (duplex, page options, A4 and Letter), one that prints documents as they are, and one with nothing. */
  printers: { full: string; asIs: string; bare: string; device: string };
}

const test = anyTest as TestFn<Ctx>;

interface Answer {
  job: { id: string; status: string };
  template: { id: string };
  error: { code: string; message: string; param?: string };
}

const asIs: PrinterReport = {
  name: 'labels',
  status: 'ready',
  detail: '',
  capabilities: {
    paperSizes: [],
    duplex: false,
    color: false,
    copies: true,
    pageOptions: false,
    trays: [],
    documentFormats: [],
  },
};
const bare: PrinterReport = {
  ...asIs,
  name: 'bare',
  capabilities: { ...asIs.capabilities, copies: false } as PrinterReport['capabilities'],
};

/** A printer as an IPP Everywhere device reports itself: its trays, and PDF only. */
const device: PrinterReport = {
  ...printer('device'),
  capabilities: {
    ...(printer('device').capabilities as PrinterCapabilities),
    trays: ['main', 'manual'],
    documentFormats: ['application/pdf'],
  },
};

test.before(async (t) => {
  const sys = await startTestSystem();
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [
    printer('front'),
    asIs,
    bare,
    device,
  ]);
  const ids = link.welcome.printerIds;
  t.context = {
    sys,
    orgId,
    key,
    link,
    printers: {
      full: ids.front as string,
      asIs: ids.labels as string,
      bare: ids.bare as string,
      device: ids.device as string,
    },
  };
});

test.after.always(async (t) => {
  t.context.link?.close();
  await t.context.sys?.stop();
});

function api(t: { context: Ctx }, method: string, path: string, body?: unknown) {
  return call<Answer>(t.context.sys.url, method, `/v1/orgs/${t.context.orgId}${path}`, {
    token: t.context.key,
    ...(body === undefined ? {} : { body }),
  });
}

function newJob(t: { context: Ctx }, printerId: string, extra: Record<string, unknown> = {}) {
  return api(t, 'POST', '/jobs', {
    printer_id: printerId,
    content: { type: 'text', data: 'hello' },
    ...extra,
  });
}

test('an option the printer cannot honour is refused at creation, naming it', async (t) => {
  const { full, asIs: labels, bare: plain } = t.context.printers;
  const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
    [plain, { copies: 3 }, 'options.copies', /cannot print copies/],
    [labels, { duplex: 'two_sided_long_edge' }, 'options.duplex', /one side only/],
    [full, { color: 'color' }, 'options.color', /monochrome only/],
    [full, { paper: 'A3' }, 'options.paper', /has no paper "A3"; it has A4, Letter/],
    [labels, { rotate: 90 }, 'options.rotate', /as it is/],
    [labels, { pages: '1-2' }, 'options.pages', /as it is/],
    [
      t.context.printers.device,
      { tray: 'top' },
      'options.tray',
      /no tray "top"; it has main, manual/,
    ],
  ];
  for (const [printerId, options, param, message] of cases) {
    const res = await newJob(t, printerId, { options });
    t.is(res.status, 400, JSON.stringify(options));
    t.is(res.body.error.code, 'invalid');
    t.is(res.body.error.param, param);
    t.regex(res.body.error.message, message);
  }
  // A document of a type the printer does not take is refused too, the printer's types named.
  const text = await newJob(t, t.context.printers.device);
  t.is(text.status, 400);
  t.is(text.body.error.param, 'content');
  t.regex(
    text.body.error.message,
    /does not take text\/plain documents; it takes application\/pdf/,
  );
  // What each can do is accepted.
  t.is(
    (
      await newJob(t, t.context.printers.device, {
        content: { type: 'pdf_base64', data: minimalPdf().toString('base64') },
        options: { tray: 'manual' },
      })
    ).status,
    201,
  );
  t.is((await newJob(t, labels, { options: { copies: 3 } })).status, 201);
  t.is(
    (await newJob(t, full, { options: { paper: 'a4', duplex: 'two_sided_long_edge' } })).status,
    201,
  );
});

test('page ranges run from page 1, low to high', async (t) => {
  const { full } = t.context.printers;
  for (const [pages, message] of [
    ['5-1', /runs backwards; write it from low to high \(1-5\)/],
    ['0', /numbered from 1/],
    ['0-3', /numbered from 1/],
  ] as const) {
    const res = await newJob(t, full, { options: { pages } });
    t.is(res.status, 400, pages);
    t.is(res.body.error.param, 'options.pages');
    t.regex(res.body.error.message, message);
  }
  t.is((await newJob(t, full, { options: { pages: '1-3,5,7-7' } })).status, 201);
});

function printJob(copies: number): PrintJob {
  return {
    id: 'job-1',
    attempt: 1,
    title: 'copies',
    contentType: 'text/plain',
    document: Buffer.from('label'),
    options: PrintOptions.fromPartial({ copies }),
  };
}

test('file and raw printers print every copy a job asks for', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'spool-copies-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await createFileBackend(dir).print(printJob(3));
  t.deepEqual((await readdir(dir)).sort(), [
    'job-1-1-copy2.txt',
    'job-1-1-copy3.txt',
    'job-1-1.txt',
  ]);

  const received: string[] = [];
  const server = createServer((socket: Socket) => {
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString();
    });
    socket.on('end', () => {
      received.push(data);
      socket.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  await createRawBackend({ host: '127.0.0.1', port, lingerMs: 0 }).print(printJob(2));
  // The printer has both copies once the backend is done; the server notes the second on its end.
  await eventually(
    async () => received.length,
    (n) => n >= 2,
  );
  t.deepEqual(received, ['label', 'label']);
});

async function template(t: ExecutionContext<Ctx>, kind: string, body: string): Promise<string> {
  const res = await call<Answer>(
    t.context.sys.url,
    'POST',
    `/admin/v1/orgs/${t.context.orgId}/templates`,
    {
      token: OPERATOR_TOKEN,
      body: { name: `${kind} label`, kind, body, fields: [{ name: 'name' }] },
    },
  );
  t.is(res.status, 201);
  return res.body.template.id;
}

const injected = 'A^XZ^XA^FDinjected';

test('a ZPL field value cannot end the label: refused without ^FH, hex-escaped with it', async (t) => {
  const { full } = t.context.printers;
  const plain = await template(t, 'zpl', '^XA^FO50,50^FD{{name}}^FS^XZ');
  const refused = await newJob(t, full, {
    content: { type: 'template', template_id: plain, fields: { name: injected } },
  });
  t.is(refused.status, 400);
  t.is(refused.body.error.param, 'content.fields.name');
  t.regex(refused.body.error.message, /\^FH/);

  const escaped = await template(t, 'zpl', '^XA^FO50,50^FH^FD{{name}}^FS^XZ');
  const job = await newJob(t, full, {
    content: { type: 'template', template_id: escaped, fields: { name: injected } },
  });
  t.is(job.status, 201);
  const content = await call<string>(
    t.context.sys.url,
    'GET',
    `/v1/orgs/${t.context.orgId}/jobs/${job.body.job.id}/content`,
    { token: t.context.key },
  );
  t.is(content.body, '^XA^FO50,50^FH^FDA_5EXZ_5EXA_5EFDinjected^FS^XZ');
  // A label keeps one ^XA…^XZ: the value started no other.
  t.is(content.body.match(/\^XA/g)?.length, 1);
});

test('a ZPL template that changes its command prefix keeps values from using the new one', async (t) => {
  const { full } = t.context.printers;
  // ^CC+ makes + the format prefix: +XZ ends a label as ^XZ did.
  const value = 'A+XZ+XA+FDinjected';
  const plain = await template(t, 'zpl', '^XA^CC+\n+FO50,50+FD{{name}}+FS+XZ');
  const refused = await newJob(t, full, {
    content: { type: 'template', template_id: plain, fields: { name: value } },
  });
  t.is(refused.status, 400);
  t.is(refused.body.error.param, 'content.fields.name');
  t.regex(refused.body.error.message, /may not hold \^ ~ \+ or control characters/);

  const escaped = await template(t, 'zpl', '^XA^CC+\n+FO50,50+fh+FD{{name}}+FS+XZ');
  const job = await newJob(t, full, {
    content: { type: 'template', template_id: escaped, fields: { name: value } },
  });
  t.is(job.status, 201);
  const content = await call<string>(
    t.context.sys.url,
    'GET',
    `/v1/orgs/${t.context.orgId}/jobs/${job.body.job.id}/content`,
    { token: t.context.key },
  );
  t.is(content.body, '^XA^CC+\n+FO50,50+fh+FDA_2BXZ_2BXA_2BFDinjected+FS+XZ');
});

test('an ESC/POS field value may not carry control characters', async (t) => {
  const id = await template(t, 'escpos', 'Hello {{name}}\n');
  const res = await newJob(t, t.context.printers.full, {
    content: { type: 'template', template_id: id, fields: { name: 'Ada\u001bd\u0005' } },
  });
  t.is(res.status, 400);
  t.is(res.body.error.param, 'content.fields.name');
});

test('sealed content prints and reprints but is never served back', async (t) => {
  const key = await call<{ public_key: string }>(t.context.sys.url, 'GET', '/v1/public/server-key');
  const sealed = await seal(key.body.public_key, Buffer.from('the secret page'));
  const job = await newJob(t, t.context.printers.full, {
    content: { type: 'sealed', content_type: 'text/plain', ...sealed },
  });
  t.is(job.status, 201);
  const reprint = await api(t, 'POST', `/jobs/${job.body.job.id}/reprint`, {});
  t.is(reprint.status, 201);
  for (const id of [job.body.job.id, reprint.body.job.id]) {
    for (const what of ['content', 'preview']) {
      const res = await api(t, 'GET', `/jobs/${id}/${what}`);
      t.is(res.status, 403, `${what} of ${id}`);
      t.is(res.body.error.code, 'forbidden');
      t.regex(res.body.error.message, /sealed/);
    }
  }
  // The station still gets the document it prints.
  await t.context.link.until(() =>
    t.context.link.jobs.some((j) => j.offer.jobId === job.body.job.id),
  );
  const offered = t.context.link.jobs.find((j) => j.offer.jobId === job.body.job.id);
  t.is(offered?.document.toString(), 'the secret page');
});
