/**
 * What a station's agent sends is checked before it is stored or published: a station (a bug, or
 * someone holding its token) can neither move another station's jobs, nor stall the reports of
 * others with one that can never apply, nor store text the database refuses.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import anyTest, { type TestFn } from 'ava';
import { SCOPES } from '../lib/credentials.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Ctx {
  sys: TestSystem;
  orgId: string;
  key: string;
}
const test = anyTest as TestFn<Ctx>;

interface PrinterView {
  id: string;
  name: string;
  status: string;
  detail: string;
  capabilities: { paper_sizes: string[] };
}
interface JobView {
  job: {
    id: string;
    status: string;
    status_detail: string;
    confirmation: { level: string; pages: number | null } | null;
  };
  events: Array<{ status: string; actor: string; confirmation?: unknown }>;
}

test.before(async (t) => {
  const sys = await startTestSystem();
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, { scopes: SCOPES });
  t.context = { sys, orgId, key: secret };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

async function station(t: { context: Ctx }, printers = [printer('front')]) {
  const { id, token } = await createStation(t.context.sys.url, t.context.orgId);
  return { id, token, link: await connectLink(t.context.sys.linkAddress, token, printers) };
}

async function printersOf(t: { context: Ctx }, stationId: string): Promise<PrinterView[]> {
  const res = await call<{ printers: PrinterView[] }>(
    t.context.sys.url,
    'GET',
    `/v1/orgs/${t.context.orgId}/printers?station_id=${stationId}`,
    { token: t.context.key },
  );
  return res.body.printers;
}

/** A job for the station's printer `front`, once that link was offered it. */
async function offeredJob(t: { context: Ctx }, stationId: string, link: LinkClient) {
  const [front] = await eventually(
    () => printersOf(t, stationId),
    (found) => found.length === 1,
  );
  const created = await call<JobView>(
    t.context.sys.url,
    'POST',
    `/v1/orgs/${t.context.orgId}/jobs`,
    {
      token: t.context.key,
      body: { printer_id: front?.id, content: { type: 'text', data: 'hello' } },
    },
  );
  const id = created.body.job.id;
  await link.until(() => link.jobs.some((j) => j.offer.jobId === id));
  return id;
}

function getJob(t: { context: Ctx }, id: string) {
  return call<JobView>(t.context.sys.url, 'GET', `/v1/orgs/${t.context.orgId}/jobs/${id}`, {
    token: t.context.key,
  });
}

test('another station of the organization cannot report a job printed: only its own station can', async (t) => {
  const own = await station(t);
  const other = await station(t);
  t.teardown(() => {
    own.link.close();
    other.link.close();
  });
  const jobId = await offeredJob(t, own.id, own.link);

  other.link.send({ result: { jobId, attempt: 1, printed: true, detail: '' } });
  // Stored: the other station's report reached the jobs service, which ignores it.
  await other.link.until(() => other.link.accepted.some((a) => a.jobId === jobId));
  own.link.send({ result: { jobId, attempt: 1, printed: false, detail: 'paper jam' } });

  const failed = await eventually(
    () => getJob(t, jobId),
    (res) => res.body.job.status !== 'queued',
  );
  t.is(failed.body.job.status, 'failed');
  t.is(failed.body.job.status_detail, 'paper jam');
  t.false(
    failed.body.events.some((e) => e.actor === `station:${other.id}`),
    JSON.stringify(failed.body.events),
  );
});

test('a report naming no job id, or attempt 0, ends the link saying so', async (t) => {
  for (const [message, said] of [
    [
      { result: { jobId: "not-a-uuid'", attempt: 1, printed: true, detail: '' } },
      /result: job_id "not-a-uuid'" is not a job id/,
    ],
    [
      { received: { jobId: '6f1f1c52-94b3-4d43-9b0c-3d0e7e9c1a11', attempt: 0 } },
      /received: attempt 0 of job 6f1f1c52-94b3-4d43-9b0c-3d0e7e9c1a11 is not 1 or more/,
    ],
  ] as const) {
    const { link } = await station(t);
    t.teardown(() => link.close());
    link.send(message);
    const ended = await link.ended;
    t.is(ended?.code, GrpcStatus.INVALID_ARGUMENT);
    t.regex(ended?.details ?? '', said);
    t.deepEqual(link.accepted, [], 'nothing accepted');
  }
  const { token } = await createStation(t.context.sys.url, t.context.orgId);
  const held = connectLink(
    t.context.sys.linkAddress,
    token,
    [printer('front')],
    [{ jobId: 'x', attempt: 1 }],
  );
  const refused = await t.throwsAsync(held);
  t.regex(refused?.message ?? '', /hello: job_id "x" is not a job id/);
});

test('a failure’s detail with control characters is stored cleaned, and a long one shortened', async (t) => {
  const { id, link } = await station(t);
  t.teardown(() => link.close());
  const jobId = await offeredJob(t, id, link);
  link.send({
    result: {
      jobId,
      attempt: 1,
      printed: false,
      detail: `tray\u0000 2\nempty ${'x'.repeat(5000)}`,
    },
  });
  const failed = await eventually(
    () => getJob(t, jobId),
    (res) => res.body.job.status === 'failed',
  );
  const detail = failed.body.job.status_detail;
  t.true(detail.startsWith('tray  2 empty xxx'), detail.slice(0, 40));
  t.is(detail.length, 1000);
  t.true(detail.endsWith('…'));
});

test("a printed job carries its printer's confirmation as far as it makes sense, and a failed one none", async (t) => {
  const { id, link } = await station(t);
  t.teardown(() => link.close());
  const sent: Array<[unknown, unknown]> = [
    [
      { level: 'device_completed', pages: 3 },
      { level: 'device_completed', pages: 3 },
    ],
    // An agent from before confirmations says nothing: its printer took the job.
    [undefined, { level: 'handed_off', pages: null }],
    // A level Spool does not know is no more than handed off; a count that is none is dropped.
    [
      { level: 'stapled', pages: 2 },
      { level: 'handed_off', pages: 2 },
    ],
    [
      { level: 'device_completed', pages: 2_000_000_000 },
      { level: 'device_completed', pages: null },
    ],
  ];
  for (const [confirmation, shown] of sent) {
    const jobId = await offeredJob(t, id, link);
    link.send({
      result: { jobId, attempt: 1, printed: true, ...(confirmation ? { confirmation } : {}) },
    });
    const printed = await eventually(
      () => getJob(t, jobId),
      (res) => res.body.job.status === 'printed',
    );
    t.deepEqual(printed.body.job.confirmation, shown, JSON.stringify(confirmation));
    // The printed event of its history says the same; the others say nothing of it.
    const history = printed.body.events;
    t.deepEqual(history.find((e) => e.status === 'printed')?.confirmation, shown);
    t.true(history.filter((e) => e.status !== 'printed').every((e) => !('confirmation' in e)));
  }
  const jobId = await offeredJob(t, id, link);
  link.send({
    result: {
      jobId,
      attempt: 1,
      printed: false,
      detail: 'jam',
      confirmation: { level: 'device_completed' },
    },
  });
  const failed = await eventually(
    () => getJob(t, jobId),
    (res) => res.body.job.status === 'failed',
  );
  t.is(failed.body.job.confirmation, null);
});

test('printers: details cleaned, an unknown status read as unknown, paper sizes bounded', async (t) => {
  const odd = {
    ...printer('odd', 'on_fire', `bad\u0000news\u0007`),
    capabilities: {
      paperSizes: ['A4', '', ...Array.from({ length: 100 }, (_, i) => `size-${i}`)],
      duplex: false,
      color: false,
      copies: false,
      pageOptions: false,
      trays: [],
      documentFormats: [],
    },
  };
  const { id, link } = await station(t, [printer('front'), odd]);
  t.teardown(() => link.close());
  const printers = await eventually(
    () => printersOf(t, id),
    (found) => found.length === 2,
  );
  const stored = printers.find((p) => p.name === 'odd');
  t.is(stored?.status, 'unknown');
  t.is(stored?.detail, 'bad news ');
  t.is(stored?.capabilities.paper_sizes.length, 63);
  t.is(stored?.capabilities.paper_sizes[0], 'A4');

  // Later reports are checked as the hello's are; the link stays open for a cleaned one.
  link.send({ printers: { printers: [printer('front', 'out_of_paper', 'tray\u00001')] } });
  await eventually(
    () => printersOf(t, id),
    (found) => found.some((p) => p.name === 'front' && p.detail === 'tray 1'),
  );
});

test('printers that no agent reports (a name twice, a control character, over a thousand) end the link', async (t) => {
  for (const [printers, said] of [
    [[printer('front'), printer('front')], /printer name "front" is reported twice/],
    [[printer('tab\there')], /printer name "tab\\there" is empty, over 200 characters or has/],
    [
      Array.from({ length: 1001 }, (_, i) => printer(`p${i}`)),
      /1001 printers reported; a station may have at most 1000/,
    ],
  ] as const) {
    const { token } = await createStation(t.context.sys.url, t.context.orgId);
    const refused = await t.throwsAsync(
      connectLink(t.context.sys.linkAddress, token, [...printers]),
    );
    t.regex(refused?.message ?? '', said);
  }
  // And in a later report.
  const { link } = await station(t);
  link.send({ printers: { printers: [printer('a'), printer('a')] } });
  const ended = await link.ended;
  t.is(ended?.code, GrpcStatus.INVALID_ARGUMENT);
  t.regex(ended?.details ?? '', /printer name "a" is reported twice/);
});
