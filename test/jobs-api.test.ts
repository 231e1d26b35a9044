import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { NotFoundError, Spool } from '../client/index.js';
import { connectBus } from '../lib/bus.js';
import { SCOPES } from '../lib/credentials.js';
import { createPool } from '../lib/db.js';
import { openDocuments } from '../lib/documents.js';
import { silentLogger } from '../lib/logger.js';
import { createJobStore } from '../services/jobs/store.js';
import { Sweeper } from '../services/jobs/sweeper.js';
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
  printerId: string;
}

const test = anyTest as TestFn<Ctx>;

type Job = {
  id: string;
  status: string;
  status_detail: string;
  attempt: number;
  reprint_of: string | null;
  content_deleted: boolean;
  schedule_at: string | null;
  live: boolean;
};
interface JobAnswer {
  job: Job;
  events: Array<{ status: string; detail: string; actor: string }>;
  error: { code: string; message: string; param?: string };
}

const DAY = 24 * 60 * 60 * 1000;

test.before(async (t) => {
  const sys = await startTestSystem({ maxDocumentBytes: 64 * 1024 });
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  t.context = { sys, orgId, key, link, printerId: link.welcome.printerIds.front as string };
});

test.after.always(async (t) => {
  t.context.link?.close();
  await t.context.sys?.stop();
});

function api<T = JobAnswer>(
  t: { context: Ctx },
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  token = t.context.key,
) {
  return call<T>(t.context.sys.url, method, `/v1/orgs/${t.context.orgId}${path}`, {
    token,
    headers,
    ...(body === undefined ? {} : { body }),
  });
}

function newJob(
  t: { context: Ctx },
  extra: Record<string, unknown> = {},
  headers = {},
  token?: string,
) {
  return api(
    t,
    'POST',
    '/jobs',
    { printer_id: t.context.printerId, content: { type: 'text', data: 'hello' }, ...extra },
    headers,
    token,
  );
}

const offered = (link: LinkClient, id: string) => link.jobs.filter((j) => j.offer.jobId === id);

async function waitFor(t: { context: Ctx }, id: string, status: string): Promise<void> {
  await eventually(
    () => api(t, 'GET', `/jobs/${id}`),
    (res) => res.body.job.status === status,
  );
}

test.serial(
  'a scheduled job waits until its time, then is queued once by two schedulers',
  async (t) => {
    const { sys, link } = t.context;
    const at = new Date(sys.clock.now().getTime() + 60 * 60 * 1000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await newJob(t, { schedule_at: at });
      t.is(res.status, 201);
      t.is(res.body.job.status, 'scheduled');
      ids.push(res.body.job.id);
    }
    t.deepEqual((await sys.system.sweeper.runOnce()).queued, 0);
    t.is(offered(link, ids[0] as string).length, 0);

    // A second scheduler over the same database, as another replica would run it.
    const pool = createPool({ url: sys.db.url });
    const nc = await connectBus({
      url: sys.nats.url,
      name: 'second-scheduler',
      logger: silentLogger,
    });
    t.teardown(async () => {
      await nc.close();
      await pool.end();
    });
    const second = new Sweeper({
      store: createJobStore(pool, sys.clock),
      documents: await openDocuments(nc),
      settings: async () => ({
        jobDocumentRetentionDays: 30,
        uploadRetentionDays: 7,
        webhookDeliveryRetentionDays: 30,
        auditRetentionDays: 365,
        statusNotice: '',
        pricingJson: '',
        downloadsJson: '',
      }),
      clock: sys.clock,
      logger: silentLogger,
    });
    sys.clock.advance(61 * 60 * 1000);
    const [a, b] = await Promise.all([sys.system.sweeper.runOnce(), second.runOnce()]);
    t.is(a.queued + b.queued, ids.length, 'each due job queued exactly once');
    sys.system.sweeper.runOnce();
    for (const id of ids) {
      const res = await api(t, 'GET', `/jobs/${id}`);
      t.deepEqual(
        res.body.events.map((e) => e.status),
        ['scheduled', 'queued'],
      );
      t.is(res.body.events[1]?.actor, 'system');
    }
    await link.until(() => ids.every((id) => offered(link, id).length === 1));
  },
);

test.serial(
  'a schedule_at already past queues the job at once, and the job keeps it',
  async (t) => {
    const { sys, link } = t.context;
    const at = new Date(sys.clock.now().getTime() - 60 * 60 * 1000).toISOString();
    const res = await newJob(t, { schedule_at: at });
    t.is(res.status, 201);
    t.like(res.body.job, { status: 'queued', schedule_at: at.replace(/\.\d{3}Z$/, 'Z') });
    await link.until(() => offered(link, res.body.job.id).length === 1);
    const read = await api(t, 'GET', `/jobs/${res.body.job.id}`);
    t.is(read.body.job.schedule_at, res.body.job.schedule_at);
  },
);

test.serial('a held job waits until retry releases it', async (t) => {
  const { link } = t.context;
  const res = await newJob(t, { hold: true });
  t.is(res.body.job.status, 'held');
  const released = await api(t, 'POST', `/jobs/${res.body.job.id}/retry`);
  t.is(released.status, 200);
  t.is(released.body.job.status, 'queued');
  await link.until(() => offered(link, res.body.job.id).length === 1);
  const both = await newJob(t, { hold: true, schedule_at: new Date().toISOString() });
  t.is(both.status, 400);
  t.is(both.body.error.param, 'hold');
});

test.serial('a job undelivered past its expire_after fails as expired', async (t) => {
  const { sys, orgId } = t.context;
  const offline = await createStation(sys.url, orgId, { name: 'Away' });
  const away = await connectLink(sys.linkAddress, offline.token, [printer('away')]);
  const printerId = away.welcome.printerIds.away as string;
  away.close();
  const res = await newJob(t, { printer_id: printerId, expire_after: 60 });
  t.is(res.body.job.status, 'queued');
  sys.clock.advance(59_000);
  await sys.system.sweeper.runOnce();
  t.is((await api(t, 'GET', `/jobs/${res.body.job.id}`)).body.job.status, 'queued');
  sys.clock.advance(2_000);
  t.is((await sys.system.sweeper.runOnce()).expired, 1);
  const expired = await api(t, 'GET', `/jobs/${res.body.job.id}`);
  t.is(expired.body.job.status, 'failed');
  t.is(expired.body.job.status_detail, 'expired');
});

test.serial(
  'reprint makes a new job with the same content; the original does not change',
  async (t) => {
    const { link } = t.context;
    const original = (await newJob(t, { content: { type: 'text', data: 'reprint me' } })).body.job;
    await link.until(() => offered(link, original.id).length === 1);
    link.send({ result: { jobId: original.id, attempt: 1, printed: true, detail: '' } });
    await waitFor(t, original.id, 'printed');
    const before = await api(t, 'GET', `/jobs/${original.id}`);
    const reprint = await api(t, 'POST', `/jobs/${original.id}/reprint`);
    t.is(reprint.status, 201);
    t.not(reprint.body.job.id, original.id);
    t.is(reprint.body.job.reprint_of, original.id);
    await link.until(() => offered(link, reprint.body.job.id).length === 1);
    t.is(offered(link, reprint.body.job.id)[0]?.document.toString(), 'reprint me');
    const after = await api(t, 'GET', `/jobs/${original.id}`);
    t.deepEqual(after.body.events, before.body.events);
  },
);

test.serial(
  'without pdftoppm a PDF preview answers 500 saying previews are not available, not a 503 to retry',
  async (t) => {
    const { sys } = t.context;
    const job = (
      await newJob(t, {
        content: { type: 'pdf_base64', data: minimalPdf('No poppler').toString('base64') },
      })
    ).body.job;
    // The services run in this process: a PATH without poppler is a jobs service without it.
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      const res = await fetch(`${sys.url}/v1/orgs/${t.context.orgId}/jobs/${job.id}/preview`, {
        headers: { authorization: `Bearer ${t.context.key}` },
      });
      t.is(res.status, 500);
      t.is(res.headers.get('retry-after'), null);
      const body = (await res.json()) as { error: { code: string; message: string } };
      t.like(body.error, {
        code: 'internal',
        message: 'PDF previews are not available on this server',
      });
    } finally {
      process.env.PATH = path;
    }
  },
);

test.serial(
  'content and preview answer the document; after retention they answer 410 and the job stays',
  async (t) => {
    const { sys, link } = t.context;
    const pdf = minimalPdf('Preview me');
    const job = (await newJob(t, { content: { type: 'pdf_base64', data: pdf.toString('base64') } }))
      .body.job;
    const content = await fetch(`${sys.url}/v1/orgs/${t.context.orgId}/jobs/${job.id}/content`, {
      headers: { authorization: `Bearer ${t.context.key}` },
    });
    t.is(content.status, 200);
    t.is(content.headers.get('content-type'), 'application/pdf');
    // An integrator's bytes are saved, never run at the API's origin, and kept by no cache.
    t.is(content.headers.get('content-disposition'), `attachment; filename="${job.id}.pdf"`);
    t.is(content.headers.get('content-security-policy'), "sandbox; default-src 'none'");
    t.is(content.headers.get('x-content-type-options'), 'nosniff');
    t.is(content.headers.get('cache-control'), 'no-store');
    t.deepEqual(Buffer.from(await content.arrayBuffer()), pdf);
    const preview = await fetch(`${sys.url}/v1/orgs/${t.context.orgId}/jobs/${job.id}/preview`, {
      headers: { authorization: `Bearer ${t.context.key}` },
    });
    t.is(preview.status, 200);
    t.is(preview.headers.get('content-type'), 'image/png');
    t.deepEqual(
      Buffer.from(await preview.arrayBuffer())
        .subarray(1, 4)
        .toString(),
      'PNG',
    );
    const text = (await newJob(t, { content: { type: 'text', data: 'plain words' } })).body.job;
    const textPreview = await fetch(
      `${sys.url}/v1/orgs/${t.context.orgId}/jobs/${text.id}/preview`,
      {
        headers: { authorization: `Bearer ${t.context.key}` },
      },
    );
    t.is(await textPreview.text(), 'plain words');

    await link.until(() => offered(link, job.id).length === 1);
    link.send({ result: { jobId: job.id, attempt: 1, printed: true, detail: '' } });
    await call(sys.url, 'GET', '/healthz');
    for (
      let i = 0;
      i < 100 && (await api(t, 'GET', `/jobs/${job.id}`)).body.job.status !== 'printed';
      i++
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    sys.clock.advance(29 * DAY);
    await sys.system.sweeper.runOnce();
    t.is((await api(t, 'GET', `/jobs/${job.id}/content`)).status, 200, 'kept 29 days');
    sys.clock.advance(2 * DAY);
    t.true((await sys.system.sweeper.runOnce()).documentsDeleted >= 1);
    for (const path of ['/content', '/preview']) {
      const gone = await api(t, 'GET', `/jobs/${job.id}${path}`);
      t.is(gone.status, 410, path);
      t.is(gone.body.error.code, 'content_deleted');
    }
    const reprint = await api(t, 'POST', `/jobs/${job.id}/reprint`);
    t.is(reprint.status, 410);
    const record = await api(t, 'GET', `/jobs/${job.id}`);
    t.is(record.status, 200);
    t.is(record.body.job.status, 'printed');
    t.true(record.body.job.content_deleted);
  },
);

test.serial('administrators set retention; uploads are kept 7 days by default', async (t) => {
  const { sys } = t.context;
  const settings = await call<{ settings: Record<string, number> }>(
    sys.url,
    'GET',
    '/admin/v1/settings',
    {
      token: OPERATOR_TOKEN,
    },
  );
  t.like(settings.body.settings, { job_document_retention_days: 30, upload_retention_days: 7 });
  const upload = await fetch(`${sys.url}/v1/orgs/${t.context.orgId}/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.context.key}`, 'content-type': 'text/plain' },
    body: 'uploaded text',
  });
  t.is(upload.status, 201);
  const { upload: up } = (await upload.json()) as { upload: { id: string; size: number } };
  t.is(up.size, 13);
  const fromUpload = await newJob(t, { content: { type: 'upload', upload_id: up.id } });
  t.is(fromUpload.status, 201);
  await t.context.link.until(() => offered(t.context.link, fromUpload.body.job.id).length === 1);
  t.is(offered(t.context.link, fromUpload.body.job.id)[0]?.document.toString(), 'uploaded text');

  const patched = await call<{ settings: Record<string, number> }>(
    sys.url,
    'PATCH',
    '/admin/v1/settings',
    {
      token: OPERATOR_TOKEN,
      body: { upload_retention_days: 2 },
    },
  );
  t.is(patched.body.settings.upload_retention_days, 2);
  sys.clock.advance(3 * DAY);
  t.true((await sys.system.sweeper.runOnce()).uploadsDeleted >= 1);
  const late = await newJob(t, { content: { type: 'upload', upload_id: up.id } });
  t.is(late.status, 410);
  t.is(late.body.error.code, 'content_deleted');
  const bad = await call(sys.url, 'PATCH', '/admin/v1/settings', {
    token: OPERATOR_TOKEN,
    body: { upload_retention_days: 0 },
  });
  t.is(bad.status, 400);
  await call(sys.url, 'PATCH', '/admin/v1/settings', {
    token: OPERATOR_TOKEN,
    body: { upload_retention_days: 7 },
  });
});

test('jobs posted at once are each answered with their own job; a refused one fails alone', async (t) => {
  const posts = Array.from({ length: 60 }, (_, i) => {
    if (i === 17) return newJob(t, { reference: `burst-${i}`, printer_id: randomUUID() });
    if (i === 41) return newJob(t, { reference: `burst-${i}`, options: { copies: 0 } });
    return newJob(t, { reference: `burst-${i}` });
  });
  const answers = await Promise.all(posts);
  answers.forEach((res, i) => {
    if (i === 17) {
      t.is(res.status, 400);
      t.is(res.body.error.param, 'printer_id');
    } else if (i === 41) {
      t.is(res.status, 400);
      t.regex(res.body.error.param ?? '', /copies/);
    } else {
      t.is(res.status, 201, `POST ${i}`);
      t.is((res.body.job as Job & { reference: string }).reference, `burst-${i}`);
    }
  });
  const ids = answers.filter((r) => r.status === 201).map((r) => r.body.job.id);
  t.is(new Set(ids).size, 58);
});

test('uploads check their type and size', async (t) => {
  const { sys, orgId, key } = t.context;
  const post = (body: string | Buffer, type: string) =>
    fetch(`${sys.url}/v1/orgs/${orgId}/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': type },
      body,
    });
  t.is((await post('not a pdf', 'application/pdf')).status, 400);
  t.is((await post('x', 'image/gif')).status, 415);
  t.is((await post(Buffer.alloc(65 * 1024), 'application/octet-stream')).status, 413);
  const empty = await post('', 'text/plain');
  t.is(empty.status, 400);
  t.like(((await empty.json()) as { error: unknown }).error, {
    code: 'invalid',
    param: 'body',
    message: 'the document is empty (0 bytes): there is nothing to print',
  });
  const pdf = await post(minimalPdf(), 'application/pdf');
  t.is(pdf.status, 201);
});

test('a job with an empty document is refused, naming the field', async (t) => {
  const { sys, orgId, key, printerId } = t.context;
  for (const content of [
    { type: 'text', data: '' },
    { type: 'raw_base64', data: '' },
  ]) {
    const res = await call<JobAnswer>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: key,
      body: { printer_id: printerId, content },
    });
    t.is(res.status, 400, content.type);
    t.like(res.body.error, { code: 'invalid', param: 'content.data' }, content.type);
    t.regex(res.body.error.message, /empty/);
  }
});

test('a job from a template prints the rendered body; missing and unknown fields are 400', async (t) => {
  const { sys, orgId, link } = t.context;
  const created = await call<{ template: { id: string; fields: unknown[] } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/templates`,
    {
      token: OPERATOR_TOKEN,
      body: {
        name: 'Shipping label',
        kind: 'zpl',
        body: '^XA^FO50,50^FD{{name}}^FS^FO50,100^FD{{city}}^FS^XZ',
        fields: [{ name: 'name' }, { name: 'city', default: 'Berlin' }],
      },
    },
  );
  t.is(created.status, 201);
  const templateId = created.body.template.id;
  const list = await api<{ templates: Array<{ id: string; kind: string }> }>(
    t,
    'GET',
    '/templates',
  );
  t.true(list.body.templates.some((tp) => tp.id === templateId && tp.kind === 'zpl'));

  const job = await newJob(t, {
    content: { type: 'template', template_id: templateId, fields: { name: 'Ada' } },
  });
  t.is(job.status, 201);
  await link.until(() => offered(link, job.body.job.id).length === 1);
  const sent = offered(link, job.body.job.id)[0];
  t.is(sent?.document.toString(), '^XA^FO50,50^FDAda^FS^FO50,100^FDBerlin^FS^XZ');
  t.is(sent?.offer.contentType, 'application/octet-stream');

  const missing = await newJob(t, {
    content: { type: 'template', template_id: templateId, fields: {} },
  });
  t.is(missing.status, 400);
  t.is(missing.body.error.param, 'content.fields.name');
  const unknown = await newJob(t, {
    content: { type: 'template', template_id: templateId, fields: { name: 'x', zip: '1' } },
  });
  t.is(unknown.status, 400);
  t.is(unknown.body.error.param, 'content.fields.zip');
  const badTemplate = await call(sys.url, 'POST', `/admin/v1/orgs/${orgId}/templates`, {
    token: OPERATOR_TOKEN,
    body: { name: 'x', kind: 'zpl', body: '{{nope}}', fields: [] },
  });
  t.is(badTemplate.status, 400);
  const wrongKind = await newJob(t, { content: { type: 'upload', template_id: templateId } });
  t.is(wrongKind.body.error.code, 'unknown_field');
  t.is(wrongKind.body.error.param, 'content.template_id');
});

test('Idempotency-Key returns the first answer; another body with the key is a 409 naming it', async (t) => {
  const key = `order-${randomUUID()}`;
  const first = await newJob(t, { reference: key }, { 'Idempotency-Key': key });
  t.is(first.status, 201);
  const again = await newJob(t, { reference: key }, { 'Idempotency-Key': key });
  t.is(again.status, 201);
  t.is(again.body.job.id, first.body.job.id);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  const other = await newJob(t, { reference: 'something else' }, { 'Idempotency-Key': key });
  t.is(other.status, 409);
  t.is(other.body.error.param, 'Idempotency-Key');
  t.true(other.body.error.message.includes(key));
});

test('concurrent requests with one Idempotency-Key create one job', async (t) => {
  const key = `burst-${randomUUID()}`;
  const answers = await Promise.all(
    Array.from({ length: 8 }, () => newJob(t, { reference: key }, { 'Idempotency-Key': key })),
  );
  for (const a of answers) t.true(a.status === 201 || a.status === 409, String(a.status));
  const list = await api<{ items: Array<{ id: string }> }>(t, 'GET', `/jobs?reference=${key}`);
  t.is(list.body.items.length, 1);
  const ids = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.job.id));
  t.deepEqual([...ids], [list.body.items[0]?.id]);
});

test.serial(
  'the 201st test-key job of a UTC day is refused while a live key still works',
  async (t) => {
    const { sys } = t.context;
    const orgId = await createOrg(sys.url, 'Tester');
    const testKey = (await createKey(sys.url, orgId, { mode: 'test', scopes: SCOPES })).secret;
    const liveKey = (await createKey(sys.url, orgId, { mode: 'live', scopes: SCOPES })).secret;
    const station = await createStation(sys.url, orgId);
    const link = await connectLink(sys.linkAddress, station.token, [printer('p')]);
    t.teardown(() => link.close());
    const printerId = link.welcome.printerIds.p as string;
    const post = (token: string) =>
      call<JobAnswer>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
        token,
        body: { printer_id: printerId, content: { type: 'text', data: 'x' } },
      });
    sys.clock.set(new Date(Date.UTC(2030, 0, 1, 12)));
    for (let i = 0; i < 200; i++) {
      const res = await post(testKey);
      if (res.status !== 201) t.fail(`test job ${i + 1} answered ${res.status}`);
    }
    const refused = await post(testKey);
    t.is(refused.status, 429);
    t.is(refused.body.error.code, 'rate_limited');
    t.regex(refused.body.error.message, /daily test limit of 200/);
    t.is(refused.headers.get('retry-after'), String(12 * 60 * 60));
    // The per-key limit's headers, which every other answer carries, would say to come back
    // within the minute: this refusal is the daily limit's, and says only its own Retry-After.
    t.is(refused.headers.get('ratelimit-remaining'), null);
    t.is(refused.headers.get('ratelimit-reset'), null);
    const live = await post(liveKey);
    t.is(live.status, 201);
    t.truthy(live.headers.get('ratelimit-remaining'));
    t.true(live.body.job.live);
    sys.clock.advance(DAY);
    t.is((await post(testKey)).status, 201, 'a new day has a new allowance');
  },
);

test.serial(
  'a failed test-key job retried prints again and counts toward the 200; a held one released does not',
  async (t) => {
    const { sys } = t.context;
    const orgId = await createOrg(sys.url, 'Retrying tester');
    const testKey = (await createKey(sys.url, orgId, { mode: 'test', scopes: SCOPES })).secret;
    const station = await createStation(sys.url, orgId);
    const link = await connectLink(sys.linkAddress, station.token, [printer('p')]);
    t.teardown(() => link.close());
    const printerId = link.welcome.printerIds.p as string;
    const post = (body: Record<string, unknown> = {}) =>
      call<JobAnswer>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
        token: testKey,
        body: { printer_id: printerId, content: { type: 'text', data: 'x' }, ...body },
      });
    const retry = (id: string) =>
      call<JobAnswer>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs/${id}/retry`, {
        token: testKey,
        body: {},
      });
    sys.clock.set(new Date(Date.UTC(2031, 0, 1, 12)));
    const failing = (await post()).body.job.id;
    await link.until(() => link.jobs.some((j) => j.offer.jobId === failing));
    link.send({ result: { jobId: failing, attempt: 1, printed: false, detail: 'jam' } });
    await eventually(
      () =>
        call<JobAnswer>(sys.url, 'GET', `/v1/orgs/${orgId}/jobs/${failing}`, { token: testKey }),
      (r) => r.body.job.status === 'failed',
    );
    const held = (await post({ hold: true })).body.job.id;
    for (let i = 0; i < 198; i++) {
      const res = await post();
      if (res.status !== 201) t.fail(`test job ${i + 3} answered ${res.status}`);
    }
    t.is((await retry(held)).status, 200, 'released, a held job prints for the first time');
    const refused = await retry(failing);
    t.is(refused.status, 429);
    t.regex(refused.body.error.message, /daily test limit of 200/);
    t.is(refused.headers.get('retry-after'), String(12 * 60 * 60));
    sys.clock.advance(DAY);
    const retried = await retry(failing);
    t.is(retried.status, 200);
    t.like(retried.body.job, { status: 'queued', attempt: 2 });
  },
);

test('the client uploads a document’s bytes as they are, and reads a job’s content and preview back as bytes', async (t) => {
  const { sys, orgId, key, printerId } = t.context;
  const spool = new Spool({ apiKey: key, baseUrl: sys.url, org: orgId });
  const pdf = minimalPdf('Uploaded by the client');
  const upload = await spool.uploads.create(pdf, 'application/pdf');
  t.is(upload.size, pdf.length, 'sent as bytes, not as a JSON string');
  const job = await spool.jobs.create({
    printer_id: printerId,
    content: { type: 'upload', upload_id: upload.id },
  });
  const content = await spool.jobs.content(job.id);
  t.is(content.contentType, 'application/pdf');
  t.deepEqual(Buffer.from(content.data), pdf);
  const preview = await spool.jobs.preview(job.id);
  t.is(preview.contentType, 'image/png');
  t.is(Buffer.from(preview.data).subarray(1, 4).toString(), 'PNG');

  const text = await spool.uploads.create('Dear customer', 'text/plain');
  t.is(text.size, 13);
  const raw = await spool.jobs.create({
    printer_id: printerId,
    content: { type: 'raw_base64', data: Buffer.from('^XA^XZ').toString('base64') },
  });
  await t.throwsAsync(spool.jobs.preview(raw.id), { instanceOf: NotFoundError });
});

test('a job from pdf_uri or raw_uri prints what the URL serves; redirects, errors and oversize are refused', async (t) => {
  const { createServer } = await import('node:http');
  const pdf = minimalPdf('From a URL');
  const server = createServer((req, res) => {
    if (req.url === '/doc.pdf') res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf);
    else if (req.url === '/label.zpl') res.writeHead(200).end('^XA^FDHi^FS^XZ');
    else if (req.url === '/moved') res.writeHead(302, { location: '/doc.pdf' }).end();
    else if (req.url === '/big') res.writeHead(200).end(Buffer.alloc(70 * 1024));
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const { link } = t.context;

  const fromPdf = await newJob(t, { content: { type: 'pdf_uri', uri: `${base}/doc.pdf` } });
  t.is(fromPdf.status, 201);
  await link.until(() => offered(link, fromPdf.body.job.id).length === 1);
  t.deepEqual(offered(link, fromPdf.body.job.id)[0]?.document, pdf);
  const fromRaw = await newJob(t, { content: { type: 'raw_uri', uri: `${base}/label.zpl` } });
  t.is(fromRaw.status, 201);

  for (const [path, status] of [
    ['/moved', 400],
    ['/missing', 400],
    ['/label.zpl', 400],
    ['/big', 413],
  ] as const) {
    const type = path === '/label.zpl' ? 'pdf_uri' : 'raw_uri';
    const res = await newJob(t, { content: { type, uri: `${base}${path}` } });
    t.is(res.status, status, path);
    t.is(res.body.error.param, 'content.uri', path);
  }
});

test('outside spool dev, content URIs may not reach loopback or private addresses', async (t) => {
  const { createFetcher } = await import('../services/jobs/fetch.js');
  const fetcher = createFetcher({ allowInsecure: false, timeoutMs: 2_000 });
  t.teardown(() => fetcher.close());
  for (const uri of [
    'https://127.0.0.1/doc.pdf',
    'https://10.0.0.7/doc.pdf',
    'http://example.com/doc.pdf',
    'https://localhost/x',
  ]) {
    const err = await t.throwsAsync(fetcher.fetch(uri, 1024));
    t.is((err as { code?: string }).code, 'invalid', uri);
  }
});
