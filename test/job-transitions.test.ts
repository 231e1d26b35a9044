import { context, type Span, trace } from '@opentelemetry/api';
import { node } from '@opentelemetry/sdk-node';
import anyTest, { type TestFn } from 'ava';
import { SCOPES } from '../lib/credentials.js';
import { createPool, type Pool } from '../lib/db.js';
import type { OutboxRow } from '../lib/outbox.js';
import { setTracing } from '../lib/tracing.js';
import { createJobStore } from '../services/jobs/store.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Ctx {
  sys: TestSystem;
  orgId: string;
  key: string;
  link: LinkClient;
  printerId: string;
  pools: Pool[];
}

const test = anyTest as TestFn<Ctx>;

interface JobAnswer {
  job: { id: string; status: string; attempt: number; schedule_at: string | null };
  events: Array<{ status: string; detail: string }>;
}

test.before(async (t) => {
  const sys = await startTestSystem();
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  // The link reports the printer and acknowledges nothing: jobs stay queued until the test moves them.
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  t.context = {
    sys,
    orgId,
    key,
    link,
    printerId: link.welcome.printerIds.front as string,
    pools: [],
  };
});

test.after.always(async (t) => {
  t.context.link?.close();
  await Promise.all(t.context.pools?.map((p) => p.end()) ?? []);
  await t.context.sys?.stop();
});

function api(t: { context: Ctx }, method: string, path: string, body?: unknown) {
  return call<JobAnswer>(t.context.sys.url, method, `/v1/orgs/${t.context.orgId}${path}`, {
    token: t.context.key,
    ...(body === undefined ? {} : { body }),
  });
}

async function newJob(t: { context: Ctx }, extra: Record<string, unknown> = {}) {
  const res = await api(t, 'POST', '/jobs', {
    printer_id: t.context.printerId,
    content: { type: 'text', data: 'hello' },
    ...extra,
  });
  if (res.status !== 201) throw new Error(`create answered ${res.status}`);
  return res.body.job;
}

test('two jobs replicas recording changes of one job at once never collide on its event numbers', async (t) => {
  // Two stores on two pools stand for two jobs replicas reading the same REPORTS stream.
  const stores = [0, 1].map(() => {
    const pool = createPool({ url: t.context.sys.db.url, max: 4 });
    t.context.pools.push(pool);
    return createJobStore(pool, t.context.sys.clock);
  });
  const [a, b] = stores as [ReturnType<typeof createJobStore>, ReturnType<typeof createJobStore>];
  const jobs = await Promise.all(Array.from({ length: 20 }, () => newJob(t)));
  const how = { actor: 'station:test', attempt: 1 };
  const outcomes = await Promise.allSettled(
    jobs.flatMap((job) => [
      a.apply(t.context.orgId, job.id, 'received', how),
      b.apply(t.context.orgId, job.id, 'printed', how),
    ]),
  );
  const errors = outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []));
  t.deepEqual(errors, []);
  for (const job of jobs) {
    const res = await api(t, 'GET', `/jobs/${job.id}`);
    t.is(res.body.job.status, 'printed');
    const statuses = res.body.events.map((e) => e.status);
    t.is(statuses[0], 'queued');
    t.is(statuses.at(-1), 'printed');
  }
});

test('cancelling a scheduled job keeps the time it was scheduled for', async (t) => {
  const at = new Date(t.context.sys.clock.now().getTime() + 3_600_000).toISOString();
  const job = await newJob(t, { schedule_at: at });
  t.is(job.status, 'scheduled');
  const cancelled = await api(t, 'POST', `/jobs/${job.id}/cancel`, {});
  t.is(cancelled.body.job.status, 'cancelled');
  t.is(cancelled.body.job.schedule_at, job.schedule_at);
  t.is((await api(t, 'GET', `/jobs/${job.id}`)).body.job.schedule_at, job.schedule_at);
});

test('releasing a held job is its first attempt; retrying a failed one is its second', async (t) => {
  const job = await newJob(t, { hold: true });
  t.is(job.attempt, 1);
  const released = await api(t, 'POST', `/jobs/${job.id}/retry`, {});
  t.is(released.body.job.status, 'queued');
  t.is(released.body.job.attempt, 1);
  const store = createJobStore(t.context.sys.system.pool, t.context.sys.clock);
  await store.apply(t.context.orgId, job.id, 'failed', {
    actor: 'station:test',
    detail: 'out of paper',
    attempt: 1,
  });
  const retried = await api(t, 'POST', `/jobs/${job.id}/retry`, {});
  t.is(retried.body.job.attempt, 2);
});

test.serial(
  'each report committed in a group has its messages continue its own trace',
  async (t) => {
    // A station's `received` and another's `result` in one group: the `job.printed` webhook must
    // descend from the print that caused it, not from whichever report the group went with.
    const provider = new node.NodeTracerProvider();
    provider.register();
    setTracing(true);
    t.teardown(async () => {
      setTracing(false);
      await provider.shutdown();
    });
    const rows: OutboxRow[] = [];
    const store = createJobStore(t.context.sys.system.pool, t.context.sys.clock, {
      onCommit: (committed) => rows.push(...committed),
    });
    const jobs = [await newJob(t), await newJob(t)];
    const tracer = trace.getTracer('test');
    const spans = jobs.map((job) => tracer.startSpan(`report of ${job.id}`));
    const how = { actor: 'station:test', attempt: 1 };
    // Submitted in one turn, so they commit as one group, in the first one's context.
    await Promise.all(
      jobs.map((job, i) =>
        context.with(trace.setSpan(context.active(), spans[i] as Span), () =>
          store.apply(t.context.orgId, job.id, 'printed', how),
        ),
      ),
    );
    for (const span of spans) span.end();
    jobs.forEach((job, i) => {
      const mine = rows.filter((r) => r.payload.toString().includes(job.id));
      t.true(mine.length > 0, `job ${i} committed messages`);
      const traceId = spans[i]?.spanContext().traceId as string;
      for (const row of mine) t.regex(row.headers.traceparent ?? '', new RegExp(`^00-${traceId}-`));
    });
  },
);
