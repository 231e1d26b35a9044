/**
 * Usage per organization and UTC day on a running Spool (DESIGN §5, docs/platforms.md): jobs
 * created, printed and failed over two days counted on the days they happened, pages of PDFs
 * times their copies, bytes, webhook deliveries, a failed job retried, the figures against a count
 * made straight from the database, the rollups run twice and by two replicas at once, the query's
 * bounds, a parent's children, and a document deleted by retention before it was counted. The
 * clock is the test's: the rollups run when the test calls them.
 */
import { createHash } from 'node:crypto';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import type pg from 'pg';
import { Spool } from '../client/index.js';
import { connectBus } from '../lib/bus.js';
import { ManualClock } from '../lib/clock.js';
import { SCOPES } from '../lib/credentials.js';
import { createPool } from '../lib/db.js';
import { openDocuments } from '../lib/documents.js';
import { silentLogger } from '../lib/logger.js';
import type { RollupRound } from '../lib/rollup.js';
import { createPageCounter } from '../services/jobs/page-counts.js';
import { createUsageRollup } from '../services/jobs/usage-rollup.js';
import { createUsageStore } from '../services/jobs/usage-store.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import { runSpool } from './helpers/spool.js';
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

const test = anyTest as TestFn<Ctx>;

interface Org {
  id: string;
  key: string;
  link: LinkClient;
  printerId: string;
}

interface Ctx {
  sys: TestSystem;
  db: pg.Pool;
  receiver: Receiver;
  org: Org;
  /** Job ids by the name the tests give them. */
  jobs: Map<string, string>;
}

interface UsageItem {
  date: string;
  org_id: string;
  jobs_created: number;
  jobs_printed: number;
  jobs_failed: number;
  pages: number;
  bytes: number;
  webhook_deliveries: number;
}

interface ErrorBody {
  error: { code: string; message: string; param?: string };
}

const D1 = '2026-03-10';
const D2 = '2026-03-11';
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A valid PDF of `pages` pages. */
function pdfOfPages(pages: number): Buffer {
  const kids = Array.from({ length: pages }, (_, i) => `${3 + i} 0 R`).join(' ');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`,
    ...Array.from(
      { length: pages },
      () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>',
    ),
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

async function newOrg(sys: TestSystem, name: string, receiver?: Receiver): Promise<Org> {
  const id = await createOrg(sys.url, name);
  const { secret: key } = await createKey(sys.url, id, { scopes: [...SCOPES] });
  const station = await createStation(sys.url, id);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  if (receiver) {
    const res = await call(sys.url, 'POST', `/v1/orgs/${id}/webhooks`, {
      token: key,
      body: { url: receiver.url, events: ['job.created', 'job.printed', 'job.failed'] },
    });
    if (res.status !== 201) throw new Error(`create endpoint answered ${res.status}`);
  }
  return { id, key, link, printerId: link.welcome.printerIds.front as string };
}

test.before(async (t) => {
  const sys = await startTestSystem({ clock: new ManualClock(`${D1}T23:40:00Z`) });
  // The rollups run when a test says, not on their timers.
  await sys.system.usage.stop();
  await sys.system.webhooks.usage.stop();
  const receiver = await startReceiver();
  const org = await newOrg(sys, 'Usage Print', receiver);
  t.context = {
    sys,
    db: createPool({ url: sys.db.url }),
    receiver,
    org,
    jobs: new Map(),
  };
});

test.after.always(async (t) => {
  t.context.org?.link.close();
  await t.context.db?.end();
  await t.context.receiver?.close();
  await t.context.sys?.stop();
});

async function createJob(
  t: { context: Ctx },
  name: string,
  content: Record<string, unknown>,
  options?: Record<string, unknown>,
  org = t.context.org,
): Promise<string> {
  const res = await call<{ job: { id: string } }>(
    t.context.sys.url,
    'POST',
    `/v1/orgs/${org.id}/jobs`,
    {
      token: org.key,
      body: { printer_id: org.printerId, content, ...(options ? { options } : {}) },
    },
  );
  if (res.status !== 201) throw new Error(`create job answered ${res.status}`);
  t.context.jobs.set(name, res.body.job.id);
  await org.link.until(() => org.link.jobs.some((j) => j.offer.jobId === res.body.job.id));
  return res.body.job.id;
}

const pdf = (pages: number) => ({
  type: 'pdf_base64',
  data: pdfOfPages(pages).toString('base64'),
});

async function finish(
  t: { context: Ctx },
  name: string,
  printed: boolean,
  attempt = 1,
  org = t.context.org,
): Promise<void> {
  const jobId = t.context.jobs.get(name) as string;
  org.link.send({ result: { jobId, attempt, printed, detail: printed ? '' : 'paper jam' } });
  await eventually(
    () =>
      call<{ job: { status: string } }>(
        t.context.sys.url,
        'GET',
        `/v1/orgs/${org.id}/jobs/${jobId}`,
        {
          token: org.key,
        },
      ),
    (res) => res.body.job.status === (printed ? 'printed' : 'failed'),
  );
}

/** Waits until the receiver has `n` requests and the worker has recorded them. */
async function delivered(t: { context: Ctx }, n: number): Promise<void> {
  await t.context.receiver.until((r) => r.length >= n);
  await eventually(
    async () =>
      Number(
        (
          await t.context.db.query<{ n: string }>(
            "SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'succeeded'",
          )
        ).rows[0]?.n,
      ),
    (recorded) => recorded >= n,
  );
}

/** Runs a rollup until it has nothing left to count. */
async function drain(rollup: { runOnce(): Promise<RollupRound> }): Promise<void> {
  for (let round = await rollup.runOnce(); round.windows > 0; round = await rollup.runOnce()) {}
}

/** Lets the last writes settle (two minutes on the clock), then rolls up jobs and deliveries. */
async function rollUp(t: { context: Ctx }): Promise<void> {
  t.context.sys.clock.advance(2 * MINUTE);
  await drain(t.context.sys.system.usage);
  await drain(t.context.sys.system.webhooks.usage);
}

function usage<T = { items: UsageItem[] }>(
  t: { context: Ctx },
  query: string,
  org: { id: string; key: string } = t.context.org,
) {
  return call<T>(t.context.sys.url, 'GET', `/v1/orgs/${org.id}/usage${query}`, {
    token: org.key,
  });
}

const figures = (item: UsageItem | undefined) => {
  if (!item) return undefined;
  const { date: _date, org_id: _org, ...rest } = item;
  return rest;
};

/** The figures of `orgIds` counted straight from the jobs and the delivery log, by day. */
async function countedInDatabase(
  db: pg.Pool,
  orgIds: string[],
): Promise<Map<string, Omit<UsageItem, 'date' | 'org_id'>>> {
  const { rows } = await db.query<{
    org_id: string;
    day: string;
    created: string;
    bytes: string;
    printed: string;
    failed: string;
    pages: string;
    deliveries: string;
  }>(
    `WITH figures AS (
       SELECT org_id, (created_at AT TIME ZONE 'UTC')::DATE AS day, count(*) AS created,
         sum(size) AS bytes, 0 AS printed, 0 AS failed, 0 AS pages, 0 AS deliveries
       FROM jobs GROUP BY 1, 2
       UNION ALL
       SELECT org_id, (finished_at AT TIME ZONE 'UTC')::DATE, 0, 0,
         count(*) FILTER (WHERE status = 'printed'), count(*) FILTER (WHERE status = 'failed'),
         COALESCE(sum(pages * GREATEST(COALESCE((options->>'copies')::INT, 1), 1))
           FILTER (WHERE status = 'printed' AND content_type = 'application/pdf'), 0),
         0
       FROM jobs WHERE status IN ('printed', 'failed') GROUP BY 1, 2
       UNION ALL
       SELECT org_id, (finished_at AT TIME ZONE 'UTC')::DATE, 0, 0, 0, 0, 0, count(*)
       FROM webhook_deliveries WHERE state = 'succeeded' AND event_type <> 'ping' GROUP BY 1, 2
     )
     SELECT org_id, day::TEXT AS day, sum(created) AS created, sum(bytes) AS bytes,
       sum(printed) AS printed, sum(failed) AS failed, sum(pages) AS pages,
       sum(deliveries) AS deliveries
     FROM figures WHERE org_id = ANY($1::UUID[]) GROUP BY 1, 2`,
    [orgIds],
  );
  return new Map(
    rows.map((r) => [
      `${r.day}/${r.org_id}`,
      {
        jobs_created: Number(r.created),
        jobs_printed: Number(r.printed),
        jobs_failed: Number(r.failed),
        pages: Number(r.pages),
        bytes: Number(r.bytes),
        webhook_deliveries: Number(r.deliveries),
      },
    ]),
  );
}

const NONE = {
  jobs_created: 0,
  jobs_printed: 0,
  jobs_failed: 0,
  pages: 0,
  bytes: 0,
  webhook_deliveries: 0,
};

/** Asserts every item of the answer holds what the database counts for its day. */
async function matchesDatabase(
  t: ExecutionContext<Ctx>,
  items: UsageItem[],
  orgIds: string[],
): Promise<void> {
  const counted = await countedInDatabase(t.context.db, orgIds);
  for (const item of items) {
    t.deepEqual(
      figures(item),
      counted.get(`${item.date}/${item.org_id}`) ?? NONE,
      `${item.date} ${item.org_id}`,
    );
  }
}

async function sizeOf(t: { context: Ctx }, name: string): Promise<number> {
  const { rows } = await t.context.db.query<{ size: string }>(
    'SELECT size FROM jobs WHERE id = $1',
    [t.context.jobs.get(name)],
  );
  return Number(rows[0]?.size);
}

test.serial(
  'jobs created, printed and failed over two UTC days count on the days they happened, with pages, bytes and deliveries',
  async (t) => {
    const { sys } = t.context;
    // Day 1: a 3-page PDF twice over, a text, and a 1-page PDF that fails.
    await createJob(t, 'pdf3', pdf(3), { copies: 2 });
    await createJob(t, 'text', { type: 'text', data: 'hello' });
    await createJob(t, 'pdf1', pdf(1));
    await finish(t, 'pdf3', true);
    await finish(t, 'pdf1', false);
    await delivered(t, 5);
    // Day 2: the text created on day 1 prints, and a new job is created.
    sys.clock.set(`${D2}T00:05:00Z`);
    await finish(t, 'text', true);
    await createJob(t, 'later', { type: 'text', data: 'the next day' });
    await delivered(t, 7);
    await rollUp(t);

    const res = await usage(t, `?from=${D1}&to=${D2}`);
    t.is(res.status, 200);
    const { id } = t.context.org;
    t.deepEqual(
      res.body.items.map((i) => [i.date, i.org_id]),
      [
        [D1, id],
        [D2, id],
      ],
    );
    t.deepEqual(figures(res.body.items[0]), {
      jobs_created: 3,
      jobs_printed: 1,
      jobs_failed: 1,
      pages: 6,
      bytes: (await sizeOf(t, 'pdf3')) + (await sizeOf(t, 'text')) + (await sizeOf(t, 'pdf1')),
      webhook_deliveries: 5,
    });
    t.deepEqual(figures(res.body.items[1]), {
      jobs_created: 1,
      jobs_printed: 1,
      jobs_failed: 0,
      pages: 0,
      bytes: await sizeOf(t, 'later'),
      webhook_deliveries: 2,
    });
    await matchesDatabase(t, res.body.items, [id]);
  },
);

test.serial(
  'a failed job retried leaves the day it failed on, and counts on the day it prints',
  async (t) => {
    const { sys, org } = t.context;
    sys.clock.set(`${D2}T01:00:00Z`);
    const jobId = t.context.jobs.get('pdf1') as string;
    const retried = await call(sys.url, 'POST', `/v1/orgs/${org.id}/jobs/${jobId}/retry`, {
      token: org.key,
    });
    t.is(retried.status, 200);
    await org.link.until(() => org.link.jobs.filter((j) => j.offer.jobId === jobId).length === 2);
    await rollUp(t);
    let res = await usage(t, `?from=${D1}&to=${D2}`);
    t.is(res.body.items[0]?.jobs_failed, 0, 'no longer failed on day 1');
    await matchesDatabase(t, res.body.items, [org.id]);

    await finish(t, 'pdf1', true, 2);
    await delivered(t, 8);
    await rollUp(t);
    res = await usage(t, `?from=${D1}&to=${D2}`);
    t.like(res.body.items[1], { jobs_printed: 2, jobs_failed: 0, pages: 1, webhook_deliveries: 3 });
    await matchesDatabase(t, res.body.items, [org.id]);
  },
);

test.serial('rolling up again, or by two replicas at once, changes nothing', async (t) => {
  const { sys, db, org } = t.context;
  const snapshot = async () =>
    (await db.query('SELECT * FROM usage_days ORDER BY org_id, day')).rows;
  const before = await snapshot();
  await drain(sys.system.usage);
  await drain(sys.system.usage);
  t.deepEqual(await snapshot(), before);

  // A second replica's rollup over the same database, running at the same time as the first.
  const pool = createPool({ url: sys.db.url });
  const nc = await connectBus({ url: sys.nats.url, name: 'second-rollup', logger: silentLogger });
  t.teardown(async () => {
    await nc.close();
    await pool.end();
  });
  const second = createUsageRollup({
    pool,
    store: createUsageStore(pool),
    documents: await openDocuments(nc),
    pages: createPageCounter(silentLogger),
    clock: sys.clock,
    logger: silentLogger,
  });
  sys.clock.set(`${D2}T02:00:00Z`);
  for (let i = 0; i < 5; i++) {
    await createJob(t, `twice${i}`, pdf(2), { copies: 3 });
    await finish(t, `twice${i}`, true);
  }
  await delivered(t, 18);
  sys.clock.advance(2 * MINUTE);
  const rounds = await Promise.all([sys.system.usage.runOnce(), second.runOnce()]);
  await Promise.all([drain(sys.system.usage), drain(second), drain(sys.system.webhooks.usage)]);
  t.true(rounds.some((r) => r.windows > 0));
  const res = await usage(t, `?from=${D2}&to=${D2}`);
  t.like(res.body.items[0], { jobs_created: 6, jobs_printed: 7, pages: 1 + 5 * 6 });
  await matchesDatabase(t, res.body.items, [org.id]);
  const after = await snapshot();
  await Promise.all([drain(sys.system.usage), drain(second)]);
  t.deepEqual(await snapshot(), after);
});

test.serial('the range is checked: real dates, from before to, at most 366 days', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['?from=2026-02-30', 'invalid', 'from'],
    ['?to=yesterday', 'invalid', 'to'],
    [`?from=${D2}&to=${D1}`, 'invalid', 'from'],
    ['?from=2025-01-01&to=2026-01-02', 'invalid', 'from'],
    ['?children=yes', 'invalid', 'children'],
    ['?from=2026-01-01&from=2026-01-02', 'invalid', 'from'],
    ['?day=2026-01-01', 'unknown_field', 'day'],
  ];
  for (const [query, code, param] of cases) {
    const res = await usage<ErrorBody>(t, query);
    t.is(res.status, 400, query);
    t.like(res.body.error, { code, param }, query);
  }
  const year = await usage(t, '?from=2025-01-01&to=2026-01-01');
  t.is(year.status, 200);
  t.is(year.body.items.length, 366);
  // By default: the last 30 days, today (on the clock) included, every one answered.
  const recent = await usage(t, '');
  t.is(recent.body.items.length, 30);
  t.is(recent.body.items.at(-1)?.date, t.context.sys.clock.now().toISOString().slice(0, 10));
  t.deepEqual(figures(recent.body.items[0]), NONE);
});

test.serial('a key without jobs:read is refused', async (t) => {
  const { sys, org } = t.context;
  const { secret } = await createKey(sys.url, org.id, { scopes: ['printers:read'] });
  const res = await usage<ErrorBody>(t, '', { id: org.id, key: secret });
  t.is(res.status, 403);
  t.is(res.body.error.code, 'forbidden');
});

test.serial(
  "with children=true a parent sees each child's days too, and a child sees only its own",
  async (t) => {
    const { sys } = t.context;
    sys.clock.set(`${D2}T03:00:00Z`);
    const parent = t.context.org;
    const childIds: string[] = [];
    for (const name of ['Corner Bakery', 'Night Owl']) {
      sys.clock.advance(1_000);
      const res = await call<{ org: { id: string } }>(
        sys.url,
        'POST',
        `/v1/orgs/${parent.id}/children`,
        { token: parent.key, body: { name } },
      );
      t.is(res.status, 201);
      childIds.push(res.body.org.id);
    }
    const [bakeryId, owlId] = childIds as [string, string];
    // The bakery prints a 2-page PDF; the night owl does nothing.
    const { secret: bakeryKey } = await createKey(sys.url, bakeryId, { scopes: [...SCOPES] });
    const station = await createStation(sys.url, bakeryId);
    const link = await connectLink(sys.linkAddress, station.token, [printer('oven')]);
    t.teardown(() => link.close());
    const bakery: Org = {
      id: bakeryId,
      key: bakeryKey,
      link,
      printerId: link.welcome.printerIds.oven as string,
    };
    await createJob(t, 'bread', pdf(2), undefined, bakery);
    await finish(t, 'bread', true, 1, bakery);
    await rollUp(t);

    const res = await usage(t, `?from=${D1}&to=${D2}&children=true`);
    t.is(res.status, 200);
    t.deepEqual(
      res.body.items.map((i) => [i.date, i.org_id]),
      [D1, D2].flatMap((d) => [parent.id, bakeryId, owlId].map((o) => [d, o])),
    );
    const bread = res.body.items.find((i) => i.date === D2 && i.org_id === bakeryId);
    t.like(bread, { jobs_created: 1, jobs_printed: 1, pages: 2 });
    t.deepEqual(figures(res.body.items.find((i) => i.org_id === owlId && i.date === D2)), NONE);
    await matchesDatabase(t, res.body.items, [parent.id, ...childIds]);

    // The client asks the same.
    const spool = new Spool({ apiKey: parent.key, baseUrl: sys.url });
    t.deepEqual(await spool.usage({ from: D1, to: D2, children: true }), res.body.items);
    t.is((await spool.usage()).length, 30);
    // And the command line.
    const env = { SPOOL_API_KEY: parent.key, SPOOL_URL: sys.url };
    const cli = await runSpool(['usage', '--from', D1, '--to', D2, '--children'], env);
    t.is(cli.code, 0, cli.stderr);
    t.deepEqual(JSON.parse(cli.stdout), { items: res.body.items });
    const table = await runSpool(['usage', '--from', D2, '--to', D2, '--format', 'table'], env);
    t.regex(
      table.stdout,
      /DATE +ORG +CREATED +PRINTED +FAILED +PAGES +BYTES +DELIVERIES\n2026-03-11 /,
    );
    const bad = await runSpool(['usage', '--from', 'last-week'], env);
    t.is(bad.code, 1);
    t.like((JSON.parse(bad.stderr) as ErrorBody).error, { code: 'invalid', param: 'from' });

    const alone = await usage(t, `?from=${D1}&to=${D2}`);
    t.deepEqual(
      alone.body.items.map((i) => i.org_id),
      [parent.id, parent.id],
    );
    // The child's own key: its own days, even with children=true; its parent's id is unknown.
    const own = await usage(t, `?from=${D2}&to=${D2}&children=true`, bakery);
    t.deepEqual(
      own.body.items.map((i) => i.org_id),
      [bakeryId],
    );
    const upward = await usage<ErrorBody>(t, '', { id: parent.id, key: bakeryKey });
    t.is(upward.status, 404);
    // The parent's key on the child's own route.
    const down = await usage(t, `?from=${D2}&to=${D2}`, { id: bakeryId, key: parent.key });
    t.like(down.body.items[0], { org_id: bakeryId, jobs_printed: 1 });
  },
);

test.serial(
  'a PDF whose document retention deleted before the rollup counted it counts 0 pages',
  async (t) => {
    const { sys, org, db } = t.context;
    sys.clock.set(`${D2}T04:00:00Z`);
    await createJob(t, 'shortlived', pdf(5));
    await finish(t, 'shortlived', true);
    await delivered(t, 20);
    const settings = await call(sys.url, 'PATCH', '/admin/v1/settings', {
      token: OPERATOR_TOKEN,
      body: { job_document_retention_days: 1 },
    });
    t.is(settings.status, 200);
    sys.clock.advance(2 * DAY);
    t.true((await sys.system.sweeper.runOnce()).documentsDeleted >= 1);
    await rollUp(t);
    const res = await usage(t, `?from=${D2}&to=${D2}`);
    t.like(res.body.items[0], { jobs_printed: 8, pages: 1 + 5 * 6 });
    const { rows } = await db.query('SELECT pages FROM jobs WHERE id = $1', [
      t.context.jobs.get('shortlived'),
    ]);
    t.deepEqual(rows, [{ pages: 0 }]);
    await matchesDatabase(t, res.body.items, [org.id]);
    // The days counted meanwhile: nothing happened, and every one answers zeros.
    const since = await usage(t, `?from=${D2}&to=2026-03-13`);
    t.deepEqual(since.body.items.slice(1).map(figures), [NONE, NONE]);
  },
);

test.serial('the same document is read once for its pages', async (t) => {
  const counter = createPageCounter(silentLogger);
  const doc = pdfOfPages(4);
  const sha = createHash('sha256').update(doc).digest('hex');
  t.is(await counter.count(doc, sha), 4);
  // Known by its hash: the bytes are not read again.
  t.is(await counter.count(Buffer.from('not a pdf'), sha), 4);
  t.is(await counter.count(Buffer.from('not a pdf'), 'other'), 0);
});
