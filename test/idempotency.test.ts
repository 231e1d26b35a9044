import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { requestFingerprint } from '../gateway/idempotency.js';
import { CreateJobRequest, JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { SCOPES } from '../lib/credentials.js';
import { type AsyncClient, createClient } from '../lib/grpc.js';
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
  otherKey: string;
  link: LinkClient;
  printerId: string;
  jobs: AsyncClient<JobsServiceClient>;
}

const test = anyTest as TestFn<Ctx>;

interface JobAnswer {
  job: { id: string; reference: string };
  items: Array<{ id: string }>;
  error: { code: string; message: string; param?: string };
}

test.before(async (t) => {
  const sys = await startTestSystem();
  const orgId = await createOrg(sys.url);
  const key = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const otherKey = (await createKey(sys.url, orgId, { scopes: SCOPES })).secret;
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  const jobs = createClient(JobsServiceClient, {
    service: 'jobs',
    address: sys.system.servicesAddress,
  });
  t.context = {
    sys,
    orgId,
    key,
    otherKey,
    link,
    printerId: link.welcome.printerIds.front as string,
    jobs,
  };
});

test.after.always(async (t) => {
  t.context.jobs?.close();
  t.context.link?.close();
  await t.context.sys?.stop();
});

/** POSTs a job with an Idempotency-Key; `body` is sent as given when it is a string. */
function post(t: { context: Ctx }, idempotencyKey: string, body: unknown, token = t.context.key) {
  return call<JobAnswer>(t.context.sys.url, 'POST', `/v1/orgs/${t.context.orgId}/jobs`, {
    token,
    body,
    headers: { 'Idempotency-Key': idempotencyKey },
  });
}

async function jobsWithReference(t: { context: Ctx }, reference: string): Promise<string[]> {
  const res = await call<JobAnswer>(
    t.context.sys.url,
    'GET',
    `/v1/orgs/${t.context.orgId}/jobs?reference=${encodeURIComponent(reference)}`,
    { token: t.context.key },
  );
  return res.body.items.map((j) => j.id);
}

const jobBody = (t: { context: Ctx }, reference: string) => ({
  printer_id: t.context.printerId,
  reference,
  content: { type: 'text', data: 'hello' },
});

test('a job created while its answer was lost is what a retry with the key gets', async (t) => {
  const { jobs, orgId } = t.context;
  const key = `lost-${randomUUID()}`;
  const body = jobBody(t, key);
  // The first request, as the gateway makes it: claim the key, create the job with the claim,
  // and then the gateway dies before it can record the answer or reply.
  const claim = await jobs.claimIdempotencyKey({
    orgId,
    key,
    fingerprint: fingerprintOfRequest(t, body),
  });
  t.is(claim.state, 'claimed');
  const jobId = (await createWithClaim(t, key, claim.claim)).job?.id ?? '';
  const retry = await post(t, key, body);
  t.is(retry.status, 201);
  t.is(retry.headers.get('idempotent-replayed'), 'true');
  t.is(retry.body.job.id, jobId);
  t.deepEqual(await jobsWithReference(t, key), [jobId]);
});

test('a claim abandoned before its job was made lets a retry through after a minute, and only the retry makes the job', async (t) => {
  const { jobs, orgId, sys } = t.context;
  const key = `abandoned-${randomUUID()}`;
  const body = jobBody(t, key);
  const claim = await jobs.claimIdempotencyKey({
    orgId,
    key,
    fingerprint: fingerprintOfRequest(t, body),
  });
  const early = await post(t, key, body);
  t.is(early.status, 409);
  t.is(early.headers.get('retry-after'), '1');
  t.regex(early.body.error.message, /still in progress/);

  sys.clock.advance(61_000);
  const retry = await post(t, key, body);
  t.is(retry.status, 201);
  // The abandoned request, were it to go on now, may not make a second job.
  const late = await createWithClaim(t, key, claim.claim).then(
    () => 'created',
    (err: { code: string }) => err.code,
  );
  t.is(late, 'conflict');
  t.deepEqual(await jobsWithReference(t, key), [retry.body.job.id]);
  const again = await post(t, key, body);
  t.is(again.body.job.id, retry.body.job.id);
});

test.serial(
  'an error is not kept: a retry with the key does the work once its cause is gone',
  async (t) => {
    const { sys } = t.context;
    const orgId = await createOrg(sys.url, 'Limited');
    const testKey = (await createKey(sys.url, orgId, { mode: 'test', scopes: SCOPES })).secret;
    const station = await createStation(sys.url, orgId);
    const link = await connectLink(sys.linkAddress, station.token, [printer('p')]);
    t.teardown(() => link.close());
    const body = { printer_id: link.welcome.printerIds.p, content: { type: 'text', data: 'x' } };
    const postAs = (headers: Record<string, string> = {}) =>
      call<JobAnswer>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, { token: testKey, body, headers });
    sys.clock.set(new Date(Date.UTC(2031, 0, 1, 12)));
    for (let i = 0; i < 200; i++) t.is((await postAs()).status, 201);
    // The day's test prints are used up: refused, again and again, each time with when to retry.
    const key = `limited-${randomUUID()}`;
    for (let i = 0; i < 2; i++) {
      const refused = await postAs({ 'Idempotency-Key': key });
      t.is(refused.status, 429);
      t.is(refused.headers.get('idempotent-replayed'), null);
      t.truthy(refused.headers.get('retry-after'));
    }
    // The next UTC day the same request with the same key prints, once.
    sys.clock.set(new Date(Date.UTC(2031, 0, 2, 0, 0, 1)));
    const next = await postAs({ 'Idempotency-Key': key });
    t.is(next.status, 201);
    const replayed = await postAs({ 'Idempotency-Key': key });
    t.is(replayed.status, 201);
    t.is(replayed.headers.get('idempotent-replayed'), 'true');
    t.is(replayed.body.job.id, next.body.job.id);
  },
);

test('the same JSON with other white space and field order is the same request', async (t) => {
  const key = `json-${randomUUID()}`;
  const body = jobBody(t, key);
  const first = await post(t, key, JSON.stringify(body));
  t.is(first.status, 201);
  const reordered = `{ "content": {"data": "hello", "type": "text"},\n  "reference": ${JSON.stringify(key)},  "printer_id": "${t.context.printerId}" }`;
  const again = await post(t, key, reordered);
  t.is(again.status, 201);
  t.is(again.body.job.id, first.body.job.id);
  t.is(again.headers.get('idempotent-replayed'), 'true');
});

test('an Idempotency-Key that is empty, too long or not visible ASCII is refused', async (t) => {
  const body = jobBody(t, `bad-keys-${randomUUID()}`);
  for (const bad of ['', 'x'.repeat(256), 'order 1']) {
    const res = await post(t, bad, body);
    t.is(res.status, 400, JSON.stringify(bad));
    t.like(res.body.error, { code: 'invalid', param: 'Idempotency-Key' });
  }
  t.deepEqual(await jobsWithReference(t, body.reference), []);
});

test('two API keys of one organization share its Idempotency-Keys', async (t) => {
  const key = `shared-${randomUUID()}`;
  const body = jobBody(t, key);
  const first = await post(t, key, body, t.context.key);
  const second = await post(t, key, body, t.context.otherKey);
  t.is(second.status, 201);
  t.is(second.body.job.id, first.body.job.id);
  t.deepEqual(await jobsWithReference(t, key), [first.body.job.id]);
});

test('a live key and a test key of one organization keep their Idempotency-Keys apart', async (t) => {
  const { sys, orgId } = t.context;
  const live = (await createKey(sys.url, orgId, { mode: 'live', scopes: SCOPES })).secret;
  const test = (await createKey(sys.url, orgId, { mode: 'test', scopes: SCOPES })).secret;
  const key = `order-${randomUUID()}`;
  const body = jobBody(t, key);
  const fromLive = await post(t, key, body, live);
  const fromTest = await post(t, key, body, test);
  t.is(fromTest.status, 201);
  t.is(fromTest.headers.get('idempotent-replayed'), null, 'not the live job played back');
  t.not(fromTest.body.job.id, fromLive.body.job.id);
  t.like(fromTest.body.job, { live: false });
  // Each mode's retry gets its own job back.
  t.is((await post(t, key, body, live)).body.job.id, fromLive.body.job.id);
  t.is((await post(t, key, body, test)).body.job.id, fromTest.body.job.id);
  // A conflict names the key as it was sent.
  const other = await post(t, key, { ...body, reference: 'another' }, test);
  t.is(other.status, 409);
  t.is(other.body.error.message, `the Idempotency-Key "${key}" was used with another request`);
});

/** Creates the job of {@link jobBody} through the jobs service, as the gateway does with a claim. */
function createWithClaim(t: { context: Ctx }, key: string, claim: string) {
  return t.context.jobs.createJob(
    CreateJobRequest.fromPartial({
      orgId: t.context.orgId,
      actor: 'api_key:test',
      live: true,
      printerId: t.context.printerId,
      reference: key,
      inline: { contentType: 'text/plain', data: Buffer.from('hello') },
      idempotency: { key, claim },
    }),
  );
}

/** The fingerprint the gateway gives a POST of `body` to the job list. */
function fingerprintOfRequest(t: { context: Ctx }, body: unknown): string {
  return requestFingerprint(
    'POST',
    `/v1/orgs/${t.context.orgId}/jobs`,
    'application/json',
    Buffer.from(JSON.stringify(body)),
  );
}
