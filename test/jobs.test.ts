import { randomUUID } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import anyTest, { type TestFn } from 'ava';
import { SCOPES } from '../lib/credentials.js';
import { rfc3339 } from '../lib/time.js';
import { collectEvents, type EventLog } from './helpers/events.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
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
  events: EventLog;
  orgId: string;
  key: string;
  link: LinkClient;
  printerId: string;
  stationId: string;
}

const test = anyTest as TestFn<Ctx>;

interface JobBody {
  job: {
    id: string;
    status: string;
    status_detail: string;
    live: boolean;
    attempt: number;
    reference: string;
    printer_id: string;
    station_id: string;
  };
  events?: Array<{ at: string; status: string; detail: string; actor: string }>;
}

interface ErrorBody {
  error: { code: string; message: string; param?: string };
}

test.before(async (t) => {
  const sys = await startTestSystem();
  const events = await collectEvents(sys.nats.url);
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  const printerId = link.welcome.printerIds.front as string;
  t.context = { sys, events, orgId, key, link, printerId, stationId: station.id };
});

test.after.always(async (t) => {
  t.context.link?.close();
  await t.context.events?.close();
  await t.context.sys?.stop();
});

function post(t: { context: Ctx }, body: Record<string, unknown>, token = t.context.key) {
  return call<JobBody & ErrorBody>(t.context.sys.url, 'POST', `/v1/orgs/${t.context.orgId}/jobs`, {
    token,
    body: { printer_id: t.context.printerId, content: { type: 'text', data: 'hello' }, ...body },
  });
}

function getJob(t: { context: Ctx }, id: string) {
  return call<JobBody>(t.context.sys.url, 'GET', `/v1/orgs/${t.context.orgId}/jobs/${id}`, {
    token: t.context.key,
  });
}

function until(t: { context: Ctx }, id: string, status: string) {
  return eventually(
    () => getJob(t, id),
    (res) => res.body.job?.status === status,
  );
}

test.serial('a job travels queued → sent → printed with its events and webhooks', async (t) => {
  const { link, orgId, events } = t.context;
  const created = await post(t, { title: 'Invoice 1', reference: 'inv-1' });
  t.is(created.status, 201);
  const job = created.body.job;
  t.is(job.status, 'queued');
  t.is(job.live, true);
  t.is(job.attempt, 1);
  t.is(job.station_id, t.context.stationId);

  await link.until(() => link.jobs.some((j) => j.offer.jobId === job.id));
  const offered = link.jobs.find((j) => j.offer.jobId === job.id);
  t.is(offered?.document.toString(), 'hello');
  t.is(offered?.offer.printerName, 'front');
  t.is(offered?.offer.contentType, 'text/plain');
  await events.waitFor(
    (e) => e.type === 'job.created' && (e.data.job as { id: string }).id === job.id,
  );

  link.send({ received: { jobId: job.id, attempt: 1 } });
  await until(t, job.id, 'sent');
  link.send({ result: { jobId: job.id, attempt: 1, printed: true, detail: '' } });
  const printed = await until(t, job.id, 'printed');
  await link.until(() => link.accepted.filter((a) => a.jobId === job.id).length === 2);

  const history = printed.body.events ?? [];
  t.deepEqual(
    history.map((e) => e.status),
    ['queued', 'sent', 'printed'],
  );
  t.regex(history[0]?.actor ?? '', /^api_key:/);
  t.is(history[2]?.actor, `station:${t.context.stationId}`);
  const webhook = await events.waitFor(
    (e) => e.type === 'job.printed' && (e.data.job as { id: string }).id === job.id,
  );
  t.is(webhook.org_id, orgId);
  t.deepEqual(webhook.data.job, printed.body.job);
});

test.serial(
  'a received and result sent together are one report, and the history keeps sent',
  async (t) => {
    const { link, stationId } = t.context;
    const nc = await connect({ servers: t.context.sys.nats.url });
    t.teardown(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const stored = async () => {
      const info = await jsm.streams.info('REPORTS', {
        subjects_filter: `reports.*.*.${stationId}`,
      });
      return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
    };
    const job = (await post(t, {})).body.job;
    await link.until(() => link.jobs.some((j) => j.offer.jobId === job.id));
    const before = await stored();

    link.send({ received: { jobId: job.id, attempt: 1 } });
    link.send({ result: { jobId: job.id, attempt: 1, printed: true, detail: '' } });
    const printed = await until(t, job.id, 'printed');
    await link.until(() => link.accepted.filter((a) => a.jobId === job.id).length === 2);

    t.deepEqual(
      link.accepted.filter((a) => a.jobId === job.id).map((a) => a.kind),
      ['received', 'result'],
    );
    t.deepEqual(
      (printed.body.events ?? []).map((e) => e.status),
      ['queued', 'sent', 'printed'],
    );
    t.is(await stored(), before + 1, 'one report stored for the two');
  },
);

test.serial('a failed job carries its detail, and retry queues a new attempt', async (t) => {
  const { link, events } = t.context;
  const job = (await post(t, {})).body.job;
  await link.until(() => link.jobs.some((j) => j.offer.jobId === job.id));
  link.send({ result: { jobId: job.id, attempt: 1, printed: false, detail: 'out of paper' } });
  const failed = await until(t, job.id, 'failed');
  t.is(failed.body.job.status_detail, 'out of paper');
  await events.waitFor(
    (e) => e.type === 'job.failed' && (e.data.job as { id: string }).id === job.id,
  );

  const retried = await call<JobBody>(
    t.context.sys.url,
    'POST',
    `/v1/orgs/${t.context.orgId}/jobs/${job.id}/retry`,
    {
      token: t.context.key,
    },
  );
  t.is(retried.status, 200);
  t.is(retried.body.job.status, 'queued');
  t.is(retried.body.job.attempt, 2);
  await events.waitFor(
    (e) => e.type === 'job.retried' && (e.data.job as { id: string }).id === job.id,
  );
  await link.until(() => link.jobs.some((j) => j.offer.jobId === job.id && j.offer.attempt === 2));

  // A late report of the first attempt changes nothing.
  link.send({ result: { jobId: job.id, attempt: 1, printed: false, detail: 'stale' } });
  link.send({ result: { jobId: job.id, attempt: 2, printed: true, detail: '' } });
  const printed = await until(t, job.id, 'printed');
  t.is(printed.body.job.status_detail, '');
});

test.serial(
  'cancel withdraws a job from the station; a printed job cannot be cancelled',
  async (t) => {
    const { link, sys, orgId, key } = t.context;
    const job = (await post(t, {})).body.job;
    await link.until(() => link.jobs.some((j) => j.offer.jobId === job.id));
    const cancelled = await call<JobBody>(
      sys.url,
      'POST',
      `/v1/orgs/${orgId}/jobs/${job.id}/cancel`,
      {
        token: key,
      },
    );
    t.is(cancelled.status, 200);
    t.is(cancelled.body.job.status, 'cancelled');
    await link.until(() => link.withdrawn.some((w) => w.jobId === job.id));
    // The station's report after the cancellation changes nothing.
    link.send({ result: { jobId: job.id, attempt: 1, printed: true, detail: '' } });
    const again = await call<ErrorBody>(
      sys.url,
      'POST',
      `/v1/orgs/${orgId}/jobs/${job.id}/cancel`,
      {
        token: key,
      },
    );
    t.is(again.status, 409);
    t.is(again.body.error.code, 'conflict');
    const retry = await call<ErrorBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs/${job.id}/retry`, {
      token: key,
    });
    t.is(retry.status, 409);
    t.is((await getJob(t, job.id)).body.job.status, 'cancelled');
  },
);

test.serial(
  'a job cancelled while its agent was away is withdrawn when it links again; one still pending is offered',
  async (t) => {
    const { sys, orgId, key } = t.context;
    const station = await createStation(sys.url, orgId);
    const first = await connectLink(sys.linkAddress, station.token, [printer('back')]);
    const printerId = first.welcome.printerIds.back as string;
    const make = async () =>
      (
        await call<JobBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
          token: key,
          body: { printer_id: printerId, content: { type: 'text', data: 'held' } },
        })
      ).body.job;
    const doomed = await make();
    const kept = await make();
    const ids = [doomed.id, kept.id];
    await first.until(() => ids.every((id) => first.jobs.some((j) => j.offer.jobId === id)));
    for (const jobId of ids) first.send({ received: { jobId, attempt: 1 } });
    for (const id of ids) await until(t, id, 'sent');
    // The agent goes away holding both (a printer's queue has them), and one is cancelled: the
    // withdrawal has no link to go to.
    first.close();
    await first.ended;
    const cancelled = await call<JobBody>(
      sys.url,
      'POST',
      `/v1/orgs/${orgId}/jobs/${doomed.id}/cancel`,
      { token: key },
    );
    t.is(cancelled.body.job.status, 'cancelled');

    const second = await connectLink(
      sys.linkAddress,
      station.token,
      [printer('back')],
      ids.map((jobId) => ({ jobId, attempt: 1 })),
    );
    t.teardown(() => second.close());
    await second.until(() => second.withdrawn.some((w) => w.jobId === doomed.id));
    t.true(second.jobs.some((j) => j.offer.jobId === kept.id));
    t.false(second.withdrawn.some((w) => w.jobId === kept.id));
  },
);

test.serial(
  'a link that replaces another leaves its station online: one station.online, then one station.offline',
  async (t) => {
    const { sys, orgId, events } = t.context;
    const station = await createStation(sys.url, orgId);
    const about = (type: string) => (e: { type: string; data: Record<string, unknown> }) =>
      e.type === type && e.data.station_id === station.id;
    const first = await connectLink(sys.linkAddress, station.token, [printer('p')]);
    await events.waitFor(about('station.online'));
    // The agent came back before its old link was seen to end: the new link replaces it.
    const second = await connectLink(sys.linkAddress, station.token, [printer('p')]);
    t.truthy(await first.ended);
    second.close();
    await events.waitFor(about('station.offline'));
    t.is(events.events.filter(about('station.online')).length, 1);
    t.is(events.events.filter(about('station.offline')).length, 1);
  },
);

test.serial('a test key makes jobs with live: false', async (t) => {
  const { sys, orgId } = t.context;
  const testKey = (await createKey(sys.url, orgId, { mode: 'test', scopes: SCOPES })).secret;
  const res = await post(t, {}, testKey);
  t.is(res.status, 201);
  t.is(res.body.job.live, false);
});

test.serial('jobs list pages, filters and counts', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Lister');
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('a'), printer('b')]);
  t.teardown(() => link.close());
  const a = link.welcome.printerIds.a as string;
  const b = link.welcome.printerIds.b as string;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    sys.clock.advance(1000);
    const res = await call<JobBody>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: key,
      body: {
        printer_id: i < 3 ? a : b,
        reference: i % 2 ? 'odd' : 'even',
        content: { type: 'text', data: `${i}` },
      },
    });
    ids.push(res.body.job.id);
  }
  await call(sys.url, 'POST', `/v1/orgs/${orgId}/jobs/${ids[0]}/cancel`, { token: key });
  type List = { items: Array<{ id: string }>; next_cursor: string; counts: Record<string, number> };
  const base = `/v1/orgs/${orgId}/jobs`;
  const all = await call<List>(sys.url, 'GET', base, { token: key });
  t.deepEqual(
    all.body.items.map((j) => j.id),
    [...ids].reverse(),
    'newest first',
  );
  t.deepEqual(all.body.counts, { queued: 4, cancelled: 1 });
  const page1 = await call<List>(sys.url, 'GET', `${base}?limit=2`, { token: key });
  t.is(page1.body.items.length, 2);
  const page2 = await call<List>(
    sys.url,
    'GET',
    `${base}?limit=2&cursor=${page1.body.next_cursor}`,
    {
      token: key,
    },
  );
  t.deepEqual(
    page2.body.items.map((j) => j.id),
    [ids[2], ids[1]],
  );
  const queuedOnA = await call<List>(sys.url, 'GET', `${base}?status=queued&printer_id=${a}`, {
    token: key,
  });
  t.deepEqual(queuedOnA.body.items.map((j) => j.id).sort(), [ids[1], ids[2]].sort());
  t.deepEqual(
    queuedOnA.body.counts,
    { queued: 2, cancelled: 1 },
    'counts ignore the status filter',
  );
  const odd = await call<List>(sys.url, 'GET', `${base}?reference=odd&status=queued,cancelled`, {
    token: key,
  });
  t.deepEqual(odd.body.items.map((j) => j.id).sort(), [ids[1], ids[3]].sort());
  for (const bad of [
    '?status=lost',
    '?limit=500',
    '?printer_id=x',
    '?created_after=yesterday',
    '?colour=red',
  ]) {
    const res = await call<ErrorBody>(sys.url, 'GET', `${base}${bad}`, { token: key });
    t.is(res.status, 400, bad);
  }
  // A cursor taken apart and put together again with other keys is refused as one, on every list.
  const [at, id] = JSON.parse(Buffer.from(page1.body.next_cursor, 'base64url').toString());
  const tampered = [
    [at, 'not-a-uuid'],
    ['2026-13-45T99:00:00.000Z', id],
    ['yesterday', id],
    [at, id, 'more'],
  ].map((key) => Buffer.from(JSON.stringify(key)).toString('base64url'));
  for (const list of [base, `/v1/orgs/${orgId}/printers`, `/v1/orgs/${orgId}/locations`]) {
    for (const cursor of [...tampered, 'garbage']) {
      const res = await call<ErrorBody>(sys.url, 'GET', `${list}?cursor=${cursor}`, {
        token: key,
      });
      t.is(res.status, 400, `${list} ${cursor}`);
      t.like(res.body.error, { code: 'invalid', param: 'cursor' });
    }
  }
});

test.serial(
  'a job for an offline station waits queued and goes out when it connects',
  async (t) => {
    const { sys, orgId, key } = t.context;
    const station = await createStation(sys.url, orgId, { name: 'Back office' });
    const first = await connectLink(sys.linkAddress, station.token, [printer('back')]);
    const printerId = first.welcome.printerIds.back as string;
    first.close();
    const stationOffline = await eventually(
      () =>
        call<{ printers: Array<{ id: string; station_online: boolean }> }>(
          sys.url,
          'GET',
          `/v1/orgs/${orgId}/printers`,
          { token: key },
        ),
      (res) => res.body.printers.some((p) => p.id === printerId && !p.station_online),
    );
    t.truthy(stationOffline);
    const job = (await post(t, { printer_id: printerId })).body.job;
    t.is(job.status, 'queued');
    const second = await connectLink(sys.linkAddress, station.token, [printer('back')]);
    t.teardown(() => second.close());
    await second.until(() => second.jobs.some((j) => j.offer.jobId === job.id));
    t.pass();
  },
);

test.serial(
  'printers show what their agent reports, and a change emits printer.status',
  async (t) => {
    const { sys, orgId, key, link, printerId, events } = t.context;
    link.send({ printers: { printers: [printer('front', 'out_of_paper', 'media-empty')] } });
    const event = await events.waitFor(
      (e) =>
        e.type === 'printer.status' &&
        e.data.printer_id === printerId &&
        e.data.status === 'out_of_paper',
    );
    t.deepEqual(event.data, {
      printer_id: printerId,
      status: 'out_of_paper',
      detail: 'media-empty',
    });
    const res = await call<{ printers: Array<Record<string, unknown>> }>(
      sys.url,
      'GET',
      `/v1/orgs/${orgId}/printers`,
      {
        token: key,
      },
    );
    const front = res.body.printers.find((p) => p.id === printerId);
    t.like(front, {
      name: 'front',
      status: 'out_of_paper',
      detail: 'media-empty',
      station_online: true,
    });
    t.deepEqual(front?.capabilities, {
      paper_sizes: ['A4', 'Letter'],
      duplex: true,
      color: false,
      copies: true,
      trays: [],
      document_formats: [],
    });
    link.send({ printers: { printers: [printer('front')] } });
    await events.waitFor(
      (e) =>
        e.type === 'printer.status' && e.data.printer_id === printerId && e.data.status === 'ready',
    );
  },
);

test.serial('station.online and station.offline follow the link', async (t) => {
  const { sys, orgId, events } = t.context;
  const station = await createStation(sys.url, orgId, { name: 'Popup' });
  const link = await connectLink(sys.linkAddress, station.token, []);
  await events.waitFor((e) => e.type === 'station.online' && e.data.station_id === station.id);
  link.close();
  await events.waitFor((e) => e.type === 'station.offline' && e.data.station_id === station.id);
  t.pass();
});

test('an unknown device token is refused on the link', async (t) => {
  const { sys } = t.context;
  const err = await t.throwsAsync(connectLink(sys.linkAddress, 'svc_dev_nope', []));
  t.is((err as { code?: number }).code, GrpcStatus.UNAUTHENTICATED);
});

test('bad job requests answer 400 with the field named', async (t) => {
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ printer_id: randomUUID() }, 'invalid', 'printer_id'],
    [{ printer_id: 'nope' }, 'invalid', 'printer_id'],
    [
      { content: { type: 'pdf_base64', data: Buffer.from('not a pdf').toString('base64') } },
      'invalid',
      'content.data',
    ],
    [{ content: { type: 'raw_base64', data: '***' } }, 'invalid', 'content.data'],
    [{ content: { type: 'fax', data: 'x' } }, 'invalid', 'content.type'],
    [{ content: { type: 'text' } }, 'invalid', 'content.data'],
    [{ options: { copies: 0 } }, 'invalid', 'options.copies'],
    [{ options: { duplex: 'both' } }, 'invalid', 'options.duplex'],
    [{ options: { pages: '1-' } }, 'invalid', 'options.pages'],
    [{ colour: 'red' }, 'unknown_field', 'colour'],
    [{ options: { staple: true } }, 'unknown_field', 'options.staple'],
  ];
  for (const [body, code, param] of cases) {
    const res = await post(t, body);
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error.code, code, JSON.stringify(body));
    t.is(res.body.error.param, param, JSON.stringify(body));
  }
});

test('another organization’s job, an unknown job and a malformed id answer 404', async (t) => {
  const { sys, orgId, key } = t.context;
  const job = (await post(t, {})).body.job;
  const other = await createOrg(sys.url, 'Rival');
  const otherKey = (await createKey(sys.url, other, { scopes: SCOPES })).secret;
  for (const [org, id, token] of [
    [other, job.id, otherKey],
    [orgId, randomUUID(), key],
    [orgId, 'nope', key],
  ] as const) {
    const res = await call<ErrorBody>(sys.url, 'GET', `/v1/orgs/${org}/jobs/${id}`, { token });
    t.is(res.status, 404);
    t.is(res.body.error.code, 'not_found');
  }
  const cancel = await call(sys.url, 'POST', `/v1/orgs/${other}/jobs/${job.id}/cancel`, {
    token: otherKey,
  });
  t.is(cancel.status, 404);
});

test('locations are listed and fetched; admin creates them and stations in them', async (t) => {
  const { sys, orgId, key } = t.context;
  const created = await call<{ location: { id: string; name: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/locations`,
    {
      token: OPERATOR_TOKEN,
      body: { name: 'Berlin', address: 'Alexanderplatz 1', timezone: 'Europe/Berlin' },
    },
  );
  t.is(created.status, 201);
  const loc = created.body.location;
  const station = await createStation(sys.url, orgId, { location_id: loc.id });
  t.truthy(station.token.startsWith('svc_dev_'));
  const one = await call<{ location: { id: string; timezone: string } }>(
    sys.url,
    'GET',
    `/v1/orgs/${orgId}/locations/${loc.id}`,
    {
      token: key,
    },
  );
  t.is(one.body.location.timezone, 'Europe/Berlin');
  const list = await call<{ locations: Array<{ id: string }>; next_cursor: string }>(
    sys.url,
    'GET',
    `/v1/orgs/${orgId}/locations`,
    {
      token: key,
    },
  );
  t.true(list.body.locations.some((l) => l.id === loc.id));
  const missing = await call(sys.url, 'GET', `/v1/orgs/${orgId}/locations/${randomUUID()}`, {
    token: key,
  });
  t.is(missing.status, 404);
  const badStation = await call<ErrorBody>(sys.url, 'POST', `/admin/v1/orgs/${orgId}/stations`, {
    token: OPERATOR_TOKEN,
    body: { name: 'x', location_id: randomUUID() },
  });
  t.is(badStation.status, 400);
  t.is(badStation.body.error.param, 'location_id');
});

test('revoking a station token cuts its live link; a rotated token replaces the old one', async (t) => {
  const { sys, orgId } = t.context;
  const station = await createStation(sys.url, orgId, { name: 'Kiosk' });
  const link = await connectLink(sys.linkAddress, station.token, [printer('kiosk')]);
  const revoked = await call(
    sys.url,
    'DELETE',
    `/admin/v1/orgs/${orgId}/stations/${station.id}/token`,
    {
      token: OPERATOR_TOKEN,
    },
  );
  t.is(revoked.status, 204);
  const ended = await link.ended;
  t.is(ended?.code, GrpcStatus.UNAUTHENTICATED);
  const refused = await t.throwsAsync(connectLink(sys.linkAddress, station.token, []));
  t.is((refused as { code?: number }).code, GrpcStatus.UNAUTHENTICATED);
  // The station says why its agent is refused, where an offline station would only read offline.
  const stationNow = () =>
    call<{ station: { online: boolean; token_revoked_at: string | null } }>(
      sys.url,
      'GET',
      `/admin/v1/orgs/${orgId}/stations/${station.id}`,
      { token: OPERATOR_TOKEN },
    );
  // The link's end is recorded a moment after it ends.
  await eventually(stationNow, (res) => !res.body.station.online);
  t.is((await stationNow()).body.station.token_revoked_at, rfc3339(sys.clock.now()));

  const rotated = await call<{ token: string }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/stations/${station.id}/token`,
    {
      token: OPERATOR_TOKEN,
    },
  );
  t.is(rotated.status, 200);
  t.regex(rotated.body.token, /^svc_dev_/);
  const again = await connectLink(sys.linkAddress, rotated.body.token, [printer('kiosk')]);
  t.teardown(() => again.close());
  t.is(again.welcome.stationId, station.id);
  t.is((await stationNow()).body.station.token_revoked_at, null, 'a new token works');
  const old = await t.throwsAsync(connectLink(sys.linkAddress, station.token, []));
  t.is((old as { code?: number }).code, GrpcStatus.UNAUTHENTICATED);
  const foreign = await call(
    sys.url,
    'DELETE',
    `/admin/v1/orgs/${await createOrg(sys.url, 'Other')}/stations/${station.id}/token`,
    {
      token: OPERATOR_TOKEN,
    },
  );
  t.is(foreign.status, 404);
});
