import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import anyTest, { type TestFn } from 'ava';
import { openApiPath } from '../gateway/openapi.js';
import { V1_ROUTES } from '../gateway/routes/v1.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

const run = promisify(execFile);

type Doc = {
  openapi: string;
  info: { license?: unknown };
  servers: unknown[];
  tags: Array<{ name: string }>;
  paths: Record<string, Record<string, { operationId: string; tags: string[] }>>;
};

const test = anyTest as TestFn<{
  sys: TestSystem;
  org: string;
  key: string;
  link: LinkClient;
  printerId: string;
}>;

test.before(async (t) => {
  const sys = await startTestSystem();
  const org = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, org, {
    scopes: ['jobs:write', 'jobs:read', 'printers:read'],
  });
  const station = await createStation(sys.url, org);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front-desk')]);
  const printers = await call<{ printers: Array<{ id: string }> }>(
    sys.url,
    'GET',
    `/v1/orgs/${org}/printers`,
    { token: secret },
  );
  const printerId = printers.body.printers[0]?.id ?? '';
  t.context = { sys, org, key: secret, link, printerId };
});

test.after.always(async (t) => {
  t.context.link?.close();
  await t.context.sys?.stop();
});

async function served(base: string, path: string): Promise<Doc> {
  const res = await fetch(`${base}${path}`);
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  return (await res.json()) as Doc;
}

for (const path of ['/v1/openapi.json', '/admin/v1/openapi.json']) {
  test(`GET ${path} answers without a token, a valid OpenAPI 3.1 document with readable operation ids, tags, a license and servers`, async (t) => {
    const doc = await served(t.context.sys.url, path);
    t.is(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    t.true(result.valid, JSON.stringify(result.errors, null, 2));
    t.is(validator.version, '3.1');
    t.truthy(doc.info.license);
    t.true(doc.servers.length > 0);
    const tags = new Set(doc.tags.map((tag) => tag.name));
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        t.regex(op.operationId, /^[a-z][A-Za-z]+$/, `${method} ${p}`);
        t.true(op.tags.length === 1 && tags.has(op.tags[0] as string), `${method} ${p}`);
      }
    }
  });
}

test('every /v1 route is in the document, under the operation ids integrators know', async (t) => {
  const doc = await served(t.context.sys.url, '/v1/openapi.json');
  for (const route of V1_ROUTES) {
    t.truthy(
      doc.paths[openApiPath(route.path)]?.[route.method.toLowerCase()],
      `${route.method} ${route.path}`,
    );
  }
  const ids = Object.values(doc.paths).flatMap((ops) =>
    Object.values(ops).map((o) => o.operationId),
  );
  for (const id of [
    'getKey',
    'createJob',
    'listJobs',
    'getJob',
    'cancelJob',
    'retryJob',
    'reprintJob',
    'listPrinters',
    'listLocations',
    'getLocation',
    'listTemplates',
    'getJobContent',
    'getJobPreview',
    'createUpload',
    'getServerKey',
    'getStatus',
  ]) {
    t.true(ids.includes(id), id);
  }
});

test('redocly lint with the recommended rules finds no problem in either served document', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'spool-openapi-'));
  try {
    const files: string[] = [];
    for (const [name, path] of [
      ['v1.json', '/v1/openapi.json'],
      ['admin-v1.json', '/admin/v1/openapi.json'],
    ] as const) {
      const file = join(dir, name);
      await writeFile(file, JSON.stringify(await served(t.context.sys.url, path), null, 2));
      files.push(file);
    }
    const bin = join(import.meta.dirname, '..', 'node_modules', '.bin', 'redocly');
    // One file a run: the CLI prints one JSON report per file.
    for (const file of files) {
      const { stdout } = await run(
        bin,
        ['lint', '--extends', 'recommended', '--format', 'json', file],
        {
          cwd: dir,
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          maxBuffer: 16 * 1024 * 1024,
        },
      ).catch((err: { stdout?: string; message: string }) => {
        t.fail(`redocly lint failed on ${file}: ${err.stdout ?? err.message}`);
        return { stdout: '{"totals": {}, "problems": []}' };
      });
      // The report is the JSON object after any notice the CLI prints first.
      const report = JSON.parse(stdout.slice(stdout.search(/^\{/m))) as {
        totals: { errors: number; warnings: number };
        problems: Array<{ ruleId: string; message: string }>;
      };
      t.deepEqual(
        report.problems.map((p) => `${p.ruleId}: ${p.message}`),
        [],
        file,
      );
      t.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 }, file);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('each 201 names the new resource in Location, as the document says', async (t) => {
  const { sys, org } = t.context;
  const admin = { token: OPERATOR_TOKEN };
  const doc = await served(sys.url, '/admin/v1/openapi.json');
  const created = [
    ['/admin/v1/orgs', { name: 'Other' }, 'org', (id: string) => `/admin/v1/orgs/${id}`],
    [
      `/admin/v1/orgs/${org}/keys`,
      { mode: 'test', scopes: [] },
      'key',
      (id: string) => `/admin/v1/orgs/${org}/keys/${id}`,
    ],
    [
      `/admin/v1/orgs/${org}/stations`,
      { name: 'Back office' },
      'station',
      (id: string) => `/admin/v1/orgs/${org}/stations/${id}`,
    ],
    [
      `/admin/v1/orgs/${org}/locations`,
      { name: 'Berlin' },
      'location',
      (id: string) => `/admin/v1/orgs/${org}/locations/${id}`,
    ],
  ] as const;
  for (const [path, body, field, url] of created) {
    const res = await call<Record<string, { id: string }>>(sys.url, 'POST', path, {
      ...admin,
      body,
    });
    t.is(res.status, 201, path);
    t.is(res.headers.get('location'), url(res.body[field]?.id ?? ''), path);
  }
  t.truthy(
    (
      doc.paths['/admin/v1/orgs'] as unknown as {
        post: { responses: { 201: { headers: object } } };
      }
    ).post.responses[201].headers,
  );
  const org2 = await call<{ org: { id: string } }>(sys.url, 'POST', '/admin/v1/orgs', {
    ...admin,
    body: { name: 'Third' },
  });
  const get = await call(sys.url, 'GET', org2.headers.get('location') ?? '', admin);
  t.is(get.status, 200);

  const upload = await fetch(`${sys.url}/v1/orgs/${org}/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.context.key}`, 'content-type': 'text/plain' },
    body: 'hello',
  });
  const answer = (await upload.json()) as { upload: { id: string } };
  t.is(upload.status, 201);
  t.is(upload.headers.get('location'), `/v1/orgs/${org}/uploads/${answer.upload.id}`);
});

test('a job created with an Idempotency-Key names itself in Location, first and replayed', async (t) => {
  const { sys, org, key, printerId } = t.context;
  const request = {
    token: key,
    headers: { 'idempotency-key': 'location-replay' },
    body: { printer_id: printerId, content: { type: 'text', data: 'hello' } },
  };
  const first = await call<{ job: { id: string } }>(
    sys.url,
    'POST',
    `/v1/orgs/${org}/jobs`,
    request,
  );
  t.is(first.status, 201);
  const url = `/v1/orgs/${org}/jobs/${first.body.job.id}`;
  t.is(first.headers.get('location'), url);
  const again = await call(sys.url, 'POST', `/v1/orgs/${org}/jobs`, request);
  t.is(again.status, 201);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.is(again.headers.get('location'), url);
  t.is((await call(sys.url, 'GET', url, { token: key })).status, 200);
});

test('a known path asked with a method it does not take answers 405 with Allow, in the error envelope', async (t) => {
  const { sys, org } = t.context;
  for (const [method, path, allow] of [
    ['POST', '/v1/key', 'HEAD, GET'],
    ['DELETE', `/v1/orgs/${org}/jobs`, 'POST, HEAD, GET'],
    ['PUT', '/admin/v1/orgs', 'POST, HEAD, GET'],
    ['POST', '/v1/public/status', 'HEAD, GET, OPTIONS'],
    ['DELETE', '/v1/openapi.json', 'GET'],
  ] as const) {
    const res = await call<{ error: { code: string; message: string } }>(sys.url, method, path, {
      token: OPERATOR_TOKEN,
    });
    t.is(res.status, 405, `${method} ${path}`);
    t.is(res.body.error.code, 'method_not_allowed');
    t.deepEqual(
      (res.headers.get('allow') ?? '').split(', ').sort(),
      allow.split(', ').sort(),
      `${method} ${path}`,
    );
    t.truthy(res.headers.get('request-id'));
  }
  const unknown = await call<{ error: { code: string } }>(sys.url, 'POST', '/v1/nothing');
  t.is(unknown.status, 404);
});

test('the public endpoints answer any origin, GET only, with a preflight; nothing else does', async (t) => {
  const { sys, key } = t.context;
  const origin = { origin: 'https://shop.example.net' };
  const status = await fetch(`${sys.url}/v1/public/status`, { headers: origin });
  t.is(status.status, 200);
  t.is(status.headers.get('access-control-allow-origin'), '*');
  t.regex(status.headers.get('access-control-expose-headers') ?? '', /Request-Id/);
  const preflight = await fetch(`${sys.url}/v1/public/server-key`, {
    method: 'OPTIONS',
    headers: { ...origin, 'access-control-request-method': 'GET' },
  });
  t.is(preflight.status, 204);
  t.is(preflight.headers.get('access-control-allow-origin'), '*');
  t.is(preflight.headers.get('access-control-allow-methods'), 'GET');

  const keyed = await fetch(`${sys.url}/v1/key`, {
    headers: { ...origin, authorization: `Bearer ${key}` },
  });
  t.is(keyed.status, 200);
  t.is(keyed.headers.get('access-control-allow-origin'), null);
  const keyedPreflight = await fetch(`${sys.url}/v1/key`, {
    method: 'OPTIONS',
    headers: { ...origin, 'access-control-request-method': 'GET' },
  });
  t.is(keyedPreflight.status, 405);
  t.is(keyedPreflight.headers.get('access-control-allow-origin'), null);
});

for (const [page, spec] of [
  ['/v1/docs', '/v1/openapi.json'],
  ['/admin/v1/docs', '/admin/v1/openapi.json'],
] as const) {
  test(`GET ${page} is a reference page rendering ${spec} with a script served from this gateway`, async (t) => {
    const res = await fetch(`${t.context.sys.url}${page}`);
    t.is(res.status, 200);
    t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
    t.regex(res.headers.get('content-security-policy') ?? '', /connect-src 'self'/);
    const html = await res.text();
    t.true(html.includes(`spec-url="${spec}"`));
    t.false(/https?:\/\//.test(html), 'the page loads nothing from elsewhere');
    const src = /<script src="([^"]+)"/.exec(html)?.[1] ?? '';
    t.true(src.startsWith(`${page}/`));
    const script = await fetch(`${t.context.sys.url}${src}`);
    t.is(script.status, 200);
    t.regex(script.headers.get('content-type') ?? '', /javascript/);
    t.true((await script.text()).length > 100_000);
  });
}

test('an answer that differs from the document is caught', async (t) => {
  const { checkAgainstOpenApi } = await import('./helpers/openapi.js');
  t.throws(() => checkAgainstOpenApi('GET', '/v1/key', 200, { id: 'x', live: 'yes' }), {
    message: /does not match/,
  });
  t.throws(() => checkAgainstOpenApi('GET', '/v1/key', 299, {}), {
    message: /does not declare status 299/,
  });
  t.throws(() => checkAgainstOpenApi('GET', '/v1/key', 409, {}), {
    message: /does not declare status 409/,
  });
  t.throws(() => checkAgainstOpenApi('POST', '/admin/v1/orgs', 201, { org: { id: 'x' } }), {
    message: /does not match/,
  });
  t.notThrows(() =>
    checkAgainstOpenApi('GET', '/v1/nothing', 404, {
      error: { code: 'not_found', message: 'no endpoint', request_id: 'r' },
    }),
  );
});
