/**
 * @spool/client against real HTTP servers on loopback: retries honour Retry-After and reuse one
 * Idempotency-Key, pages are walked by cursor, and failed answers become typed errors. The whole
 * client against a real Spool is in client-package.test.ts.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import {
  API_ERROR_CLASSES,
  InvalidError,
  isSpoolApiError,
  JobNotPrintedError,
  NotFoundError,
  RateLimitedError,
  SecretNotShownError,
  ServiceTimeoutError,
  Spool,
  SpoolConnectionError,
  WaitTimeoutError,
} from '../client/index.js';
import { generateSchema, SCHEMA_PATH } from '../client/scripts/gen-schema.js';
import { ERROR_CATALOGUE } from '../lib/errors.js';

const ORG = '0b7f4c1e-5d2a-4c3b-9e8f-1a2b3c4d5e6f';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A loopback server answering with `answer`; resolves with its URL and what it was sent. */
async function server(
  t: ExecutionContext,
  answer: (req: Seen, n: number, res: ServerResponse) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const srv = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const s = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
    seen.push(s);
    answer(s, seen.length, res);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

function json(res: ServerResponse, status: number, body: unknown, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const job = (id: string, status = 'queued') => ({ id, org_id: ORG, status, status_detail: '' });
const envelope = (code: string, message: string, extra = {}) => ({
  error: { code, message, request_id: 'req-1', ...extra },
});

test('a create answered 503 with Retry-After is sent again after that wait with the same Idempotency-Key', async (t) => {
  const { url, seen } = await server(t, (_req, n, res) =>
    n === 1
      ? json(res, 503, envelope('unavailable', 'the jobs service is restarting'), {
          'retry-after': '1',
        })
      : json(res, 201, { job: job('j1') }),
  );
  const spool = new Spool({ apiKey: 'svc_test_x', baseUrl: url, org: ORG });
  const started = Date.now();
  const created = await spool.jobs.create({
    printer_id: ORG,
    content: { type: 'text', data: 'hello' },
  });
  t.is(created.id, 'j1');
  t.true(Date.now() - started >= 950, 'waited for Retry-After');
  t.is(seen.length, 2);
  const keys = seen.map((s) => s.headers['idempotency-key']);
  t.regex(String(keys[0]), /^[0-9a-f-]{36}$/);
  t.is(keys[1], keys[0]);
  t.is(seen[1]?.body, seen[0]?.body);
  t.is(seen[0]?.headers.authorization, 'Bearer svc_test_x');
  t.is(seen[0]?.url, `/v1/orgs/${ORG}/jobs`);
});

test('an Idempotency-Key given is sent as given', async (t) => {
  const { url, seen } = await server(t, (_req, _n, res) => json(res, 201, { job: job('j2') }));
  const spool = new Spool({ apiKey: 'svc_test_x', baseUrl: url, org: ORG });
  await spool.jobs.create(
    { printer_id: ORG, content: { type: 'text', data: 'x' } },
    { idempotencyKey: 'order-1042' },
  );
  t.is(seen[0]?.headers['idempotency-key'], 'order-1042');
});

test('a 429 asking for a longer wait than allowed is handed over as RateLimitedError at once', async (t) => {
  const { url, seen } = await server(t, (_req, _n, res) =>
    json(res, 429, envelope('rate_limited', 'the daily test limit of 200 jobs is reached'), {
      'retry-after': '3600',
    }),
  );
  const spool = new Spool({ apiKey: 'svc_test_x', baseUrl: url, org: ORG });
  const err = await t.throwsAsync(
    spool.jobs.create({ printer_id: ORG, content: { type: 'text', data: 'x' } }),
    { instanceOf: RateLimitedError },
  );
  t.is(err?.status, 429);
  t.is(err?.retryAfter, 3600);
  t.is(seen.length, 1);
});

test('retries are bounded: the last 503 is thrown as UnavailableError', async (t) => {
  const { url, seen } = await server(t, (_req, _n, res) =>
    json(res, 503, envelope('unavailable', 'down'), { 'retry-after': '0' }),
  );
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG, retry: { maxRetries: 2 } });
  const err = await t.throwsAsync(spool.jobs.list());
  t.true(isSpoolApiError(err, 'unavailable'));
  t.is(seen.length, 3);
});

test('a create answered 504 (its first try may be done) is sent again with the same Idempotency-Key', async (t) => {
  const { url, seen } = await server(t, (_req, n, res) =>
    n === 1
      ? json(res, 504, envelope('timeout', 'the jobs service did not answer in time'), {
          'retry-after': '0',
        })
      : json(res, 201, { job: job('j4') }, { 'idempotent-replayed': 'true' }),
  );
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG });
  const created = await spool.jobs.create({
    printer_id: ORG,
    content: { type: 'text', data: 'x' },
  });
  t.is(created.id, 'j4');
  t.is(seen.length, 2);
  t.is(seen[1]?.headers['idempotency-key'], seen[0]?.headers['idempotency-key']);
});

test('a change without an Idempotency-Key answered 504 is thrown as ServiceTimeoutError, not sent again', async (t) => {
  const { url, seen } = await server(t, (_req, _n, res) =>
    json(res, 504, envelope('timeout', 'the jobs service did not answer in time'), {
      'retry-after': '0',
    }),
  );
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG });
  const err = await t.throwsAsync(spool.pools.update(ORG, { name: 'front desk' }), {
    instanceOf: ServiceTimeoutError,
  });
  t.is(err?.status, 504);
  t.is(err?.retryAfter, 0);
  t.is(seen.length, 1);
  t.is(seen[0]?.method, 'PATCH');
});

test('a GET whose connection breaks before an answer is sent again', async (t) => {
  const { url, seen } = await server(t, (_req, n, res) => {
    if (n === 1) {
      res.socket?.destroy();
      return;
    }
    json(res, 200, { job: job('j3'), events: [] });
  });
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG, retry: { baseDelayMs: 10 } });
  const answer = await spool.jobs.get('j3');
  t.is(answer.job.id, 'j3');
  t.is(seen.length, 2);
});

test('a webhook create whose answer was lost, retried, throws SecretNotShownError rather than an endpoint without its secret', async (t) => {
  const endpoint = { id: 'e1', url: 'https://hooks.example.com/spool', events: ['*'] };
  const { url, seen } = await server(t, (_req, n, res) => {
    // The first try is done by Spool, but its answer never arrives; the retry is played back.
    if (n === 1) {
      res.socket?.destroy();
      return;
    }
    json(res, 201, { endpoint }, { 'idempotent-replayed': 'true' });
  });
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG, retry: { baseDelayMs: 10 } });
  const err = await t.throwsAsync(
    spool.api.POST('/v1/orgs/{org}/webhooks', {
      params: { path: { org: ORG } },
      body: { url: endpoint.url, events: ['*'] },
    }),
    { instanceOf: SecretNotShownError },
  );
  t.is(err?.endpoint.id, 'e1');
  t.regex(err?.message ?? '', /rotate it \(POST \/v1\/orgs\/\{org\}\/webhooks\/e1\/rotate\)/);
  t.is(seen.length, 2);
  t.is(seen[1]?.headers['idempotency-key'], seen[0]?.headers['idempotency-key']);
});

test('nothing listening is a SpoolConnectionError naming the address', async (t) => {
  // A port that was free a moment ago: nothing listens there now.
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  const closed = `http://127.0.0.1:${port}`;
  const spool = new Spool({ apiKey: 'k', baseUrl: closed, org: ORG, retry: { maxRetries: 0 } });
  const err = await t.throwsAsync(spool.jobs.list(), { instanceOf: SpoolConnectionError });
  t.regex(err?.message ?? '', new RegExp(`could not reach Spool at ${closed} \\(ECONNREFUSED\\)`));
});

test('an error answer becomes the typed error of its code, carrying the envelope', async (t) => {
  const { url, seen } = await server(t, (req, _n, res) =>
    req.url.endsWith('/cancel')
      ? json(res, 404, envelope('not_found', 'no job j9'), { 'request-id': 'req-1' })
      : json(
          res,
          400,
          envelope('invalid', 'copies must be from 1 to 999', { param: 'options.copies' }),
        ),
  );
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG });
  const invalid = await t.throwsAsync(
    spool.jobs.create({
      printer_id: ORG,
      content: { type: 'text', data: 'x' },
      options: { copies: 0 },
    }),
    { instanceOf: InvalidError },
  );
  t.is(invalid?.status, 400);
  t.is(invalid?.code, 'invalid');
  t.is(invalid?.param, 'options.copies');
  t.is(invalid?.requestId, 'req-1');
  t.is(invalid?.message, 'copies must be from 1 to 999');
  t.is(invalid?.name, 'InvalidError');
  t.deepEqual(invalid?.envelope.error.param, 'options.copies');
  const missing = await t.throwsAsync(spool.jobs.cancel('j9'), { instanceOf: NotFoundError });
  t.true(isSpoolApiError(missing, 'not_found'));
  t.false(isSpoolApiError(missing, 'conflict'));
  // A 400 is not retried.
  t.is(seen.length, 2);
});

test('an answer without an envelope (a proxy) still becomes a typed error', async (t) => {
  const { url } = await server(t, (_req, _n, res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<h1>Not Found</h1>');
  });
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG });
  const err = await t.throwsAsync(spool.key(), { instanceOf: NotFoundError });
  t.regex(err?.message ?? '', /^HTTP 404: <h1>Not Found/);
});

test('every code of the error catalogue has its error class', (t) => {
  for (const code of Object.keys(ERROR_CATALOGUE)) {
    t.true(Object.hasOwn(API_ERROR_CLASSES, code), code);
  }
});

test('iterate walks every page by cursor, with the filters on each page', async (t) => {
  const pages: Record<string, { items: unknown[]; next_cursor: string }> = {
    '': { items: [job('a'), job('b')], next_cursor: 'c1' },
    c1: { items: [job('c'), job('d')], next_cursor: 'c2' },
    c2: { items: [job('e')], next_cursor: '' },
  };
  const { url, seen } = await server(t, (req, _n, res) => {
    const q = new URL(req.url, 'http://x').searchParams;
    json(res, 200, { ...pages[q.get('cursor') ?? ''], counts: { queued: 5 } });
  });
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG });
  const ids: string[] = [];
  for await (const j of spool.jobs.iterate({ status: 'queued', limit: 2 })) ids.push(j.id);
  t.deepEqual(ids, ['a', 'b', 'c', 'd', 'e']);
  t.is(seen.length, 3);
  for (const s of seen) {
    const q = new URL(s.url, 'http://x').searchParams;
    t.is(q.get('status'), 'queued');
    t.is(q.get('limit'), '2');
  }
  // Breaking out early fetches no further page.
  for await (const j of spool.jobs.iterate()) {
    t.is(j.id, 'a');
    break;
  }
  t.is(seen.length, 4);
});

test('the organization is asked of GET /v1/key once when not given', async (t) => {
  const { url, seen } = await server(t, (req, _n, res) =>
    req.url === '/v1/key'
      ? json(res, 200, { id: 'k1', org_id: ORG, org_name: 'Acme', live: false, scopes: [] })
      : json(res, 200, { locations: [], next_cursor: '' }),
  );
  const spool = new Spool({ apiKey: 'k', baseUrl: url });
  await spool.locations.list();
  await spool.locations.list();
  t.deepEqual(
    seen.map((s) => s.url),
    ['/v1/key', `/v1/orgs/${ORG}/locations`, `/v1/orgs/${ORG}/locations`],
  );
});

test('waitForJob rejects with the job once it failed, and times out with the job as last seen', async (t) => {
  let polls = 0;
  const { url } = await server(t, (req, _n, res) => {
    // w1 is queued at the first poll and failed from the second on; w2 stays queued.
    const now = req.url.endsWith('/w1') && ++polls > 1 ? 'failed' : 'queued';
    const detail = now === 'failed' ? 'paper jam' : '';
    json(res, 200, { job: { ...job(req.url.slice(-2), now), status_detail: detail }, events: [] });
  });
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG, poll: { intervalMs: 20 } });
  const seen: string[] = [];
  const failed = await t.throwsAsync(
    spool.waitForJob('w1', { onChange: (j) => seen.push(j.status) }),
    { instanceOf: JobNotPrintedError },
  );
  t.is(failed?.job.status, 'failed');
  t.is(failed?.message, 'job w1 is failed (paper jam), not printed');
  t.deepEqual(seen, ['queued', 'failed']);
  const timedOut = await t.throwsAsync(spool.waitForJob('w2', { timeoutMs: 500 }), {
    instanceOf: WaitTimeoutError,
  });
  t.is(timedOut?.job?.status, 'queued');
  t.is(timedOut?.message, 'job w2 is still queued after 500 ms');
  // Whole seconds, as the CLI's --timeout takes them, read as seconds.
  t.is(new WaitTimeoutError('w3', 3000, undefined).message, 'job w3 is still unknown after 3 s');
  // A caller who stops waiting gets their own reason back.
  const stop = new AbortController();
  const waiting = spool.waitForJob('w2', { signal: stop.signal });
  stop.abort(new Error('the order was cancelled'));
  await t.throwsAsync(waiting, { message: 'the order was cancelled' });
  // An Idempotency-Key HTTP cannot carry is said plainly, before anything is sent.
  await t.throwsAsync(
    spool.jobs.create(
      { printer_id: ORG, content: { type: 'text', data: 'x' } },
      {
        idempotencyKey: 'ключ',
      },
    ),
    {
      instanceOf: TypeError,
      message: 'idempotencyKey must be 1 to 255 visible ASCII characters, not "ключ"',
    },
  );
  // A caller without the types who asks for a state there is no waiting for is told so.
  await t.throwsAsync(spool.waitForJob('w2', { until: 'done' as 'finished' }), {
    instanceOf: TypeError,
    message: 'until must be one of printed, sent, finished, not "done"',
  });
});

test(`${SCHEMA_PATH} is what npm run gen:client makes from the OpenAPI document (run it after changing the API)`, async (t) => {
  const committed = await readFile(join(import.meta.dirname, '..', SCHEMA_PATH), 'utf8');
  t.is(committed, await generateSchema(), `${SCHEMA_PATH} is stale: run npm run gen:client`);
});

test('waitForJob and jobs.watch report a change of detail while the status stays, such as a printer that went off', async (t) => {
  // What each poll of the job answers, the last repeated.
  const states: Array<[string, string]> = [
    ['queued', ''],
    ['sent', ''],
    ['sent', ''],
    ['sent', 'waiting: printer "labels" is offline (ECONNREFUSED)'],
    ['sent', 'waiting: printer "labels" is offline (ECONNREFUSED)'],
    ['sent', ''],
    ['printed', ''],
  ];
  const polls = new Map<string, number>();
  const { url } = await server(t, (req, _n, res) => {
    const id = req.url.slice(-2);
    const n = polls.get(id) ?? 0;
    polls.set(id, n + 1);
    const [status, detail] = states[Math.min(n, states.length - 1)] ?? ['printed', ''];
    json(res, 200, { job: { ...job(id, status), status_detail: detail }, events: [] });
  });
  const spool = new Spool({ apiKey: 'k', baseUrl: url, org: ORG, poll: { intervalMs: 5 } });
  const expected = [
    'queued ',
    'sent ',
    'sent waiting: printer "labels" is offline (ECONNREFUSED)',
    'sent ',
    'printed ',
  ];
  const seen: string[] = [];
  await spool.waitForJob('w1', { onChange: (j) => seen.push(`${j.status} ${j.status_detail}`) });
  t.deepEqual(seen, expected);
  const watched: string[] = [];
  for await (const j of spool.jobs.watch('w2')) watched.push(`${j.status} ${j.status_detail}`);
  t.deepEqual(watched, expected);
});
