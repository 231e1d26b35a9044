/**
 * A real `spool agent` driving real IPP Everywhere printers (ippeveprinter) with `ipp://`, no CUPS:
 * capabilities read from the printers, a one-sided printer refusing duplex at creation, options
 * reaching the printer as it names them, the printer's own confirmation with its page count, and
 * its paper running out and coming back on the printer's status. And `ipps://`: a printer with a
 * self-signed certificate, printed to once the agent trusts it through `NODE_EXTRA_CA_CERTS` as
 * docs/agent.md tells a user to, and sent nothing while it does not, or while the certificate it
 * trusts names another host or has expired.
 */
import { rm } from 'node:fs/promises';
import anyTest, { type TestFn } from 'ava';
import { SCOPES } from '../../lib/credentials.js';
import { type IppPrinter, type Owner, startIppPrinter } from '../helpers/ipp-printer.js';
import { minimalPdf } from '../helpers/pdf.js';
import { tempDir } from '../helpers/printing-org.js';
import { startReceiver } from '../helpers/receiver.js';
import { type SpoolProcess, spawnSpool } from '../helpers/spool.js';
import { openStream } from '../helpers/sse.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
  type TestSystem,
} from '../helpers/system.js';

interface Printer {
  id: string;
  name: string;
  status: string;
  detail: string;
  station_online: boolean;
  capabilities: {
    paper_sizes: string[];
    duplex: boolean;
    color: boolean;
    copies: boolean;
    trays: string[];
    document_formats: string[];
  };
}

interface Job {
  id: string;
  status: string;
  status_detail: string;
  confirmation: { level: string; pages: number | null } | null;
}

interface Context {
  sys: TestSystem;
  orgId: string;
  key: string;
  agent: SpoolProcess;
  duplex: IppPrinter;
  simplex: IppPrinter;
  ids: Map<string, string>;
}

const test = anyTest as TestFn<Context>;

/** What test.before started, stopped in reverse order after the tests, however they end. */
const started: Array<() => Promise<unknown>> = [];
const owner = { teardown: (stop: () => Promise<unknown>) => void started.push(stop) };

test.after.always(async () => {
  for (const stop of started.reverse()) await stop();
});

test.before(async (t) => {
  const sys = await startTestSystem();
  owner.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret: key } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const station = await createStation(sys.url, orgId);
  const duplex = await startIppPrinter(owner, { twoSided: true });
  const simplex = await startIppPrinter(owner, { formats: ['application/pdf'] });
  const state = await tempDir('spool-agent-state-');
  owner.teardown(() => rm(state, { recursive: true, force: true }));
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      sys.linkAddress,
      '--state-dir',
      state,
      '--printer',
      `duplex=${duplex.uri}`,
      '--printer',
      `simplex=${simplex.uri}`,
    ],
    { SPOOL_DEVICE_TOKEN: station.token, LOG_LEVEL: 'info' },
  );
  owner.teardown(() => agent.stop());
  const listed = await eventually(
    () => printers({ sys, orgId, key }),
    (list) => list.length === 2 && list.every((p) => p.station_online && p.status === 'ready'),
    30_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\nagent output:\n${agent.output()}`);
  });
  t.context = {
    sys,
    orgId,
    key,
    agent,
    duplex,
    simplex,
    ids: new Map(listed.map((p) => [p.name, p.id])),
  };
});

async function printers(c: Pick<Context, 'sys' | 'orgId' | 'key'>): Promise<Printer[]> {
  const res = await call<{ printers: Printer[] }>(
    c.sys.url,
    'GET',
    `/v1/orgs/${c.orgId}/printers`,
    {
      token: c.key,
    },
  );
  return res.body.printers;
}

function post(c: Context, path: string, body: Record<string, unknown>) {
  return call<{ job: Job; error: { code: string; param?: string; message: string } }>(
    c.sys.url,
    'POST',
    `/v1/orgs/${c.orgId}/${path}`,
    { token: c.key, body },
  );
}

function job(c: Context, id: string) {
  return call<{ job: Job }>(c.sys.url, 'GET', `/v1/orgs/${c.orgId}/jobs/${id}`, { token: c.key });
}

const pdf = () => ({ type: 'pdf_base64', data: minimalPdf().toString('base64') });

test("the printers' capabilities are what the printers say", async (t) => {
  const byName = new Map((await printers(t.context)).map((p) => [p.name, p]));
  const duplex = byName.get('duplex');
  const simplex = byName.get('simplex');
  t.true(duplex?.capabilities.duplex);
  t.false(simplex?.capabilities.duplex);
  for (const printer of [duplex, simplex]) {
    // ippeveprinter's media, by the names jobs use, and its input trays.
    t.deepEqual(printer?.capabilities.paper_sizes, ['Letter', 'Legal', 'A4', 'Env10', 'EnvDL']);
    t.deepEqual(printer?.capabilities.trays, ['main', 'manual', 'by-pass-tray']);
    t.true(printer?.capabilities.copies);
    t.false(printer?.capabilities.color);
  }
  t.deepEqual(duplex?.capabilities.document_formats, [
    'application/pdf',
    'image/pwg-raster',
    'text/plain',
  ]);
  t.deepEqual(simplex?.capabilities.document_formats, ['application/pdf']);
});

test('a one-sided printer refuses two-sided printing at creation, and a format it lacks', async (t) => {
  const simplex = t.context.ids.get('simplex');
  for (const path of ['jobs', 'jobs/validate']) {
    const twoSided = await post(t.context, path, {
      printer_id: simplex,
      content: pdf(),
      options: { duplex: 'two_sided_long_edge' },
    });
    t.is(twoSided.status, 400, path);
    t.is(twoSided.body.error.param, 'options.duplex');
    t.regex(twoSided.body.error.message, /one side only/);
    const text = await post(t.context, path, {
      printer_id: simplex,
      content: { type: 'text', data: 'hello' },
    });
    t.is(text.status, 400, path);
    t.is(text.body.error.param, 'content');
  }
  const size = await post(t.context, 'jobs', {
    printer_id: simplex,
    content: pdf(),
    options: { paper: 'A3' },
  });
  t.is(size.status, 400);
  t.regex(size.body.error.message, /has no paper "A3"; it has Letter, Legal, A4, Env10, EnvDL/);
});

test('a job reaches the printer with its options as the printer names them, and the printer confirms it with its pages', async (t) => {
  const { duplex } = t.context;
  await duplex.setImpressions(4);
  // The confirmation travels with the job.printed webhook and the stream too.
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const hook = await post(t.context, 'webhooks', { url: receiver.url, events: ['job.printed'] });
  t.is(hook.status, 201, JSON.stringify(hook.body));
  const stream = await openStream(`${t.context.sys.url}/v1/orgs/${t.context.orgId}/stream`, {
    token: t.context.key,
  });
  t.teardown(() => stream.close());
  const created = await post(t.context, 'jobs', {
    printer_id: t.context.ids.get('duplex'),
    title: 'two copies, two-sided, A4',
    content: pdf(),
    options: { copies: 2, duplex: 'two_sided_long_edge', paper: 'A4' },
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  const printed = await eventually(
    () => job(t.context, created.body.job.id),
    (r) => r.body.job.status === 'printed' || r.body.job.status === 'failed',
    30_000,
  );
  t.is(printed.body.job.status, 'printed', printed.body.job.status_detail);
  const confirmation = { level: 'device_completed', pages: 4 };
  t.deepEqual(printed.body.job.confirmation, confirmation);
  const isPrinted = (data: string) => {
    const event = JSON.parse(data) as { type: string; data: { job: Job } };
    return event.type === 'job.printed' && event.data.job.id === created.body.job.id
      ? event.data.job
      : undefined;
  };
  const [delivered] = await receiver.until((r) => r.some((q) => isPrinted(q.body.toString())));
  const webhookJob = receiver.requests
    .map((q) => isPrinted(q.body.toString()))
    .find((j) => j !== undefined);
  t.truthy(delivered);
  t.deepEqual(webhookJob?.confirmation, confirmation);
  const messages = await stream.until((m) => m.some((e) => e.event === 'job.printed'));
  const streamed = messages.find((e) => e.event === 'job.printed');
  t.deepEqual(
    (JSON.parse(streamed?.data ?? '{}') as { data?: { job?: Job } }).data?.job?.confirmation,
    confirmation,
  );
  const jobs = await duplex.jobs();
  t.is(jobs.length, 1);
  t.like(jobs[0], {
    'job-name': 'two copies, two-sided, A4',
    copies: '2',
    sides: 'two-sided-long-edge',
    media: 'iso_a4_210x297mm',
  });
});

test('a printer out of paper reads so while its job waits, and prints it once paper is loaded', async (t) => {
  const { simplex } = t.context;
  const id = t.context.ids.get('simplex');
  const status = async () =>
    (await printers(t.context)).find((p) => p.name === 'simplex') as Printer;
  await simplex.emptyTray();
  const created = await post(t.context, 'jobs', { printer_id: id, content: pdf() });
  t.is(created.status, 201);
  const empty = await eventually(status, (p) => p.status === 'out_of_paper', 30_000);
  t.regex(empty.detail, /media-empty|media-needed/);
  t.not((await job(t.context, created.body.job.id)).body.job.status, 'printed');

  await simplex.loadPaper();
  await eventually(status, (p) => p.status === 'ready', 30_000);
  const printed = await eventually(
    () => job(t.context, created.body.job.id),
    (r) => r.body.job.status === 'printed',
    30_000,
  );
  t.is(printed.body.job.confirmation?.level, 'device_completed');
  t.is((await simplex.jobs()).length, 1);
});

/**
 * A station of its own for `printer`, its agent started with `env` added as a user would set it;
 * `t` stops the agent and removes its state directory. Resolves with the printer as listed once
 * its station is online and the agent has read it; fails with the agent's output when it never is.
 */
async function agentFor(
  t: Owner,
  c: Context,
  name: string,
  printer: IppPrinter,
  env: Record<string, string>,
): Promise<Printer | undefined> {
  const station = await createStation(c.sys.url, c.orgId);
  const state = await tempDir('spool-agent-state-');
  t.teardown(() => rm(state, { recursive: true, force: true }));
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      c.sys.linkAddress,
      '--state-dir',
      state,
      '--printer',
      `${name}=${printer.uri}`,
    ],
    { SPOOL_DEVICE_TOKEN: station.token, LOG_LEVEL: 'info', ...env },
  );
  t.teardown(() => agent.stop());
  const listed = async () => (await printers(c)).find((p) => p.name === name);
  return eventually(
    listed,
    (p) => p?.station_online === true && p.status !== 'unknown',
    30_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\nagent output:\n${agent.output()}`);
  });
}

test('a printer at ipps:// whose own certificate the agent trusts through NODE_EXTRA_CA_CERTS prints over TLS and confirms it', async (t) => {
  const printer = await startIppPrinter(t, { tls: true, formats: ['application/pdf'] });
  t.regex(printer.uri, /^ipps:\/\/localhost:\d+\/ipp\/print$/);
  const ready = await agentFor(t, t.context, 'tls-trusted', printer, {
    NODE_EXTRA_CA_CERTS: printer.certificate ?? '',
  });
  t.is(ready?.status, 'ready', ready?.detail);
  // Read from the printer over TLS.
  t.deepEqual(ready?.capabilities.document_formats, ['application/pdf']);

  const created = await post(t.context, 'jobs', {
    printer_id: ready?.id,
    title: 'over TLS',
    content: pdf(),
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  const printed = await eventually(
    () => job(t.context, created.body.job.id),
    (r) => r.body.job.status === 'printed' || r.body.job.status === 'failed',
    30_000,
  );
  t.is(printed.body.job.status, 'printed', printed.body.job.status_detail);
  t.deepEqual(printed.body.job.confirmation, { level: 'device_completed', pages: 1 });
  const jobs = await printer.jobs();
  t.is(jobs.length, 1);
  t.like(jobs[0], { 'job-name': 'over TLS', 'document-format-supplied': 'application/pdf' });
});

test('a printer at ipps:// whose certificate the agent does not trust reads in error saying so, and is sent nothing', async (t) => {
  const printer = await startIppPrinter(t, { tls: true, formats: ['application/pdf'] });
  // No NODE_EXTRA_CA_CERTS: the printer's self-signed certificate is trusted by no CA.
  const refused = await agentFor(t, t.context, 'tls-untrusted', printer, {});
  t.is(refused?.status, 'error', refused?.detail);
  const untrusted =
    /certificate is not trusted \(self-signed certificate\); to trust it, .*NODE_EXTRA_CA_CERTS in the agent's environment/;
  t.regex(refused?.detail ?? '', untrusted);
  t.true(refused?.detail.startsWith(`ipp ${printer.uri}: `), refused?.detail);

  const created = await post(t.context, 'jobs', { printer_id: refused?.id, content: pdf() });
  t.is(created.status, 201, JSON.stringify(created.body));
  const waiting = await eventually(
    () => job(t.context, created.body.job.id),
    (r) => r.body.job.status !== 'queued' || untrusted.test(r.body.job.status_detail),
    30_000,
  );
  t.is(waiting.body.job.status, 'queued', waiting.body.job.status_detail);
  t.regex(
    waiting.body.job.status_detail,
    /^waiting: printer "tls-untrusted" is in error \(ipp ipps:/,
  );
  t.deepEqual(await printer.jobs(), []);
});

test('a printer at ipps:// dialled by a name its trusted certificate does not have reads in error naming the names it has', async (t) => {
  const printer = await startIppPrinter(t, { tls: true, formats: ['application/pdf'] });
  // Its certificate is for localhost (and localhost.local); the agent dials its address instead.
  const byAddress = { ...printer, uri: printer.uri.replace('//localhost:', '//127.0.0.1:') };
  const refused = await agentFor(t, t.context, 'tls-misnamed', byAddress, {
    NODE_EXTRA_CA_CERTS: printer.certificate ?? '',
  });
  t.is(refused?.status, 'error', refused?.detail);
  t.is(
    refused?.detail,
    `ipp ${byAddress.uri}: the printer's certificate is not for 127.0.0.1 (it names ` +
      'DNS:localhost, DNS:localhost.local); dial the printer by a name its certificate has',
  );
  t.deepEqual(await printer.jobs(), []);
});

test('a printer at ipps:// whose trusted certificate has expired reads in error saying so, and is sent nothing', async (t) => {
  const printer = await startIppPrinter(t, { tls: 'expired', formats: ['application/pdf'] });
  // Trusted as the first ipps:// test's is, so only its dates (all of 2020) stand in the way.
  const refused = await agentFor(t, t.context, 'tls-expired', printer, {
    NODE_EXTRA_CA_CERTS: printer.certificate ?? '',
  });
  t.is(refused?.status, 'error', refused?.detail);
  t.is(
    refused?.detail,
    `ipp ${printer.uri}: the printer's certificate was refused: certificate has expired`,
  );
  t.deepEqual(await printer.jobs(), []);
});
