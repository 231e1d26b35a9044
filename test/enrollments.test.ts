import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { enroll, GoneError, NotFoundError, Spool } from '../client/index.js';
import {
  type RedeemEnrollmentResponse,
  StationEnrollmentClient,
} from '../gen/spool/v1/stations.js';
import { SCOPES } from '../lib/credentials.js';
import { connectLink, printer } from './helpers/link-client.js';
import { runSpool, spawnSpool } from './helpers/spool.js';
import {
  call,
  createKey,
  createOrg,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Ctx {
  sys: TestSystem;
  orgA: string;
  orgB: string;
  keyA: string;
  keyB: string;
  locationA: string;
}

const test = anyTest as TestFn<Ctx>;

const CODE = /^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{2}$/;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The clock's time as the API writes times: to the second. */
const seconds = (sys: TestSystem) => Math.floor(sys.clock.now().getTime() / 1000) * 1000;

test.before(async (t) => {
  // Behind one proxy: each test's public requests come from an address of its own.
  const sys = await startTestSystem({ trustProxy: 1 });
  const orgA = await createOrg(sys.url, 'Acme Print');
  const orgB = await createOrg(sys.url, 'Other Print');
  const keyA = (await createKey(sys.url, orgA, { scopes: SCOPES })).secret;
  const keyB = (await createKey(sys.url, orgB, { scopes: SCOPES })).secret;
  const location = await call<{ location: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgA}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'Berlin' } },
  );
  t.context = { sys, orgA, orgB, keyA, keyB, locationA: location.body.location.id };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

let ip = 1;
/** An address of its own for each series of public requests, so that limits do not interfere. */
const nextIp = () => `198.51.100.${ip++}`;

interface EnrollmentBody {
  enrollment: {
    id: string;
    code?: string;
    station_name: string;
    location_id: string | null;
    expires_at: string;
    created_at: string;
  };
  error: { code: string; param?: string; message: string };
}

interface Enrolled {
  station: { id: string; org_id: string; name: string; location_id: string | null };
  token: string;
  error: { code: string; param?: string; message: string };
}

function createEnrollment(t: ExecutionContext<Ctx>, body: Record<string, unknown>, key?: string) {
  return call<EnrollmentBody>(t.context.sys.url, 'POST', `/v1/orgs/${t.context.orgA}/enrollments`, {
    token: key ?? t.context.keyA,
    body,
  });
}

async function newCode(t: ExecutionContext<Ctx>, body: Record<string, unknown> = {}) {
  const res = await createEnrollment(t, { station_name: 'Front desk', ...body });
  if (res.status !== 201) throw new Error(`create enrollment answered ${res.status}`);
  return res.body.enrollment.code as string;
}

function redeem(t: ExecutionContext<Ctx>, code: unknown, from = nextIp()) {
  return call<Enrolled>(t.context.sys.url, 'POST', '/v1/public/enroll', {
    body: { code },
    headers: { 'x-forwarded-for': from },
  });
}

/** The station's printer `name`, once it shows its station online through the API. */
async function onlinePrinter(t: ExecutionContext<Ctx>, name: string, stationId: string) {
  const { sys, orgA, keyA } = t.context;
  return eventually(
    () =>
      call<{ printers: Array<{ name: string; station_id: string; station_online: boolean }> }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgA}/printers?limit=200`,
        { token: keyA },
      ),
    (r) =>
      r.body.printers.some(
        (p) => p.name === name && p.station_id === stationId && p.station_online,
      ),
    30_000,
  );
}

test.serial(
  'a code is XXXX-XXXX-XX, lasts 24 hours or as expires_in says, and is checked',
  async (t) => {
    const { sys } = t.context;
    const res = await createEnrollment(t, { station_name: 'Front desk' });
    t.is(res.status, 201);
    t.is(res.headers.get('location'), null);
    t.regex(res.body.enrollment.code ?? '', CODE);
    t.like(res.body.enrollment, { station_name: 'Front desk', location_id: null });
    t.is(Date.parse(res.body.enrollment.expires_at), seconds(sys) + DAY_MS);
    t.is(Date.parse(res.body.enrollment.created_at), seconds(sys));

    const week = await createEnrollment(t, {
      station_name: 'Back office',
      location_id: t.context.locationA,
      expires_in: 7 * 24 * 3600,
    });
    t.is(week.status, 201);
    t.is(week.body.enrollment.location_id, t.context.locationA);
    t.is(Date.parse(week.body.enrollment.expires_at), seconds(sys) + 7 * DAY_MS);
    t.not(week.body.enrollment.code, res.body.enrollment.code);

    for (const [body, param] of [
      [{ station_name: 'x', expires_in: 59 }, 'expires_in'],
      [{ station_name: 'x', expires_in: 30 * 24 * 3600 + 1 }, 'expires_in'],
      [{ station_name: '' }, 'station_name'],
      [{}, 'station_name'],
      [{ station_name: 'x', location_id: 'nowhere' }, 'location_id'],
      // Another organization's location is none of this one's.
      [{ station_name: 'x', location_id: '00000000-0000-4000-8000-000000000000' }, 'location_id'],
    ] as const) {
      const bad = await createEnrollment(t, body);
      t.is(bad.status, 400, JSON.stringify(body));
      t.is(bad.body.error.param, param, JSON.stringify(body));
    }
    const unknown = await createEnrollment(t, { station_name: 'x', colour: 'red' });
    t.is(unknown.status, 400);
    t.is(unknown.body.error.code, 'unknown_field');
  },
);

test.serial(
  'a code redeemed over HTTP makes its station in its organization, and its token links; the same code again is 410',
  async (t) => {
    const { sys, orgA, orgB, locationA } = t.context;
    const code = await newCode(t, { station_name: 'Till 1', location_id: locationA });
    // Typed loosely: lower case, spaces for dashes.
    const res = await redeem(t, ` ${code.toLowerCase().replaceAll('-', ' ')} `);
    t.is(res.status, 201, JSON.stringify(res.body));
    t.is(res.headers.get('location'), null);
    t.like(res.body.station, { org_id: orgA, name: 'Till 1', location_id: locationA });
    t.regex(res.body.token, /^svc_dev_[0-9A-Za-z]{43}$/);

    const link = await connectLink(sys.linkAddress, res.body.token, [printer('till')]);
    t.teardown(() => link.close());
    t.is(link.welcome.stationId, res.body.station.id);
    t.is(link.welcome.orgId, orgA);
    t.is(link.welcome.stationName, 'Till 1');

    // The station is organization A's, and none of B's.
    const admin = { token: OPERATOR_TOKEN };
    const path = (org: string) => `/admin/v1/orgs/${org}/stations/${res.body.station.id}`;
    t.is((await call(sys.url, 'GET', path(orgA), admin)).status, 200);
    t.is((await call(sys.url, 'GET', path(orgB), admin)).status, 404);
    const printers = await call<{ printers: Array<{ station_id: string }> }>(
      sys.url,
      'GET',
      `/v1/orgs/${orgB}/printers`,
      { token: t.context.keyB },
    );
    t.false(printers.body.printers.some((p) => p.station_id === res.body.station.id));

    const again = await redeem(t, code);
    t.is(again.status, 410);
    t.is(again.body.error.code, 'gone');
    t.regex(again.body.error.message, /has been used/);
  },
);

test.serial('two redeeming one code at once make one station', async (t) => {
  const code = await newCode(t, { station_name: 'Twice' });
  const both = await Promise.all([redeem(t, code), redeem(t, code), redeem(t, code)]);
  t.deepEqual(both.map((r) => r.status).sort(), [201, 410, 410]);
  const stations = await call<{ items: Array<{ name: string }> }>(
    t.context.sys.url,
    'GET',
    `/admin/v1/orgs/${t.context.orgA}/stations?limit=200`,
    { token: OPERATOR_TOKEN },
  );
  t.is(stations.body.items.filter((s) => s.name === 'Twice').length, 1);
});

test.serial(
  'an expired code is 410, one never made 404, and what is no code at all 400',
  async (t) => {
    const { sys } = t.context;
    const code = await newCode(t, { expires_in: 60 });
    sys.clock.advance(61_000);
    const expired = await redeem(t, code);
    t.is(expired.status, 410);
    t.is(expired.body.error.code, 'gone');
    t.regex(expired.body.error.message, /expired at /);

    const wrong = await redeem(t, 'ABCD-EFGH-JK');
    t.is(wrong.status, 404);
    t.is(wrong.body.error.code, 'not_found');
    for (const bad of ['hello', 'ABCD-EFGH-J0', '']) {
      const res = await redeem(t, bad);
      t.is(res.status, 400, bad);
      t.is(res.body.error.param, 'code', bad);
    }
    const none = await call<Enrolled>(sys.url, 'POST', '/v1/public/enroll', {
      body: {},
      headers: { 'x-forwarded-for': nextIp() },
    });
    t.is(none.status, 400);
    t.is(none.body.error.param, 'code');
  },
);

test.serial(
  'a client address may try 10 codes a minute: the 11th is 429 with Retry-After, and a minute later it may try again',
  async (t) => {
    const { sys } = t.context;
    const from = nextIp();
    for (let i = 0; i < 10; i++) {
      const res = await redeem(t, 'ABCD-EFGH-JK', from);
      t.is(res.status, 404, `attempt ${i + 1}`);
      t.is(res.headers.get('ratelimit-limit'), '10');
    }
    const refused = await redeem(t, 'ABCD-EFGH-JK', from);
    t.is(refused.status, 429);
    t.is(refused.body.error.code, 'rate_limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    t.true(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
    // Even a good code waits: the limit is on attempts, whatever they try.
    const good = await newCode(t);
    t.is((await redeem(t, good, from)).status, 429);
    // Another address is not held back.
    t.is((await redeem(t, 'ABCD-EFGH-JK')).status, 404);

    sys.clock.advance(60_000);
    t.is((await redeem(t, good, from)).status, 201);
  },
);

test.serial(
  'a key without stations:write is refused, and a key of another organization sees none of it',
  async (t) => {
    const { sys, orgA } = t.context;
    const jobsOnly = (await createKey(sys.url, orgA, { scopes: ['jobs:write', 'jobs:read'] }))
      .secret;
    const refused = await createEnrollment(t, { station_name: 'x' }, jobsOnly);
    t.is(refused.status, 403);
    t.regex(refused.body.error.message, /stations:write/);
    const other = await createEnrollment(t, { station_name: 'x' }, t.context.keyB);
    t.is(other.status, 404);
    const none = await call<EnrollmentBody>(sys.url, 'POST', `/v1/orgs/${orgA}/enrollments`, {
      body: { station_name: 'x' },
    });
    t.is(none.status, 401);
  },
);

test.serial(
  'an Idempotency-Key replay answers the enrollment without its code, which is shown once',
  async (t) => {
    const headers = { 'idempotency-key': `enroll-${Date.now()}` };
    const path = `/v1/orgs/${t.context.orgA}/enrollments`;
    const opts = { token: t.context.keyA, body: { station_name: 'Once' }, headers };
    const first = await call<EnrollmentBody>(t.context.sys.url, 'POST', path, opts);
    t.is(first.status, 201);
    t.regex(first.body.enrollment.code ?? '', CODE);
    const replay = await call<EnrollmentBody>(t.context.sys.url, 'POST', path, opts);
    t.is(replay.status, 201);
    t.is(replay.headers.get('idempotent-replayed'), 'true');
    t.is(replay.body.enrollment.id, first.body.enrollment.id);
    t.false('code' in replay.body.enrollment);
  },
);

test.serial(
  'the client creates a code and enrolls with it; spool stations enroll prints one',
  async (t) => {
    const { sys, orgA, keyA } = t.context;
    const spool = new Spool({ apiKey: keyA, baseUrl: sys.url });
    const enrollment = await spool.enrollments.create({ station_name: 'Kiosk', expires_in: 3600 });
    t.regex(enrollment.code ?? '', CODE);
    const enrolled = await enroll(enrollment.code as string, { baseUrl: sys.url });
    t.like(enrolled.station, { org_id: orgA, name: 'Kiosk' });
    t.regex(enrolled.token, /^svc_dev_/);
    await t.throwsAsync(enroll(enrollment.code as string, { baseUrl: sys.url }), {
      instanceOf: GoneError,
    });
    await t.throwsAsync(enroll('ABCD-EFGH-JK', { baseUrl: sys.url }), {
      instanceOf: NotFoundError,
    });

    const cli = await runSpool(['stations', 'enroll', '--name', 'Label desk', '--url', sys.url], {
      SPOOL_API_KEY: keyA,
    });
    t.is(cli.code, 0, cli.stderr);
    const made = JSON.parse(cli.stdout) as EnrollmentBody;
    t.regex(made.enrollment.code ?? '', CODE);
    t.is(made.enrollment.station_name, 'Label desk');
    const table = await runSpool(
      ['stations', 'enroll', '--name', 'Desk 2', '--format', 'table', '--url', sys.url],
      { SPOOL_API_KEY: keyA },
    );
    t.is(table.code, 0, table.stderr);
    t.regex(table.stdout, /[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{2}\s+Desk 2/);
    const refused = await runSpool(
      ['stations', 'enroll', '--name', 'x', '--expires-in', '10', '--url', sys.url],
      { SPOOL_API_KEY: keyA },
    );
    t.is(refused.code, 1);
    t.regex(refused.stderr, /"param":"expires_in"/);
  },
);

test.serial(
  'spool agent enroll keeps the token over the station link, and spool agent then links with no token',
  async (t) => {
    const { sys, locationA } = t.context;
    const dir = await mkdtemp(join(tmpdir(), 'spool-enroll-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const stateDir = join(dir, 'state');
    const code = await newCode(t, { station_name: 'Warehouse', location_id: locationA });

    const enrolled = await runSpool(
      ['agent', 'enroll', '--server', sys.linkAddress, '--state-dir', stateDir, code],
      {},
    );
    t.is(enrolled.code, 0, enrolled.stderr);
    const said =
      /enrolled: station "Warehouse" \(([0-9a-f-]{36})\) of organization ([0-9a-f-]{36})/.exec(
        enrolled.stdout,
      );
    t.truthy(said, enrolled.stdout);
    const stationId = said?.[1] as string;
    t.is(said?.[2], t.context.orgA);
    t.true(
      enrolled.stdout.includes(`spool agent --server ${sys.linkAddress} --state-dir ${stateDir}`),
    );
    const tokenFile = join(stateDir, 'device-token');
    t.regex(await readFile(tokenFile, 'utf8'), /^svc_dev_[0-9A-Za-z]{43}\n$/);
    t.is((await stat(tokenFile)).mode & 0o777, 0o600);
    t.false(enrolled.stdout.includes(await readFile(tokenFile, 'utf8')));

    // No --token, no token file, no SPOOL_DEVICE_TOKEN: the state directory's token.
    const agent = spawnSpool(
      [
        'agent',
        '--server',
        sys.linkAddress,
        '--state-dir',
        stateDir,
        '--printer',
        `stock=file:${join(dir, 'out')}`,
      ],
      {},
    );
    t.teardown(() => agent.stop());
    await onlinePrinter(t, 'stock', stationId).catch((error: Error) => {
      throw new Error(`${error.message}\nagent output:\n${agent.output()}`);
    });
    const station = await call<{ station: { location_id: string; name: string } }>(
      sys.url,
      'GET',
      `/admin/v1/orgs/${t.context.orgA}/stations/${stationId}`,
      { token: OPERATOR_TOKEN },
    );
    t.like(station.body.station, { name: 'Warehouse', location_id: locationA });
    t.is(await agent.stop(), 0);

    // Enrolled already: refused before the code is spent, which then still works elsewhere.
    const spare = await newCode(t, { station_name: 'Spare' });
    const twice = await runSpool(
      ['agent', 'enroll', '--server', sys.linkAddress, '--state-dir', stateDir, spare],
      {},
    );
    t.is(twice.code, 1);
    t.true(twice.stderr.includes(`${tokenFile} holds the token of a station enrolled already`));
    // A token given otherwise would win over the enrolled one: refused too.
    const other = join(dir, 'other');
    const config = join(dir, 'agent.toml');
    await writeFile(config, 'token = "svc_dev_given"\n');
    const given = await runSpool(
      [
        'agent',
        'enroll',
        '--server',
        sys.linkAddress,
        '--state-dir',
        other,
        '--config',
        config,
        spare,
      ],
      {},
    );
    t.is(given.code, 1);
    t.regex(given.stderr, /already gives the agent a token/);

    // A used code, and one never made, are said as the server says them.
    const used = await runSpool(
      ['agent', 'enroll', '--server', sys.linkAddress, '--state-dir', other, code],
      {},
    );
    t.is(used.code, 1);
    t.regex(used.stderr, /refused the code: this enrollment code has been used/);
    const wrong = await runSpool(
      ['agent', 'enroll', '--server', sys.linkAddress, '--state-dir', other, 'ABCD-EFGH-JK'],
      {},
    );
    t.is(wrong.code, 1);
    t.regex(wrong.stderr, /refused the code: no such enrollment code/);
    t.is((await stat(other).catch(() => undefined)) === undefined, true);
    // The spare code was never spent.
    t.is((await redeem(t, spare)).status, 201);
  },
);

test.serial(
  "the station link's Enroll is limited per peer address: the 11th try in a minute is RESOURCE_EXHAUSTED",
  async (t) => {
    const { sys } = t.context;
    // Whatever earlier tests tried from this address is over a minute old.
    sys.clock.advance(61_000);
    const client = new StationEnrollmentClient(sys.linkAddress, credentials.createInsecure());
    t.teardown(() => client.close());
    const tryCode = (code: string) =>
      new Promise<RedeemEnrollmentResponse | ServiceError>((resolve) =>
        client.enroll({ code }, new Metadata(), (err, res) => resolve(err ?? res)),
      );
    for (let i = 0; i < 10; i++) {
      const res = (await tryCode('ABCD-EFGH-JK')) as ServiceError;
      t.is(res.code, status.NOT_FOUND, `attempt ${i + 1}`);
    }
    const refused = (await tryCode('ABCD-EFGH-JK')) as ServiceError;
    t.is(refused.code, status.RESOURCE_EXHAUSTED);
    t.regex(refused.details, /too many enrollment attempts from this address/);
    const retryAfter = Number(refused.metadata.get('spool-retry-after')[0]);
    t.true(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
    const good = await newCode(t, { station_name: 'Late' });
    t.is(((await tryCode(good)) as ServiceError).code, status.RESOURCE_EXHAUSTED);

    sys.clock.advance(60_000);
    const done = (await tryCode(good)) as RedeemEnrollmentResponse;
    t.is(done.station?.name, 'Late');
    t.is(done.station?.orgId, t.context.orgA);
    t.regex(done.token, /^svc_dev_/);
  },
);

test.serial(
  "a platform's key makes a code on its child organization, whose station is the child's",
  async (t) => {
    const { sys, orgA, keyA } = t.context;
    const child = await call<{ org: { id: string } }>(
      sys.url,
      'POST',
      `/v1/orgs/${orgA}/children`,
      {
        token: keyA,
        body: { name: 'Corner Bakery' },
      },
    );
    t.is(child.status, 201);
    const childId = child.body.org.id;
    const made = await call<EnrollmentBody>(sys.url, 'POST', `/v1/orgs/${childId}/enrollments`, {
      token: keyA,
      body: { station_name: 'Counter' },
    });
    t.is(made.status, 201);
    const res = await redeem(t, made.body.enrollment.code);
    t.is(res.status, 201);
    t.is(res.body.station.org_id, childId);
    const admin = { token: OPERATOR_TOKEN };
    const path = (org: string) => `/admin/v1/orgs/${org}/stations/${res.body.station.id}`;
    t.is((await call(sys.url, 'GET', path(childId), admin)).status, 200);
    t.is((await call(sys.url, 'GET', path(orgA), admin)).status, 404);
  },
);
