/**
 * Realtime: `GET /v1/orgs/{org}/stream` (DESIGN §5) against a running Spool with a real agent, read
 * by a real HTTP client: a job's events arrive with the webhook's bodies, a printed job's
 * confirmation with them, only the key's
 * organization's events arrive, `jobs:read` or a member's session is needed, `Last-Event-ID`
 * resumes without gaps or repeats, `types=` filters, keep-alive comments come on the configured
 * interval, a draining gateway ends its streams cleanly, a client that stops reading is cut off
 * rather than held in memory, and the gateway reads the events only while a stream is open on it.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import anyTest, { type TestFn } from 'ava';
import { member } from './helpers/console.js';
import { type PrintingOrg, startPrintingOrg } from './helpers/printing-org.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import { openStream, type SseMessage } from './helpers/sse.js';
import { call, createKey, createOrg, eventually, OPERATOR_TOKEN } from './helpers/system.js';

interface Ctx {
  org: PrintingOrg;
  receiver: Receiver;
}

const test = anyTest as TestFn<Ctx>;
const KEEP_ALIVE_MS = 300;
const BUFFER_BYTES = 256 * 1024;
/** Lowered from the defaults (20 and 100), as STREAMS_PER_CREDENTIAL and STREAMS_PER_ORG do. */
const STREAMS_PER_CREDENTIAL = 4;
const STREAMS_PER_ORG = 8;

test.before(async (t) => {
  const [org, receiver] = await Promise.all([
    startPrintingOrg({
      eventStreams: {
        keepAliveMs: KEEP_ALIVE_MS,
        bufferBytes: BUFFER_BYTES,
        streamsPerCredential: STREAMS_PER_CREDENTIAL,
        streamsPerOrg: STREAMS_PER_ORG,
      },
    }),
    startReceiver(),
  ]);
  t.context = { org, receiver };
  const hook = await call(org.sys.url, 'POST', `/admin/v1/orgs/${org.orgId}/webhooks`, {
    token: OPERATOR_TOKEN,
    body: { url: receiver.url, events: ['job.created', 'job.printed'] },
  });
  if (hook.status !== 201) throw new Error(`create webhook answered ${hook.status}`);
});

test.after.always(async (t) => {
  await t.context.receiver?.close();
  await t.context.org?.stop();
});

type ErrorBody = { error: { code: string; message: string; param?: string } };

function streamUrl(t: { context: Ctx }, orgId = t.context.org.orgId, query = ''): string {
  return `${t.context.org.sys.url}/v1/orgs/${orgId}/stream${query}`;
}

async function postJob(t: { context: Ctx }, title: string): Promise<string> {
  const { org } = t.context;
  const res = await call<{ job: { id: string } }>(
    org.sys.url,
    'POST',
    `/v1/orgs/${org.orgId}/jobs`,
    {
      token: org.key,
      body: { printer_id: org.printerId, title, content: { type: 'text', data: `${title}\n` } },
    },
  );
  if (res.status !== 201) throw new Error(`POST job answered ${res.status}`);
  return res.body.job.id;
}

async function printedInApi(t: { context: Ctx }, jobId: string): Promise<void> {
  const { org } = t.context;
  await eventually(
    () =>
      call<{ job: { status: string } }>(org.sys.url, 'GET', `/v1/orgs/${org.orgId}/jobs/${jobId}`, {
        token: org.key,
      }),
    (r) => r.body.job?.status === 'printed',
    20_000,
  );
}

/** The stream's messages about one job. */
function ofJob(messages: SseMessage[], jobId: string): SseMessage[] {
  return messages.filter(
    (m) => (JSON.parse(m.data) as { data: { job?: { id: string } } }).data.job?.id === jobId,
  );
}

const printed = (jobId: string) => (ms: SseMessage[]) =>
  ofJob(ms, jobId).some((m) => m.event === 'job.printed');

test.serial(
  'a printed job shows job.created then job.printed, with the webhook bodies and its printer’s confirmation',
  async (t) => {
    const { org, receiver } = t.context;
    const stream = await openStream(streamUrl(t), { token: org.key });
    t.teardown(() => stream.close());
    t.is(stream.status, 200);
    t.regex(String(stream.headers['content-type']), /^text\/event-stream/);
    t.is(stream.headers['cache-control'], 'no-cache, no-transform');

    const jobId = await postJob(t, 'stream-order');
    await stream.until(printed(jobId), 20_000);
    const mine = ofJob(stream.messages, jobId);
    t.deepEqual(
      mine.map((m) => m.event),
      ['job.created', 'job.printed'],
    );
    const ids = mine.map((m) => Number(m.id));
    t.true(ids.every((id) => Number.isInteger(id) && id > 0));
    t.true((ids[0] as number) < (ids[1] as number), 'ids grow');

    // The webhook for each event carries exactly the bytes of the stream's data.
    const hooks = await receiver.until(
      (rs) =>
        rs.filter((r) => r.body.toString('utf8').includes(jobId)).length >= 2 &&
        rs.some((r) => r.body.toString('utf8').includes('"job.printed"')),
      20_000,
    );
    for (const m of mine) {
      const body = JSON.parse(m.data) as { type: string; org_id: string };
      t.is(body.type, m.event);
      t.is(body.org_id, org.orgId);
      t.true(
        hooks.some((r) => r.body.toString('utf8') === m.data),
        `the ${m.event} webhook carried the same body`,
      );
    }
    for (const m of stream.messages)
      t.is((JSON.parse(m.data) as { org_id: string }).org_id, org.orgId);

    // A file: printer wrote the whole document: handed off, with no page count. The API says so,
    // and so does job.printed on the stream, whose body the webhook carried byte for byte above.
    const handedOff = { level: 'handed_off', pages: null };
    const [created, done] = mine.map(
      (m) => (JSON.parse(m.data) as { data: { job: { confirmation: unknown } } }).data.job,
    );
    t.is(created?.confirmation, null);
    t.deepEqual(done?.confirmation, handedOff);
    const read = await call<{ job: { confirmation: unknown } }>(
      org.sys.url,
      'GET',
      `/v1/orgs/${org.orgId}/jobs/${jobId}`,
      { token: org.key },
    );
    t.deepEqual(read.body.job.confirmation, handedOff);
  },
);

test.serial("another organization's stream hears none of these events", async (t) => {
  const { org } = t.context;
  const otherOrg = await createOrg(org.sys.url, 'Other Print');
  const otherKey = (await createKey(org.sys.url, otherOrg, { scopes: ['jobs:read'] })).secret;
  const other = await openStream(streamUrl(t, otherOrg), { token: otherKey });
  const mine = await openStream(streamUrl(t), { token: org.key });
  t.teardown(() => {
    other.close();
    mine.close();
  });
  t.is(other.status, 200);
  const jobId = await postJob(t, 'stream-isolation');
  await mine.until(printed(jobId), 20_000);
  // The other stream had the same events to hear, and a keep-alive since.
  const comments = other.comments.length;
  await eventually(
    async () => other.comments.length,
    (n) => n > comments,
  );
  t.deepEqual(other.messages, []);

  // A key of one organization cannot open another's stream.
  const foreign = await openStream(streamUrl(t, otherOrg), { token: org.key });
  t.is(foreign.status, 404);
  t.is((JSON.parse(await foreign.body()) as ErrorBody).error.code, 'not_found');
});

test.serial(
  `a lowered STREAMS_PER_CREDENTIAL is honoured: one key holds at most ${STREAMS_PER_CREDENTIAL} streams open at once, one more answers 429, and a closed one frees its place`,
  async (t) => {
    const { org } = t.context;
    const { secret } = await createKey(org.sys.url, org.orgId, { scopes: ['jobs:read'] });
    const streams = await Promise.all(
      Array.from({ length: STREAMS_PER_CREDENTIAL }, () =>
        openStream(streamUrl(t), { token: secret }),
      ),
    );
    t.teardown(() => {
      for (const s of streams) s.close();
    });
    t.true(streams.every((s) => s.status === 200));
    const refused = await openStream(streamUrl(t), { token: secret });
    t.is(refused.status, 429);
    const body = JSON.parse(await refused.body()) as ErrorBody;
    t.is(body.error.code, 'rate_limited');
    t.regex(
      body.error.message,
      new RegExp(`at most ${STREAMS_PER_CREDENTIAL} event streams of one key`),
    );
    t.is(refused.headers['retry-after'], '5');
    // Another key of the organization is not held back by this one's.
    const other = await openStream(streamUrl(t), { token: org.key });
    t.is(other.status, 200);
    other.close();
    streams.pop()?.close();
    const again = await eventually(
      () => openStream(streamUrl(t), { token: secret }),
      (s) => {
        if (s.status !== 200) s.close();
        return s.status === 200;
      },
    );
    again.close();
  },
);

test.serial(
  `a lowered STREAMS_PER_ORG is honoured: one organization holds at most ${STREAMS_PER_ORG} streams open at once, whichever keys opened them`,
  async (t) => {
    const { org } = t.context;
    // An organization of its own, so that no stream of another test counts.
    const orgId = await createOrg(org.sys.url, 'Busy Print');
    const keys = await Promise.all(
      [1, 2, 3].map(
        async () => (await createKey(org.sys.url, orgId, { scopes: ['jobs:read'] })).secret,
      ),
    );
    const streams = await Promise.all(
      Array.from({ length: STREAMS_PER_ORG }, (_, i) =>
        openStream(streamUrl(t, orgId), { token: keys[i % 2] as string }),
      ),
    );
    t.teardown(() => {
      for (const s of streams) s.close();
    });
    t.true(streams.every((s) => s.status === 200));
    const refused = await openStream(streamUrl(t, orgId), { token: keys[2] as string });
    t.is(refused.status, 429);
    const body = JSON.parse(await refused.body()) as ErrorBody;
    t.is(body.error.code, 'rate_limited');
    t.regex(
      body.error.message,
      new RegExp(`at most ${STREAMS_PER_ORG} event streams of one organization`),
    );
  },
);

test.serial('a key without jobs:read is refused with 403', async (t) => {
  const { org } = t.context;
  const key = (await createKey(org.sys.url, org.orgId, { scopes: ['printers:read'] })).secret;
  const res = await call<ErrorBody>(org.sys.url, 'GET', `/v1/orgs/${org.orgId}/stream`, {
    token: key,
  });
  t.is(res.status, 403);
  t.is(res.body.error.code, 'forbidden');
  const anonymous = await call<ErrorBody>(org.sys.url, 'GET', `/v1/orgs/${org.orgId}/stream`);
  t.is(anonymous.status, 401);
});

test.serial(
  'reconnecting with Last-Event-ID gets exactly the missed events, then live ones',
  async (t) => {
    const { org } = t.context;
    const first = await openStream(streamUrl(t), { token: org.key });
    const before = await postJob(t, 'stream-before');
    await first.until(printed(before), 20_000);
    const last = first.messages[first.messages.length - 1] as SseMessage;
    first.close();

    // While disconnected: two more jobs print.
    const missed = [await postJob(t, 'stream-missed-1'), await postJob(t, 'stream-missed-2')];
    for (const id of missed) await printedInApi(t, id);

    const again = await openStream(streamUrl(t), { token: org.key, lastEventId: last.id });
    t.teardown(() => again.close());
    t.is(again.status, 200);
    await again.until((ms) => missed.every((id) => printed(id)(ms)), 20_000);
    const after = await postJob(t, 'stream-after');
    await again.until(printed(after), 20_000);

    const ids = again.messages.map((m) => Number(m.id));
    t.true(
      ids.every((id, i) => id > Number(last.id) && (i === 0 || id > (ids[i - 1] as number))),
      `ids after ${last.id}, growing, no repeats: ${ids}`,
    );
    t.deepEqual(ofJob(again.messages, before), [], 'nothing from before the id comes again');
    for (const id of [...missed, after]) {
      t.deepEqual(
        ofJob(again.messages, id).map((m) => m.event),
        ['job.created', 'job.printed'],
      );
    }
    // The replayed events are the very ones a stream that stayed open saw.
    const open = await openStream(streamUrl(t), { token: org.key, lastEventId: last.id });
    t.teardown(() => open.close());
    await open.until(printed(after), 20_000);
    const upTo = (ms: SseMessage[]) =>
      ms
        .slice(0, ms.findIndex((m) => printed(after)([m])) + 1)
        .map(({ id, event, data }) => ({ id, event, data }));
    t.deepEqual(upTo(open.messages), upTo(again.messages));
  },
);

test.serial('an id that is not one of ours is a 400 naming Last-Event-ID', async (t) => {
  const { org } = t.context;
  const res = await call<ErrorBody>(org.sys.url, 'GET', `/v1/orgs/${org.orgId}/stream`, {
    token: org.key,
    headers: { 'last-event-id': 'not-an-id' },
  });
  t.is(res.status, 400);
  t.like(res.body.error, { code: 'invalid', param: 'Last-Event-ID' });
});

test.serial('types= sends only the named types; an unknown type is a 400', async (t) => {
  const { org } = t.context;
  const only = await openStream(streamUrl(t, org.orgId, '?types=job.printed,job.failed'), {
    token: org.key,
  });
  const all = await openStream(streamUrl(t), { token: org.key });
  t.teardown(() => {
    only.close();
    all.close();
  });
  const jobId = await postJob(t, 'stream-types');
  await only.until(printed(jobId), 20_000);
  await all.until(printed(jobId), 20_000);
  t.deepEqual(
    ofJob(only.messages, jobId).map((m) => m.event),
    ['job.printed'],
  );
  t.true(only.messages.every((m) => m.event === 'job.printed' || m.event === 'job.failed'));
  t.deepEqual(
    ofJob(all.messages, jobId).map((m) => m.event),
    ['job.created', 'job.printed'],
  );

  const bad = await call<ErrorBody>(
    org.sys.url,
    'GET',
    `/v1/orgs/${org.orgId}/stream?types=job.printed,job.exploded`,
    { token: org.key },
  );
  t.is(bad.status, 400);
  t.like(bad.body.error, { code: 'invalid', param: 'types' });
  t.regex(bad.body.error.message, /job\.exploded/);
  const unknown = await call<ErrorBody>(
    org.sys.url,
    'GET',
    `/v1/orgs/${org.orgId}/stream?since=1`,
    {
      token: org.key,
    },
  );
  t.is(unknown.status, 400);
  t.like(unknown.body.error, { code: 'unknown_field', param: 'since' });
});

test.serial(
  'a revoked key, a signed-out session and a removed member each end the stream they opened',
  async (t) => {
    const { org } = t.context;
    const key = await createKey(org.sys.url, org.orgId, { scopes: ['jobs:read'] });
    const byKey = await openStream(streamUrl(t), { token: key.secret });
    const leaving = await member(org.sys.url, org.orgId, 'viewer');
    const bySession = await openStream(streamUrl(t), {
      headers: { cookie: `spool_session=${leaving.cookie}` },
    });
    const removed = await member(org.sys.url, org.orgId, 'viewer');
    const byMember = await openStream(streamUrl(t), {
      headers: { cookie: `spool_session=${removed.cookie}` },
    });
    const staying = await openStream(streamUrl(t), { token: org.key });
    const streams = [byKey, bySession, byMember, staying];
    t.teardown(() => {
      for (const s of streams) s.close();
    });
    t.deepEqual(
      streams.map((s) => s.status),
      [200, 200, 200, 200],
    );

    const revoke = await call(
      org.sys.url,
      'DELETE',
      `/admin/v1/orgs/${org.orgId}/keys/${key.key.id}`,
      {
        token: OPERATOR_TOKEN,
      },
    );
    t.is(revoke.status, 204);
    t.is((await leaving.call('POST', '/console/v1/sign-out')).status, 204);
    const owner = await member(org.sys.url, org.orgId, 'owner');
    const removal = await owner.call(
      'DELETE',
      `/console/v1/orgs/${org.orgId}/people/${removed.personId}`,
    );
    t.is(removal.status, 204);
    // Each ends cleanly, so that the client's reconnect is refused rather than retried silently.
    t.deepEqual(await Promise.all([byKey.ended, bySession.ended, byMember.ended]), [
      'end',
      'end',
      'end',
    ]);
    const jobId = await postJob(t, 'after-revocations');
    await staying.until(printed(jobId), 20_000);
    for (const ended of [byKey, bySession, byMember]) t.deepEqual(ofJob(ended.messages, jobId), []);
  },
);

test.serial(
  "a signed-in person's session reads the stream of their organization only",
  async (t) => {
    const { org } = t.context;
    const viewer = await member(org.sys.url, org.orgId, 'viewer');
    const stream = await openStream(streamUrl(t), {
      headers: { cookie: `spool_session=${viewer.cookie}` },
    });
    t.teardown(() => stream.close());
    t.is(stream.status, 200);
    const jobId = await postJob(t, 'stream-session');
    await stream.until(printed(jobId), 20_000);
    t.deepEqual(
      ofJob(stream.messages, jobId).map((m) => m.event),
      ['job.created', 'job.printed'],
    );

    const otherOrg = await createOrg(org.sys.url, 'Elsewhere Print');
    const outsider = await member(org.sys.url, otherOrg, 'owner');
    const refused = await openStream(streamUrl(t), {
      headers: { cookie: `spool_session=${outsider.cookie}` },
    });
    t.is(refused.status, 404);
    t.is((JSON.parse(await refused.body()) as ErrorBody).error.code, 'not_found');
  },
);

test.serial('a keep-alive comment comes on the configured interval', async (t) => {
  const { org } = t.context;
  const stream = await openStream(streamUrl(t), { token: org.key });
  t.teardown(() => stream.close());
  const opened = Date.now();
  await eventually(
    async () => stream.comments.length,
    (n) => n >= 2,
    KEEP_ALIVE_MS * 10,
  );
  t.true(stream.comments.every((c) => c === 'keep-alive'));
  t.true(Date.now() - opened >= KEEP_ALIVE_MS, 'not sooner than the interval');
});

test.serial(
  'a draining gateway ends its streams cleanly, and they resume on another',
  async (t) => {
    const { org } = t.context;
    const replica = await org.sys.system.startGateway();
    const stream = await openStream(`${replica.url}/v1/orgs/${org.orgId}/stream`, {
      token: org.key,
    });
    t.is(stream.status, 200);
    const jobId = await postJob(t, 'stream-drain');
    await stream.until(printed(jobId), 20_000);
    const last = stream.messages[stream.messages.length - 1] as SseMessage;
    await replica.stop();
    t.is(await stream.ended, 'end', 'the stream ended with its last chunk, not a reset');

    const later = await postJob(t, 'stream-drain-later');
    const resumed = await openStream(streamUrl(t), { token: org.key, lastEventId: last.id });
    t.teardown(() => resumed.close());
    await resumed.until(printed(later), 20_000);
    t.deepEqual(ofJob(resumed.messages, jobId), []);
  },
);

test.serial(
  'a client that stops reading is cut off past the buffer limit, and resumes without loss',
  async (t) => {
    const { org } = t.context;
    // The id to resume from: the last event so far.
    const marker = await openStream(streamUrl(t), { token: org.key });
    const jobId = await postJob(t, 'stream-slow');
    await marker.until(printed(jobId), 20_000);
    const from = (marker.messages[marker.messages.length - 1] as SseMessage).id;
    marker.close();

    // A client that reads nothing after the headers.
    const gateway = org.sys.gateway.gateway;
    // Every stream of the tests before has closed.
    await eventually(
      async () => gateway.events.size,
      (n) => n === 0,
    );
    const stalled = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        streamUrl(t),
        { headers: { authorization: `Bearer ${org.key}` }, agent: false },
        (res) => {
          res.pause();
          resolve(res);
        },
      );
      req.on('error', reject);
      req.end();
    });
    t.teardown(() => stalled.destroy());
    t.is(stalled.statusCode, 200);
    await eventually(
      async () => gateway.events.size,
      (n) => n === 1,
    );

    // 160 events of 100 KB each: far more than the socket buffers and the limit hold.
    const nc = await connect({ servers: org.sys.nats.url });
    t.teardown(() => nc.close());
    const js = jetstream(nc);
    const detail = 'x'.repeat(100 * 1024);
    const printerId = randomUUID();
    for (let i = 0; i < 160; i++) {
      await js.publish(
        `events.${org.orgId}.printer.status`,
        JSON.stringify({
          id: randomUUID(),
          type: 'printer.status',
          created_at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
          org_id: org.orgId,
          data: { printer_id: printerId, status: 'error', detail: `${i} ${detail}` },
        }),
      );
    }
    // The gateway let go of the stalled stream rather than holding 16 MB for it.
    await eventually(
      async () => gateway.events.size,
      (n) => n === 0,
      20_000,
    );
    const ending = new Promise<string>((resolve) => {
      stalled.on('end', () => resolve('end'));
      stalled.on('error', () => resolve('error'));
      stalled.on('close', () => resolve(stalled.complete ? 'end' : 'error'));
    });
    stalled.resume();
    t.is(await ending, 'error', 'the stream was cut, not ended');

    // Resuming from before the burst gets all of it, read at the client's pace.
    const resumed = await openStream(streamUrl(t), { token: org.key, lastEventId: from });
    t.teardown(() => resumed.close());
    const burst = (ms: SseMessage[]) =>
      ms.filter((m) => m.event === 'printer.status' && m.data.includes(printerId));
    await resumed.until((ms) => burst(ms).length >= 160, 20_000);
    t.deepEqual(
      burst(resumed.messages).map(
        (m) => (JSON.parse(m.data) as { data: { detail: string } }).data.detail.split(' ')[0],
      ),
      Array.from({ length: 160 }, (_, i) => String(i)),
    );
  },
);

test.serial('the gateway reads the events only while a stream is open on it', async (t) => {
  const { org } = t.context;
  const nc = await connect({ servers: org.sys.nats.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  /** The gateway's feed: the one unnamed consumer of every organization's events. */
  const feeds = async () => {
    let n = 0;
    for await (const c of jsm.consumers.list('EVENTS')) {
      // A consumer deleted while the list is read comes as null.
      if (!c) continue;
      const filters = [c.config.filter_subject, ...(c.config.filter_subjects ?? [])];
      if (!c.config.durable_name && filters.includes('events.>')) n++;
    }
    return n;
  };

  // The earlier tests' streams are closed: once none has been open for a keep-alive interval,
  // the gateway stops reading.
  await eventually(feeds, (n) => n === 0);
  const stream = await openStream(streamUrl(t), { token: org.key });
  t.teardown(() => stream.close());
  // A stream opened starts it: its consumer reads from where the stream started.
  await eventually(feeds, (n) => n === 1);
  const jobId = await postJob(t, 'feed-restarted');
  await stream.until(printed(jobId), 20_000);
  t.deepEqual(
    ofJob(stream.messages, jobId).map((m) => m.event),
    ['job.created', 'job.printed'],
  );
  stream.close();
  await eventually(feeds, (n) => n === 0);
  t.pass('the feed stopped after the last stream closed');
});
