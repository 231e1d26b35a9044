/**
 * People and roles through the console's endpoints and `/v1` with a session: invitations (single
 * use, expiring), what each role may do, the last owner, keys and stations made by members.
 */
import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { V1_ROUTES } from '../gateway/routes/v1.js';
import { SCOPES } from '../lib/credentials.js';
import {
  Browser,
  type ErrorBody,
  type InvitationAnswer,
  invite,
  member,
  PASSWORD,
  tokenOf,
} from './helpers/console.js';
import { connectLink, printer } from './helpers/link-client.js';
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

// Some tests move the clock by days; they run one after another.
const test = anyTest.serial as TestFn<{ sys: TestSystem; orgId: string }>;

test.before(async (t) => {
  const sys = await startTestSystem();
  t.context = { sys, orgId: await createOrg(sys.url, 'Acme Print') };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface Person {
  person_id: string;
  email: string;
  display_name: string;
  role: string;
  joined_at: string;
}

interface People {
  items: Person[];
  invitations: { id: string; email: string; role: string; expires_at: string }[];
}

test('an invitation is single-use', async (t) => {
  const { sys, orgId } = t.context;
  const { url } = await invite(sys.url, orgId, 'once@example.com', 'viewer');
  const first = await new Browser(sys.url).accept(url, PASSWORD);
  t.is(first.status, 200);
  const again = await new Browser(sys.url).accept(url, PASSWORD);
  const body = again.body as unknown as ErrorBody;
  t.is(again.status, 404);
  t.is(body.error.code, 'not_found');
  t.regex(body.error.message, /not valid/);
  const info = await call(sys.url, 'GET', `/console/v1/invitations/${tokenOf(url)}`);
  t.is(info.status, 404);
});

test('an invitation expires after 7 days; unknown tokens are not valid either', async (t) => {
  const { sys, orgId } = t.context;
  const { url } = await invite(sys.url, orgId, 'late@example.com', 'viewer');
  const token = tokenOf(url);
  t.is((await call(sys.url, 'GET', `/console/v1/invitations/${token}`)).status, 200);
  sys.clock.advance(7 * 24 * 60 * 60 * 1000);
  t.is((await call(sys.url, 'GET', `/console/v1/invitations/${token}`)).status, 404);
  t.is((await new Browser(sys.url).accept(url, PASSWORD)).status, 404);
  for (const bad of ['svc_inv_unknown', 'nothing', `svc_inv_${'A'.repeat(43)}`]) {
    const res = await call<ErrorBody>(sys.url, 'GET', `/console/v1/invitations/${bad}`);
    t.is(res.status, 404, bad);
    t.is(res.body.error.code, 'not_found');
  }
});

test('accepting checks the password (10 to 200 characters) and the display name', async (t) => {
  const { sys, orgId } = t.context;
  const { url } = await invite(sys.url, orgId, 'short@example.com', 'viewer');
  const short = await new Browser(sys.url).accept(url, 'too short');
  t.is(short.status, 400);
  t.is((short.body as unknown as ErrorBody).error.param, 'password');
  const noName = await new Browser(sys.url).accept(url, PASSWORD, '  ');
  t.is(noName.status, 400);
  t.is((noName.body as unknown as ErrorBody).error.param, 'display_name');
  // Refusals leave the invitation valid.
  t.is((await new Browser(sys.url).accept(url, PASSWORD)).status, 200);
});

test('a person who exists accepts with their own password and joins a second organization', async (t) => {
  const { sys, orgId } = t.context;
  const other = await createOrg(sys.url, 'Second Org');
  await member(sys.url, orgId, 'developer', 'two@example.com');
  const { url } = await invite(sys.url, other, 'TWO@example.com', 'viewer');
  const wrong = await new Browser(sys.url).accept(url, 'another password entirely');
  t.is(wrong.status, 401);
  const right = await new Browser(sys.url).accept(url, PASSWORD, 'ignored');
  t.is(right.status, 200);
  t.deepEqual(
    right.body.orgs.map((o) => [o.name, o.role]),
    [
      ['Acme Print', 'developer'],
      ['Second Org', 'viewer'],
    ],
  );
  t.is(right.body.person.display_name, 'developer person');
});

test('people lists members and pending invitations; a member cannot be invited again', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Listed');
  const owner = await member(sys.url, orgId, 'owner', 'lister@example.com');
  const pending = await owner.call<InvitationAnswer>(
    'POST',
    `/console/v1/orgs/${orgId}/invitations`,
    { body: { email: 'pending@example.com', role: 'developer' } },
  );
  t.is(pending.status, 201);
  t.regex(pending.body.url, /\/console\/invitation#svc_inv_/);
  const res = await owner.call<People>('GET', `/console/v1/orgs/${orgId}/people`);
  t.is(res.status, 200);
  t.deepEqual(
    res.body.items.map((p) => [p.email, p.role, p.display_name]),
    [['lister@example.com', 'owner', 'owner person']],
  );
  t.deepEqual(
    res.body.invitations.map((i) => [i.email, i.role]),
    [['pending@example.com', 'developer']],
  );
  const twice = await owner.call<ErrorBody>('POST', `/console/v1/orgs/${orgId}/invitations`, {
    body: { email: 'LISTER@example.com', role: 'viewer' },
  });
  t.is(twice.status, 409);
  t.is(twice.body.error.code, 'conflict');
});

test('a viewer is refused every state-changing /v1 and /console/v1 request, naming the role', async (t) => {
  const { sys, orgId } = t.context;
  const viewer = await member(sys.url, orgId, 'viewer');
  const writes = V1_ROUTES.filter((r) => r.method !== 'GET' && r.scope !== null);
  t.true(writes.length > 5);
  for (const route of writes) {
    const path = route.path
      .replace(':org', orgId)
      .replace(':id', randomUUID())
      .replace(':delivery', randomUUID());
    const res = await viewer.call<ErrorBody>(route.method, path, { body: {} });
    t.is(res.status, 403, `${route.method} ${route.path}`);
    t.is(res.body.error.code, 'forbidden');
    t.is(res.body.error.message, 'this needs the developer role; you are a viewer');
  }
  const consoleWrites: [string, string, unknown, string][] = [
    ['POST', `/console/v1/orgs/${orgId}/keys`, { mode: 'live', scopes: [] }, 'developer'],
    ['DELETE', `/console/v1/orgs/${orgId}/keys/${randomUUID()}`, undefined, 'developer'],
    ['POST', `/console/v1/orgs/${orgId}/stations`, { name: 'S' }, 'admin'],
    [
      'POST',
      `/console/v1/orgs/${orgId}/invitations`,
      { email: 'x@example.com', role: 'viewer' },
      'admin',
    ],
    ['PATCH', `/console/v1/orgs/${orgId}/people/${randomUUID()}`, { role: 'owner' }, 'admin'],
    ['DELETE', `/console/v1/orgs/${orgId}/people/${randomUUID()}`, undefined, 'admin'],
    ['PATCH', `/console/v1/orgs/${orgId}/settings`, { name: 'Renamed' }, 'owner'],
  ];
  for (const [method, path, body, role] of consoleWrites) {
    const res = await viewer.call<ErrorBody>(method, path, body === undefined ? {} : { body });
    t.is(res.status, 403, `${method} ${path}`);
    t.is(res.body.error.message, `this needs the ${role} role; you are a viewer`);
  }
  // What a viewer may see, it sees.
  for (const path of ['people', 'keys', 'stations', 'overview', 'settings']) {
    t.is((await viewer.call('GET', `/console/v1/orgs/${orgId}/${path}`)).status, 200, path);
  }
});

test('an admin manages people other than owners; only owners touch owners', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Roles');
  const owner = await member(sys.url, orgId, 'owner', 'roles-owner@example.com');
  const admin = await member(sys.url, orgId, 'admin', 'roles-admin@example.com');
  await member(sys.url, orgId, 'viewer', 'roles-viewer@example.com');
  const people = (await admin.call<People>('GET', `/console/v1/orgs/${orgId}/people`)).body.items;
  const id = (email: string) => people.find((p) => p.email === email)?.person_id ?? '';

  const inviteOwner = await admin.call<ErrorBody>('POST', `/console/v1/orgs/${orgId}/invitations`, {
    body: { email: 'new-owner@example.com', role: 'owner' },
  });
  t.is(inviteOwner.status, 403);
  t.regex(inviteOwner.body.error.message, /needs the owner role; you are an admin/);

  const promote = await admin.call<ErrorBody>(
    'PATCH',
    `/console/v1/orgs/${orgId}/people/${id('roles-viewer@example.com')}`,
    { body: { role: 'owner' } },
  );
  t.is(promote.status, 403);
  const demoteOwner = await admin.call(
    'PATCH',
    `/console/v1/orgs/${orgId}/people/${id('roles-owner@example.com')}`,
    { body: { role: 'viewer' } },
  );
  t.is(demoteOwner.status, 403);
  const removeOwner = await admin.call(
    'DELETE',
    `/console/v1/orgs/${orgId}/people/${id('roles-owner@example.com')}`,
  );
  t.is(removeOwner.status, 403);

  const toDeveloper = await admin.call<{ member: Person }>(
    'PATCH',
    `/console/v1/orgs/${orgId}/people/${id('roles-viewer@example.com')}`,
    { body: { role: 'developer' } },
  );
  t.is(toDeveloper.status, 200);
  t.like(toDeveloper.body.member, { email: 'roles-viewer@example.com', role: 'developer' });

  const toOwner = await owner.call(
    'PATCH',
    `/console/v1/orgs/${orgId}/people/${id('roles-admin@example.com')}`,
    { body: { role: 'owner' } },
  );
  t.is(toOwner.status, 200);
  // The new role applies to the person's session at once, on /console/v1 and /v1.
  const rename = await admin.call('PATCH', `/console/v1/orgs/${orgId}/settings`, {
    body: { name: 'Roles Renamed' },
  });
  t.is(rename.status, 200);
  t.like(rename.body, { settings: { name: 'Roles Renamed' } });

  const removed = await owner.call(
    'DELETE',
    `/console/v1/orgs/${orgId}/people/${id('roles-viewer@example.com')}`,
  );
  t.is(removed.status, 204);
  const after = (await owner.call<People>('GET', `/console/v1/orgs/${orgId}/people`)).body.items;
  t.false(after.some((p) => p.email === 'roles-viewer@example.com'));
});

test('the last owner can be neither demoted nor removed (409)', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Last Owner');
  const owner = await member(sys.url, orgId, 'owner', 'last-owner@example.com');
  const me = (await owner.call<People>('GET', `/console/v1/orgs/${orgId}/people`)).body.items[0];
  const path = `/console/v1/orgs/${orgId}/people/${me?.person_id}`;
  const demote = await owner.call<ErrorBody>('PATCH', path, { body: { role: 'admin' } });
  t.is(demote.status, 409);
  t.is(demote.body.error.code, 'conflict');
  t.regex(demote.body.error.message, /last owner/);
  const remove = await owner.call<ErrorBody>('DELETE', path);
  t.is(remove.status, 409);

  await member(sys.url, orgId, 'owner', 'second-owner@example.com');
  t.is((await owner.call('PATCH', path, { body: { role: 'admin' } })).status, 200);
  // No longer an owner, the person cannot rename the organization.
  const rename = await owner.call<ErrorBody>('PATCH', `/console/v1/orgs/${orgId}/settings`, {
    body: { name: 'Nope' },
  });
  t.is(rename.status, 403);
  t.is(rename.body.error.message, 'this needs the owner role; you are an admin');
});

test('a removed member’s session answers 404 for the organization at once', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Removal');
  const owner = await member(sys.url, orgId, 'owner', 'removal-owner@example.com');
  const dev = await member(sys.url, orgId, 'developer', 'removal-dev@example.com');
  t.is((await dev.call('GET', `/v1/orgs/${orgId}/jobs`)).status, 200);
  const people = (await owner.call<People>('GET', `/console/v1/orgs/${orgId}/people`)).body.items;
  const devId = people.find((p) => p.email === 'removal-dev@example.com')?.person_id;
  t.is((await owner.call('DELETE', `/console/v1/orgs/${orgId}/people/${devId}`)).status, 204);
  t.is((await dev.call('GET', `/v1/orgs/${orgId}/jobs`)).status, 404);
});

test('a developer creates a key (its secret once), uses it, and revokes it', async (t) => {
  const { sys, orgId } = t.context;
  const dev = await member(sys.url, orgId, 'developer');
  const created = await dev.call<{ key: { id: string; scopes: string[] }; secret: string }>(
    'POST',
    `/console/v1/orgs/${orgId}/keys`,
    { body: { name: 'ERP', mode: 'live', scopes: ['jobs:read'] } },
  );
  t.is(created.status, 201);
  t.regex(created.body.secret, /^svc_live_/);
  const { key, secret } = created.body;
  t.is((await call(sys.url, 'GET', '/v1/key', { token: secret })).status, 200);
  const list = await dev.call<{ items: Record<string, unknown>[] }>(
    'GET',
    `/console/v1/orgs/${orgId}/keys`,
  );
  const listed = list.body.items.find((k) => k.id === key.id);
  t.like(listed, { name: 'ERP', scopes: ['jobs:read'] });
  t.false(JSON.stringify(list.body).includes(secret), 'the list never shows a secret');
  t.is((await dev.call('DELETE', `/console/v1/orgs/${orgId}/keys/${key.id}`)).status, 204);
  t.is((await call(sys.url, 'GET', '/v1/key', { token: secret })).status, 401);
});

test('an admin creates a station and gets its device token once', async (t) => {
  const { sys, orgId } = t.context;
  const admin = await member(sys.url, orgId, 'admin');
  const developer = await member(sys.url, orgId, 'developer');
  const refused = await developer.call<ErrorBody>('POST', `/console/v1/orgs/${orgId}/stations`, {
    body: { name: 'Back office' },
  });
  t.is(refused.status, 403);
  t.is(refused.body.error.message, 'this needs the admin role; you are a developer');
  const created = await admin.call<{ station: { id: string; name: string }; token: string }>(
    'POST',
    `/console/v1/orgs/${orgId}/stations`,
    { body: { name: 'Front desk' } },
  );
  t.is(created.status, 201);
  t.regex(created.body.token, /^svc_dev_[0-9A-Za-z]{43}$/);
  const list = await developer.call<{ items: { id: string; name: string; online: boolean }[] }>(
    'GET',
    `/console/v1/orgs/${orgId}/stations`,
  );
  t.like(
    list.body.items.find((s) => s.id === created.body.station.id),
    { name: 'Front desk', online: false },
  );
  t.false(JSON.stringify(list.body).includes(created.body.token));
  const overview = await developer.call<{ stations: { online: number; total: number } }>(
    'GET',
    `/console/v1/orgs/${orgId}/overview`,
  );
  t.is(overview.status, 200);
  t.true(overview.body.stations.total >= 1);
  t.is(overview.body.stations.online, 0);
});

test('members print through /v1 with their session: the job names the person; the overview counts', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Printing');
  const admin = await member(sys.url, orgId, 'admin');
  const dev = await member(sys.url, orgId, 'developer');
  const viewer = await member(sys.url, orgId, 'viewer');
  const station = await admin.call<{ station: { id: string }; token: string }>(
    'POST',
    `/console/v1/orgs/${orgId}/stations`,
    { body: { name: 'Desk' } },
  );
  const link = await connectLink(sys.linkAddress, station.body.token, [printer('front')]);
  t.teardown(() => link.close());
  const printers = await eventually(
    () => viewer.call<{ printers: { id: string }[] }>('GET', `/v1/orgs/${orgId}/printers`),
    (res) => res.body.printers?.length === 1,
  );
  const printerId = printers.body.printers[0]?.id;

  const created = await dev.call<{ job: { id: string } }>('POST', `/v1/orgs/${orgId}/jobs`, {
    body: { printer_id: printerId, content: { type: 'text', data: 'hello' } },
  });
  t.is(created.status, 201);
  const job = await viewer.call<{ events: { actor: string }[] }>(
    'GET',
    `/v1/orgs/${orgId}/jobs/${created.body.job.id}`,
  );
  t.is(job.status, 200);
  t.is(job.body.events[0]?.actor, `person:${dev.personId}`);

  const cancel = `/v1/orgs/${orgId}/jobs/${created.body.job.id}/cancel`;
  const refused = await viewer.call<ErrorBody>('POST', cancel);
  t.is(refused.status, 403);
  t.is(refused.body.error.message, 'this needs the developer role; you are a viewer');

  const overview = await viewer.call<{
    stations: { online: number; total: number };
    printers: Record<string, number>;
    jobs_today: Record<string, number>;
  }>('GET', `/console/v1/orgs/${orgId}/overview`);
  t.is(overview.status, 200);
  t.deepEqual(overview.body.stations, { online: 1, total: 1 });
  t.deepEqual(overview.body.printers, { ready: 1 });
  const today = Object.values(overview.body.jobs_today).reduce((a, b) => a + b, 0);
  t.is(today, 1);

  t.is((await dev.call('POST', cancel)).status, 200);
});

test('a member reprints a job in its own mode: a test job stays test, a live one live', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Reprints');
  const dev = await member(sys.url, orgId, 'developer');
  const station = await createStation(sys.url, orgId);
  const link = await connectLink(sys.linkAddress, station.token, [printer('front')]);
  t.teardown(() => link.close());
  const printerId = link.welcome.printerIds.front;
  for (const live of [false, true]) {
    const key = (await createKey(sys.url, orgId, { mode: live ? 'live' : 'test', scopes: SCOPES }))
      .secret;
    const original = await call<{ job: { id: string; live: boolean } }>(
      sys.url,
      'POST',
      `/v1/orgs/${orgId}/jobs`,
      { token: key, body: { printer_id: printerId, content: { type: 'text', data: 'x' } } },
    );
    t.is(original.body.job.live, live);
    const copy = await dev.call<{ job: { live: boolean; reprint_of: string } }>(
      'POST',
      `/v1/orgs/${orgId}/jobs/${original.body.job.id}/reprint`,
    );
    t.is(copy.status, 201);
    t.like(copy.body.job, { live, reprint_of: original.body.job.id });
  }
});

test('an admin deletes a printer from the console; its waiting job fails saying why', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Pruning');
  const admin = await member(sys.url, orgId, 'admin');
  const dev = await member(sys.url, orgId, 'developer');
  const station = await admin.call<{ station: { id: string }; token: string }>(
    'POST',
    `/console/v1/orgs/${orgId}/stations`,
    { body: { name: 'Back office' } },
  );
  // The printer is stopped, so a job for it waits queued.
  const link = await connectLink(sys.linkAddress, station.body.token, [
    printer('old', 'offline', 'unplugged'),
  ]);
  t.teardown(() => link.close());
  const listed = await eventually(
    () => admin.call<{ printers: { id: string }[] }>('GET', `/v1/orgs/${orgId}/printers`),
    (res) => res.body.printers?.length === 1,
  );
  const printerId = listed.body.printers[0]?.id as string;
  const created = await dev.call<{ job: { id: string } }>('POST', `/v1/orgs/${orgId}/jobs`, {
    body: { printer_id: printerId, content: { type: 'text', data: 'waiting' } },
  });
  t.is(created.status, 201);

  const path = `/console/v1/orgs/${orgId}/printers/${printerId}`;
  const refused = await dev.call<ErrorBody>('DELETE', path);
  t.is(refused.status, 403);
  t.is(refused.body.error.message, 'this needs the admin role; you are a developer');
  const other = await member(sys.url, await createOrg(sys.url, 'Elsewhere'), 'owner');
  t.is((await other.call('DELETE', path)).status, 404, 'another organization’s session');

  t.is((await admin.call('DELETE', path)).status, 204);
  const job = await admin.call<{ job: { status: string; status_detail: string } }>(
    'GET',
    `/v1/orgs/${orgId}/jobs/${created.body.job.id}`,
  );
  t.is(job.body.job.status, 'failed');
  t.regex(job.body.job.status_detail, /printer "old" was deleted/);
  t.is((await admin.call('DELETE', path)).status, 404, 'it is gone');
});

test('the operator’s invitation is described, and names a created resource', async (t) => {
  const { sys, orgId } = t.context;
  const res = await call<InvitationAnswer>(sys.url, 'POST', `/admin/v1/orgs/${orgId}/invitations`, {
    token: OPERATOR_TOKEN,
    body: { email: 'described@example.com', role: 'developer' },
  });
  t.is(res.status, 201);
  const location = res.headers.get('location') ?? '';
  t.is(location, `/admin/v1/orgs/${orgId}/invitations/${res.body.invitation.id}`);
  const got = await call<{
    invitation: { used_at: string | null; created_at: string; invited_by: unknown };
  }>(sys.url, 'GET', location, { token: OPERATOR_TOKEN });
  t.is(got.status, 200);
  t.like(got.body.invitation, {
    used_at: null,
    created_at: new Date(sys.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    invited_by: null,
  });
  const bad = await call<ErrorBody>(sys.url, 'POST', `/admin/v1/orgs/${orgId}/invitations`, {
    token: OPERATOR_TOKEN,
    body: { email: 'x@example.com', role: 'superuser' },
  });
  t.is(bad.status, 400);
  t.is(bad.body.error.param, 'role');
  const unknownOrg = await call(sys.url, 'POST', `/admin/v1/orgs/${randomUUID()}/invitations`, {
    token: OPERATOR_TOKEN,
    body: { email: 'x@example.com', role: 'viewer' },
  });
  t.is(unknownOrg.status, 404);
});

test('spool admin invite prints the invitation and its link, as the admin API answers', async (t) => {
  const { sys, orgId } = t.context;
  const env = { SPOOL_URL: sys.url, SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN };
  const res = await runSpool(
    ['admin', 'invite', '--org', orgId, '--email', 'Cli@Example.com', '--role', 'admin'],
    env,
  );
  t.is(res.code, 0, res.stderr);
  const printed = JSON.parse(res.stdout) as InvitationAnswer;
  t.like(printed.invitation, { email: 'cli@example.com', role: 'admin' });
  t.regex(printed.url, new RegExp(`^${sys.url}/console/invitation#svc_inv_`));
  // The printed link works once.
  const accepted = await new Browser(sys.url).accept(printed.url, PASSWORD);
  t.is(accepted.status, 200);
  t.deepEqual(
    accepted.body.orgs.map((o) => o.role),
    ['admin'],
  );
  const bad = await runSpool(
    ['admin', 'invite', '--org', orgId, '--email', 'x@example.com', '--role', 'root'],
    env,
  );
  t.not(bad.code, 0);
  t.regex(bad.stderr, /root/);
});

test('settings: owners rename the organization; retention stays the operator’s', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Settled');
  const owner = await member(sys.url, orgId, 'owner');
  interface Settings {
    settings: {
      id: string;
      name: string;
      job_document_retention_days: number;
      upload_retention_days: number;
    };
  }
  // Another replica has the session, with the organization's name, cached.
  const second = await sys.system.startGateway();
  t.teardown(() => second.stop());
  const elsewhere = new Browser(second.url);
  elsewhere.cookie = owner.cookie;
  type SessionAnswer = { orgs: { id: string; name: string }[] };
  const nameIn = async (who: Browser) =>
    (await who.call<SessionAnswer>('GET', '/console/v1/session')).body.orgs.find(
      (o) => o.id === orgId,
    )?.name;
  t.is(await nameIn(elsewhere), 'Settled');

  const got = await owner.call<Settings>('GET', `/console/v1/orgs/${orgId}/settings`);
  t.is(got.status, 200);
  t.deepEqual(got.body.settings, {
    id: orgId,
    name: 'Settled',
    job_document_retention_days: 30,
    upload_retention_days: 7,
  });
  const renamed = await owner.call<Settings>('PATCH', `/console/v1/orgs/${orgId}/settings`, {
    body: { name: 'Settled Co', job_document_retention_days: 30 },
  });
  t.is(renamed.status, 200);
  t.is(renamed.body.settings.name, 'Settled Co');
  t.is(await nameIn(owner), 'Settled Co', 'the session says the new name at once');
  await eventually(
    () => nameIn(elsewhere),
    (name) => name === 'Settled Co',
    1_000,
  );
  const org = await call<{ org: { name: string } }>(sys.url, 'GET', `/admin/v1/orgs/${orgId}`, {
    token: OPERATOR_TOKEN,
  });
  t.is(org.body.org.name, 'Settled Co');
  const retention = await owner.call<ErrorBody>('PATCH', `/console/v1/orgs/${orgId}/settings`, {
    body: { upload_retention_days: 1 },
  });
  t.is(retention.status, 400);
  t.is(retention.body.error.param, 'upload_retention_days');
  t.regex(retention.body.error.message, /operator/);
});
