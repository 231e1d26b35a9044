import { connect } from 'node:net';
import anyTest, { type TestFn } from 'ava';
import {
  call,
  createKey,
  createOrg,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

const test = anyTest as TestFn<{ sys: TestSystem; orgId: string; secret: string }>;

const BODY_LIMIT = 16 * 1024;
const MAX_DOCUMENT = 32 * 1024;
const UPLOAD_QUOTA = 64 * 1024;

test.before(async (t) => {
  const sys = await startTestSystem({
    bodyLimit: BODY_LIMIT,
    maxDocumentBytes: MAX_DOCUMENT,
    uploadQuotaBytes: UPLOAD_QUOTA,
  });
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, {
    mode: 'test',
    scopes: ['jobs:write', 'jobs:read'],
  });
  t.context = { sys, orgId, secret };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface ErrorBody {
  error: { code: string; message: string; param?: string; request_id: string };
}

test('an unknown scope answers 400 invalid listing the valid scopes', async (t) => {
  const { sys, orgId } = t.context;
  const res = await call<ErrorBody>(sys.url, 'POST', `/admin/v1/orgs/${orgId}/keys`, {
    token: OPERATOR_TOKEN,
    body: { mode: 'live', scopes: ['jobs:read', 'jobs:nope'] },
  });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'invalid');
  t.is(res.body.error.param, 'scopes.1');
  t.is(
    res.body.error.message,
    'scopes.1 must be one of: jobs:write, jobs:read, printers:read, printers:write, locations:read, webhooks:read, webhooks:write, orgs:read, orgs:write, stations:write',
  );
});

test('an unknown key mode answers 400 invalid listing the modes', async (t) => {
  const { sys, orgId } = t.context;
  const res = await call<ErrorBody>(sys.url, 'POST', `/admin/v1/orgs/${orgId}/keys`, {
    token: OPERATOR_TOKEN,
    body: { mode: 'staging', scopes: [] },
  });
  t.is(res.status, 400);
  t.is(res.body.error.param, 'mode');
  t.is(res.body.error.message, 'mode must be one of: live, test');
});

test('expire_after out of range answers 400 invalid stating the allowed range', async (t) => {
  const { sys, orgId, secret } = t.context;
  for (const expireAfter of [0, 30 * 24 * 3600 + 1, 'soon']) {
    const res = await call<ErrorBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: secret,
      body: {
        printer_id: '00000000-0000-4000-8000-000000000000',
        content: { type: 'text', data: 'x' },
        expire_after: expireAfter,
      },
    });
    t.is(res.status, 400, String(expireAfter));
    t.is(res.body.error.code, 'invalid');
    t.is(res.body.error.param, 'expire_after');
    t.regex(res.body.error.message, /^expire_after must be an integer from 1 to 2592000 \(/);
  }
});

test('a value of the wrong JSON type, or null, is named with what it must be', async (t) => {
  const { sys, orgId, secret } = t.context;
  const printer_id = '00000000-0000-4000-8000-000000000000';
  const content = { type: 'text', data: 'x' };
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ title: 123 }, 'title', 'title must be a string, not a number (at most 1000 characters)'],
    [
      { hold: 'yes' },
      'hold',
      'hold must be true or false, not a string (true: the job is held until retried)',
    ],
    [{ options: [] }, 'options', 'options must be an object, not an array'],
    [
      { schedule_at: null },
      'schedule_at',
      'schedule_at cannot be null: leave the field out instead',
    ],
    [
      { printer_id: 5 },
      'printer_id',
      'printer_id must be a string, not a number (the id of a printer of this organization; give it or pool_id, not both)',
    ],
  ];
  for (const [fields, param, message] of cases) {
    const res = await call<ErrorBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: secret,
      body: { printer_id, content, ...fields },
    });
    t.is(res.status, 400, param);
    t.like(res.body.error, { code: 'invalid', param, message });
  }
});

test('a location with a time zone that does not exist answers 400 invalid naming timezone', async (t) => {
  const { sys, orgId } = t.context;
  const res = await call<ErrorBody>(sys.url, 'POST', `/admin/v1/orgs/${orgId}/locations`, {
    token: OPERATOR_TOKEN,
    body: { name: 'Base', timezone: 'Mars/Olympus' },
  });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'invalid');
  t.is(res.body.error.param, 'timezone');
  t.regex(res.body.error.message, /IANA time zone such as Europe\/Berlin; "Mars\/Olympus"/);

  const ok = await call<{ location: { timezone: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'Berlin', timezone: 'Europe/Berlin' } },
  );
  t.is(ok.status, 201);
  t.is(ok.body.location.timezone, 'Europe/Berlin');
});

test('the operator API tells a missing operator token from a wrong one', async (t) => {
  const { sys } = t.context;
  const missing = await call<ErrorBody>(sys.url, 'GET', '/admin/v1/settings');
  t.is(missing.status, 401);
  t.is(missing.body.error.code, 'unauthorized');
  t.regex(missing.body.error.message, /^no operator token: send it as Authorization: Bearer/);

  const wrong = await call<ErrorBody>(sys.url, 'GET', '/admin/v1/settings', { token: 'nope' });
  t.is(wrong.status, 401);
  t.is(wrong.body.error.code, 'unauthorized');
  t.regex(wrong.body.error.message, /^wrong operator token: .*SPOOL_ADMIN_TOKEN/);

  const basic = await call<ErrorBody>(sys.url, 'GET', '/admin/v1/settings', {
    headers: { authorization: 'Basic dXNlcjpwYXNz' },
  });
  t.is(basic.status, 401);
  t.regex(basic.body.error.message, /not a bearer token/);
});

test('job creation takes bodies up to MAX_DOCUMENT_BYTES in base64, other bodies BODY_LIMIT_BYTES (docs/api.md)', async (t) => {
  const { sys, orgId, secret } = t.context;
  // A document just under MAX_DOCUMENT_BYTES, inline in base64: well over BODY_LIMIT_BYTES.
  const data = Buffer.alloc(MAX_DOCUMENT - 1024, 'a').toString('base64');
  const jobBody = {
    printer_id: '00000000-0000-4000-8000-000000000000',
    content: { type: 'raw_base64', data },
  };
  t.true(JSON.stringify(jobBody).length > BODY_LIMIT);
  const read = await call<ErrorBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
    token: secret,
    body: jobBody,
  });
  // Read and checked: no such printer, not too large.
  t.not(read.status, 413, JSON.stringify(read.body));

  const jobLimit = Math.ceil((MAX_DOCUMENT * 4) / 3) + 64 * 1024;
  const tooLarge = await call<ErrorBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
    token: secret,
    body: { ...jobBody, title: 'x'.repeat(jobLimit) },
  });
  t.is(tooLarge.status, 413);
  t.is(tooLarge.body.error.code, 'payload_too_large');
  t.is(tooLarge.body.error.message, `the body is larger than ${jobLimit} bytes`);

  const admin = await call<ErrorBody>(sys.url, 'POST', '/admin/v1/orgs', {
    token: OPERATOR_TOKEN,
    body: { name: 'x'.repeat(BODY_LIMIT) },
  });
  t.is(admin.status, 413);
  t.is(admin.body.error.message, `the body is larger than ${BODY_LIMIT} bytes`);
});

test('a bad entry inside a field that may also be null is named, a string too long says its limit, and public entries are checked', async (t) => {
  const { sys } = t.context;
  const cases: Array<[object, string, string]> = [
    [
      { pricing: { starter: 900, pro: -1 } },
      'pricing.pro',
      'pricing.pro must be an integer from 0 to 1000000000',
    ],
    [
      { pricing: { pro: 'ten' } },
      'pricing.pro',
      'pricing.pro must be an integer from 0 to 1000000000 or null, not a string (a price in whole cents, or null for none)',
    ],
    [
      { pricing: { pro: 1e20 } },
      'pricing.pro',
      'pricing.pro must be an integer from 0 to 1000000000',
    ],
    [{ pricing: { '': 5 } }, 'pricing', 'pricing names must be of 1 to 100 characters'],
    [
      { downloads: { ['x'.repeat(101)]: null } },
      'downloads',
      'downloads names must be of 1 to 100 characters',
    ],
    [
      { downloads: { linux: { version: '1.2.0' } } },
      'downloads.linux.url',
      'downloads.linux.url is required',
    ],
    [
      { downloads: { linux: 'x' } },
      'downloads.linux',
      'downloads.linux must be an object or null, not a string',
    ],
    [
      { downloads: { linux: { version: '1.2.0', url: 'javascript:alert(1)' } } },
      'downloads.linux.url',
      'downloads.linux.url must be an https:// or http:// URL, not javascript:',
    ],
    [
      { downloads: { linux: { version: '1.2.0', url: 'not a url' } } },
      'downloads.linux.url',
      'downloads.linux.url must be an https:// or http:// URL',
    ],
    [{ notice: 'x'.repeat(1001) }, 'notice', 'notice must be a string of at most 1000 characters'],
    [
      { notice: 5 },
      'notice',
      'notice must be a string or null, not a number (a notice on the public status page, or null for none)',
    ],
  ];
  for (const [body, param, message] of cases) {
    const res = await call<ErrorBody>(sys.url, 'PATCH', '/admin/v1/settings', {
      token: OPERATOR_TOKEN,
      body,
    });
    t.is(res.status, 400, param);
    t.like(res.body.error, { code: 'invalid', param, message });
  }
  const settings = await call<{ settings: { pricing: unknown } }>(
    sys.url,
    'GET',
    '/admin/v1/settings',
    {
      token: OPERATOR_TOKEN,
    },
  );
  t.is(settings.body.settings.pricing, null);
});

test('an empty location_id is refused, not taken for none; an empty name says its length', async (t) => {
  const { sys, orgId } = t.context;
  const stations = `/admin/v1/orgs/${orgId}/stations`;
  const created = await call<ErrorBody>(sys.url, 'POST', stations, {
    token: OPERATOR_TOKEN,
    body: { name: 'Desk', location_id: '' },
  });
  t.is(created.status, 400);
  t.like(created.body.error, {
    param: 'location_id',
    message: 'location_id must be the id of a location; null (or leaving it out) is none',
  });
  const unnamed = await call<ErrorBody>(sys.url, 'POST', stations, {
    token: OPERATOR_TOKEN,
    body: { name: '' },
  });
  t.like(unnamed.body.error, {
    param: 'name',
    message: 'name must be a string of 1 to 200 characters',
  });

  const hall = await call<{ location: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'Hall' } },
  );
  const station = await call<{ station: { id: string } }>(sys.url, 'POST', stations, {
    token: OPERATOR_TOKEN,
    body: { name: 'Desk', location_id: hall.body.location.id },
  });
  const path = `${stations}/${station.body.station.id}`;
  const emptied = await call<ErrorBody>(sys.url, 'PATCH', path, {
    token: OPERATOR_TOKEN,
    body: { location_id: '' },
  });
  t.is(emptied.status, 400);
  t.is(emptied.body.error.param, 'location_id');
  const after = await call<{ station: { location_id: string | null } }>(sys.url, 'GET', path, {
    token: OPERATOR_TOKEN,
  });
  t.is(after.body.station.location_id, hall.body.location.id, 'still in its location');
});

test('an API key sent to the operator API is told it is not an operator token', async (t) => {
  const { sys, secret } = t.context;
  const res = await call<ErrorBody>(sys.url, 'GET', '/admin/v1/orgs', { token: secret });
  t.is(res.status, 401);
  t.regex(res.body.error.message, /^an API key is not an operator token: /);
});

test('what Node’s parser refuses (headers over its limit, a request that is not HTTP) is answered in the envelope too', async (t) => {
  const { sys, orgId, secret } = t.context;
  const long = await fetch(`${sys.url}/v1/orgs/${orgId}/jobs?reference=${'r'.repeat(20_000)}`, {
    headers: { authorization: `Bearer ${secret}`, 'x-padding': 'p'.repeat(60_000) },
  });
  t.is(long.status, 431);
  t.is(long.headers.get('content-type'), 'application/json; charset=utf-8');
  const body = (await long.json()) as ErrorBody;
  t.is(body.error.code, 'headers_too_large');
  t.regex(body.error.message, /too large/);
  t.is(body.error.request_id, long.headers.get('request-id') ?? '');

  const { port, hostname } = new URL(sys.url);
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
    let got = '';
    socket.on('data', (d) => {
      got += d.toString();
    });
    socket.on('end', () => resolve(got));
    socket.on('error', reject);
  });
  t.regex(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
  const json = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as ErrorBody;
  t.like(json.error, { code: 'invalid', message: 'the request is not valid HTTP/1.1' });
});

test('an organization’s uploads are kept up to its quota: one more answers 413 saying what they hold; another organization still uploads', async (t) => {
  const { sys } = t.context;
  const upload = async (orgId: string, secret: string) => {
    const res = await fetch(`${sys.url}/v1/orgs/${orgId}/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'text/plain' },
      body: 'x'.repeat(30 * 1024),
    });
    return { status: res.status, body: (await res.json()) as ErrorBody };
  };
  const key = async (orgId: string) =>
    (await createKey(sys.url, orgId, { mode: 'test', scopes: ['jobs:write'] })).secret;
  const full = await createOrg(sys.url, 'Uploader');
  const fullKey = await key(full);
  t.is((await upload(full, fullKey)).status, 201);
  t.is((await upload(full, fullKey)).status, 201);
  const refused = await upload(full, fullKey);
  t.is(refused.status, 413);
  t.is(refused.body.error.code, 'payload_too_large');
  t.regex(
    refused.body.error.message,
    /uploads hold 61440 bytes, and this one \(30720\) would pass its 65536/,
  );
  const other = await createOrg(sys.url, 'Other uploader');
  t.is((await upload(other, await key(other))).status, 201);
});

test('a number that must be one of a few is named with them', async (t) => {
  const { sys, orgId, secret } = t.context;
  for (const rotate of [45, '90']) {
    const res = await call<ErrorBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: secret,
      body: {
        printer_id: '6f1f1c52-94b3-4d43-9b0c-3d0e7e9c1a11',
        content: { type: 'text', data: 'x' },
        options: { rotate },
      },
    });
    t.is(res.status, 400);
    t.is(res.body.error.param, 'options.rotate');
    t.regex(
      res.body.error.message,
      /^options\.rotate must be one of: 0, 90, 180, 270/,
      String(rotate),
    );
  }
});
