import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import { SCOPES } from '../lib/credentials.js';
import { generateServerKeyPair, SEALING_ALGORITHM, seal, serverKeysFrom } from '../lib/sealing.js';
import { member } from './helpers/console.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { minimalPdf } from './helpers/pdf.js';
import { runSpool } from './helpers/spool.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
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
  previousKey: string;
}

const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const previous = await generateServerKeyPair();
  const current = await generateServerKeyPair();
  const sys = await startTestSystem({
    trustProxy: 1,
    keyRateLimit: 40,
    serverKeys: serverKeysFrom(current.privateKey, previous.privateKey),
  });
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  t.context = {
    sys,
    orgId,
    key,
    link,
    printerId: link.welcome.printerIds.front as string,
    previousKey: previous.publicKey,
  };
});

test.after.always(async (t) => {
  t.context.link?.close();
  await t.context.sys?.stop();
});

let ip = 1;
/** Each test's public requests come from an address of its own, so limits do not interfere. */
const nextIp = () => `203.0.113.${ip++}`;

function sealedJob(t: { context: Ctx }, content: Record<string, unknown>) {
  return call<{ job: { id: string }; error: { code: string; param: string } }>(
    t.context.sys.url,
    'POST',
    `/v1/orgs/${t.context.orgId}/jobs`,
    { token: t.context.key, body: { printer_id: t.context.printerId, content } },
  );
}

test.serial('a job sealed with the public key prints the original bytes', async (t) => {
  const { sys, link } = t.context;
  const res = await call<{ public_key: string; algorithm: string }>(
    sys.url,
    'GET',
    '/v1/public/server-key',
    {
      headers: { 'x-forwarded-for': nextIp() },
    },
  );
  t.is(res.status, 200);
  t.is(res.body.algorithm, SEALING_ALGORITHM);
  t.regex(res.body.public_key, /^[A-Za-z0-9_-]{43}$/);
  const pdf = minimalPdf('Sealed page');
  const sealed = await seal(res.body.public_key, pdf);
  const job = await sealedJob(t, { type: 'sealed', content_type: 'application/pdf', ...sealed });
  t.is(job.status, 201);
  await link.until(() => link.jobs.some((j) => j.offer.jobId === job.body.job.id));
  t.deepEqual(link.jobs.find((j) => j.offer.jobId === job.body.job.id)?.document, pdf);

  // Content sealed to the previous key still opens during the rotation grace period.
  const old = await seal(t.context.previousKey, Buffer.from('old key'));
  t.is((await sealedJob(t, { type: 'sealed', content_type: 'text/plain', ...old })).status, 201);
});

test.serial('spool seal --url seals a file to that Spool, whose job prints it', async (t) => {
  const { sys, link } = t.context;
  const dir = await mkdtemp(join(tmpdir(), 'spool-seal-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'label.txt');
  await writeFile(file, 'Sealed by the CLI');
  // SPOOL_URL points nowhere: the flag is what counts.
  const sealed = await runSpool(['seal', file, '--url', sys.url], {
    SPOOL_URL: 'http://127.0.0.1:9',
  });
  t.is(sealed.code, 0, sealed.stderr);
  const content = JSON.parse(sealed.stdout) as Record<string, unknown>;
  t.like(content, { type: 'sealed', content_type: 'text/plain' });
  const job = await sealedJob(t, content);
  t.is(job.status, 201);
  await link.until(() => link.jobs.some((j) => j.offer.jobId === job.body.job.id));
  const printed = link.jobs.find((j) => j.offer.jobId === job.body.job.id)?.document;
  t.is(printed?.toString('utf8'), 'Sealed by the CLI');
});

test.serial('tampered or foreign-key ciphertext is a 400, not a failed print', async (t) => {
  const { sys } = t.context;
  const { public_key } = (
    await call<{ public_key: string }>(sys.url, 'GET', '/v1/public/server-key', {
      headers: { 'x-forwarded-for': nextIp() },
    })
  ).body;
  const sealed = await seal(public_key, Buffer.from('pay me'));
  const bytes = Buffer.from(sealed.ciphertext, 'base64url');
  bytes[0] = (bytes[0] as number) ^ 1;
  const tampered = await sealedJob(t, {
    type: 'sealed',
    content_type: 'text/plain',
    enc: sealed.enc,
    ciphertext: bytes.toString('base64url'),
  });
  t.is(tampered.status, 400);
  t.is(tampered.body.error.param, 'content.ciphertext');
  const stranger = await generateServerKeyPair();
  const foreign = await seal(stranger.publicKey, Buffer.from('who?'));
  const refused = await sealedJob(t, { type: 'sealed', content_type: 'text/plain', ...foreign });
  t.is(refused.status, 400);
  t.is(refused.body.error.code, 'invalid');
  const missing = await sealedJob(t, {
    type: 'sealed',
    content_type: 'text/plain',
    enc: sealed.enc,
  });
  t.is(missing.body.error.param, 'content.ciphertext');
});

test.serial(
  'the 31st public request in a minute is refused across two gateway replicas; another address still gets through',
  async (t) => {
    const { sys } = t.context;
    const second = await sys.system.startGateway();
    t.teardown(() => second.stop());
    const address = nextIp();
    const get = (base: string, from: string) =>
      call(base, 'GET', '/v1/public/pricing', { headers: { 'x-forwarded-for': from } });
    for (let i = 0; i < 30; i++) {
      const res = await get(i % 2 ? second.url : sys.url, address);
      t.is(res.status, 200, `request ${i + 1}`);
      t.is(res.headers.get('ratelimit-limit'), '30');
      t.is(res.headers.get('ratelimit-remaining'), String(29 - i));
    }
    const refused = await get(second.url, address);
    t.is(refused.status, 429);
    t.is((refused.body as { error: { code: string } }).error.code, 'rate_limited');
    t.truthy(refused.headers.get('retry-after'));
    t.truthy(refused.headers.get('ratelimit-reset'));
    t.is((await get(sys.url, address)).status, 429, 'the first replica refuses too');
    t.is((await get(sys.url, nextIp())).status, 200, 'another address is not limited');
    sys.clock.advance(60_000);
    t.is((await get(sys.url, address)).status, 200, 'a new minute, a new allowance');
  },
);

test.serial(
  'the limit holds over any minute: 30 requests at the end of one minute of the clock leave none for the start of the next',
  async (t) => {
    const { sys } = t.context;
    const address = nextIp();
    const get = () =>
      call(sys.url, 'GET', '/v1/public/pricing', { headers: { 'x-forwarded-for': address } });
    const minute = Math.ceil(sys.clock.now().getTime() / 60_000) * 60_000;
    sys.clock.set(new Date(minute - 1_000));
    for (let i = 0; i < 30; i++) t.is((await get()).status, 200, `request ${i + 1}`);
    sys.clock.advance(2_000);
    const refused = await get();
    t.is(refused.status, 429, 'a new minute of the clock, but not a minute since');
    t.is(refused.headers.get('retry-after'), '58');
    sys.clock.advance(58_000);
    const again = await get();
    t.is(again.status, 200, 'a minute after the first of them');
    t.is(again.headers.get('ratelimit-remaining'), '29', 'all 30 came at the same moment');
    sys.clock.advance(60_000);
  },
);

test.serial(
  'behind one proxy, an address a client writes into X-Forwarded-For itself does not escape its limit',
  async (t) => {
    const { sys } = t.context;
    // The proxy appends the address it was reached from; the client wrote a new one before it.
    const client = nextIp();
    const get = (i: number) =>
      call(sys.url, 'GET', '/v1/public/pricing', {
        headers: { 'x-forwarded-for': `198.18.${i >> 8}.${i & 255}, ${client}` },
      });
    for (let i = 0; i < 30; i++) t.is((await get(i)).status, 200, `request ${i + 1}`);
    t.is((await get(30)).status, 429);
    sys.clock.advance(60_000);
  },
);

test.serial(
  'a public endpoint given a query parameter answers 400 unknown_field naming it',
  async (t) => {
    const { sys } = t.context;
    for (const path of ['/server-key', '/status?x=1', '/pricing', '/downloads']) {
      const url = path.includes('?') ? path : `${path}?cache=1`;
      const res = await call<{ error: { code: string; param: string } }>(
        sys.url,
        'GET',
        `/v1/public${url}`,
        { headers: { 'x-forwarded-for': nextIp() } },
      );
      t.is(res.status, 400, url);
      t.like(res.body.error, { code: 'unknown_field', param: url.endsWith('x=1') ? 'x' : 'cache' });
    }
  },
);

test.serial('pricing and downloads are null until an administrator publishes them', async (t) => {
  const { sys } = t.context;
  const from = { 'x-forwarded-for': nextIp() };
  t.is((await call<unknown>(sys.url, 'GET', '/v1/public/pricing', { headers: from })).body, null);
  t.is((await call<unknown>(sys.url, 'GET', '/v1/public/downloads', { headers: from })).body, null);
  const pricing = { per_page_cents: 2, monthly_station_cents: 900 };
  const downloads = {
    linux_x64: { version: '1.2.0', url: 'https://example.com/spool-agent-linux-x64' },
    windows_x64: null,
  };
  const set = await call(sys.url, 'PATCH', '/admin/v1/settings', {
    token: OPERATOR_TOKEN,
    body: { pricing, downloads, notice: 'Maintenance on Sunday 02:00 UTC' },
  });
  t.is(set.status, 200);
  t.deepEqual((await call(sys.url, 'GET', '/v1/public/pricing', { headers: from })).body, pricing);
  t.deepEqual(
    (await call(sys.url, 'GET', '/v1/public/downloads', { headers: from })).body,
    downloads,
  );
  const status = await call<{ notice: string }>(sys.url, 'GET', '/v1/public/status', {
    headers: from,
  });
  t.is(status.body.notice, 'Maintenance on Sunday 02:00 UTC');
  await call(sys.url, 'PATCH', '/admin/v1/settings', {
    token: OPERATOR_TOKEN,
    body: { pricing: null, notice: null },
  });
  t.is((await call<unknown>(sys.url, 'GET', '/v1/public/pricing', { headers: from })).body, null);
  for (const body of [
    { pricing: [1, 2] },
    { pricing: { basic: 'abc' } },
    { pricing: { basic: 1.5 } },
    { downloads: { linux_x64: { x: 1 } } },
    {},
  ]) {
    const bad = await call<{ error: { code: string; message: string } }>(
      sys.url,
      'PATCH',
      '/admin/v1/settings',
      { token: OPERATOR_TOKEN, body },
    );
    t.is(bad.status, 400, JSON.stringify(body));
    t.is(bad.body.error.code, 'invalid');
  }
  const empty = await call<{ error: { message: string } }>(sys.url, 'PATCH', '/admin/v1/settings', {
    token: OPERATOR_TOKEN,
    body: {},
  });
  t.regex(
    empty.body.error.message,
    /^nothing to change: give at least one of job_document_retention_days/,
  );
});

test.serial('the status is operational while every part is healthy', async (t) => {
  const { sys } = t.context;
  const res = await call<{
    status: string;
    components: Array<{ name: string; status: string }>;
    checked_at: string;
  }>(sys.url, 'GET', '/v1/public/status', { headers: { 'x-forwarded-for': nextIp() } });
  t.is(res.status, 200);
  t.is(res.body.status, 'operational');
  t.deepEqual(
    res.body.components.map((c) => c.name),
    ['api', 'print_delivery', 'webhooks', 'database'],
  );
  t.true(res.body.components.every((c) => c.status === 'operational'));
});

test.serial(
  'an API key over its per-minute limit is refused while another key is not',
  async (t) => {
    const { sys, orgId } = t.context;
    const busy = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
    const calm = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
    for (let i = 0; i < 40; i++) {
      const res = await call(sys.url, 'GET', '/v1/key', { token: busy });
      t.is(res.status, 200);
      t.is(res.headers.get('ratelimit-remaining'), String(39 - i));
    }
    const refused = await call<{ error: { code: string } }>(sys.url, 'GET', '/v1/key', {
      token: busy,
    });
    t.is(refused.status, 429);
    t.is(refused.body.error.code, 'rate_limited');
    t.truthy(refused.headers.get('retry-after'));
    t.is((await call(sys.url, 'GET', '/v1/key', { token: calm })).status, 200);
  },
);

test.serial(
  'a signed-in session over the per-minute limit is refused on the console’s API too, another session is not',
  async (t) => {
    const { sys, orgId } = t.context;
    const busy = await member(sys.url, orgId, 'viewer');
    const calm = await member(sys.url, orgId, 'viewer');
    const overview = `/console/v1/orgs/${orgId}/overview`;
    for (let i = 0; i < 40; i++) {
      const res = await busy.call('GET', overview);
      if (res.status !== 200) t.fail(`request ${i + 1} answered ${res.status}`);
    }
    const refused = await busy.call<{ error: { code: string } }>('GET', overview);
    t.is(refused.status, 429);
    t.is(refused.body.error.code, 'rate_limited');
    t.truthy(refused.headers.get('retry-after'));
    t.is((await calm.call('GET', overview)).status, 200);
    sys.clock.advance(60_000);
  },
);
