import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { member } from './helpers/console.js';
import { freePort } from './helpers/ports.js';
import { runSpool } from './helpers/spool.js';
import {
  call,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

// One at a time: each test starts `spool` commands, whose starts at once on two busy cores kept
// the accounts service from answering within its deadline.
const test = anyTest.serial as TestFn<{ sys: TestSystem; env: Record<string, string> }>;

test.before(async (t) => {
  const sys = await startTestSystem();
  // The environment points elsewhere with a wrong token: the flags must win over both.
  const env = {
    SPOOL_URL: `http://127.0.0.1:${await freePort()}`,
    SPOOL_ADMIN_TOKEN: 'not-the-token',
  };
  t.context = { sys, env };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

async function spool(
  t: { context: { sys: TestSystem; env: Record<string, string> } },
  args: string[],
) {
  // One second apart, so that the audit log's newest-first order is the order of the commands.
  t.context.sys.clock.advance(1000);
  const res = await runSpool(
    ['admin', ...args, '--url', t.context.sys.url, '--token', OPERATOR_TOKEN],
    t.context.env,
  );
  return {
    ...res,
    json: res.stdout.startsWith('{')
      ? (JSON.parse(res.stdout) as Record<string, unknown>)
      : undefined,
  };
}

const http = (t: { context: { sys: TestSystem } }, path: string) =>
  call(t.context.sys.url, 'GET', `/admin/v1${path}`, { token: OPERATOR_TOKEN });

test('spool admin lists and gets with --url and --token, printing what the API answers', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Cli Harbour Org');
  const station = await createStation(sys.url, org, { name: 'Desk' });
  const [orgs, stations, got, printers, locations, templates] = await Promise.all([
    spool(t, ['org', 'list', '--name', 'cli harbour']),
    spool(t, ['station', 'list', '--org', org]),
    spool(t, ['station', 'get', '--org', org, '--id', station.id]),
    spool(t, ['printer', 'list', '--org', org, '--station', station.id]),
    spool(t, ['location', 'list', '--org', org]),
    spool(t, ['template', 'list', '--org', org]),
  ]);
  t.is(orgs.code, 0, orgs.stderr);
  t.deepEqual(orgs.json, (await http(t, '/orgs?q=cli%20harbour')).body);
  t.deepEqual(
    ((orgs.json?.items ?? []) as Array<{ id: string }>).map((o) => o.id),
    [org],
  );
  t.deepEqual(stations.json, (await http(t, `/orgs/${org}/stations`)).body);
  t.deepEqual(got.json, (await http(t, `/orgs/${org}/stations/${station.id}`)).body);
  t.deepEqual(printers.json, { items: [], next_cursor: '' });
  t.deepEqual(locations.json, { items: [], next_cursor: '' });
  t.deepEqual(templates.json, { items: [], next_cursor: '' });
});

test('spool admin updates and deletes, says why a delete is refused, and the audit log shows it all', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Cli Changes Org');
  const loc = await call<{ location: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${org}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'Hall' } },
  );
  const hall = loc.body.location.id;
  const station = await createStation(sys.url, org, { name: 'Desk', location_id: hall });

  const refused = await spool(t, ['location', 'delete', '--org', org, '--id', hall]);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /"code":\s*"conflict"/);

  const moved = await spool(t, [
    'station',
    'update',
    '--org',
    org,
    '--id',
    station.id,
    '--name',
    'Front desk',
    '--no-location',
  ]);
  t.is(moved.code, 0, moved.stderr);
  t.like(moved.json?.station, { name: 'Front desk', location_id: null });

  const renamed = await spool(t, [
    'location',
    'update',
    '--org',
    org,
    '--id',
    hall,
    '--name',
    'Lobby',
  ]);
  t.like(renamed.json?.location, { name: 'Lobby' });
  const deleted = await spool(t, ['location', 'delete', '--org', org, '--id', hall]);
  t.deepEqual(deleted.json, { deleted: true, id: hall });
  const gone = await spool(t, ['station', 'delete', '--org', org, '--id', station.id]);
  t.deepEqual(gone.json, { deleted: true, id: station.id });

  sys.clock.advance(1000);
  const tpl = await call<{ template: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${org}/templates`,
    { token: OPERATOR_TOKEN, body: { name: 'Label', kind: 'text', body: 'Hi', fields: [] } },
  );
  const renamedTemplate = await spool(t, [
    'template',
    'update',
    '--org',
    org,
    '--id',
    tpl.body.template.id,
    '--name',
    'Badge',
  ]);
  t.like(renamedTemplate.json?.template, { name: 'Badge', body: 'Hi' });

  const log = await spool(t, ['audit', '--org', org, '--actor', 'operator']);
  t.is(log.code, 0, log.stderr);
  t.deepEqual(log.json, (await http(t, `/audit?org=${org}&actor=operator`)).body);
  const items = log.json?.items as Array<{ method: string; route: string; status: number }>;
  t.deepEqual(
    items.slice(0, 7).map((e) => `${e.method} ${e.route} ${e.status}`),
    [
      'PATCH /admin/v1/orgs/:org/templates/:id 200',
      'POST /admin/v1/orgs/:org/templates 201',
      'DELETE /admin/v1/orgs/:org/stations/:id 204',
      'DELETE /admin/v1/orgs/:org/locations/:id 204',
      'PATCH /admin/v1/orgs/:org/locations/:id 200',
      'PATCH /admin/v1/orgs/:org/stations/:id 200',
      'DELETE /admin/v1/orgs/:org/locations/:id 409',
    ],
  );
});

test('every spool admin command takes --url and --token; a webhook command, whose --url is its own, takes --spool-url', async (t) => {
  const res = await runSpool(['admin', 'webhook', 'list', '--help'], {});
  t.regex(res.stdout, /--url <url>/);
  t.regex(res.stdout, /--token <token>/);
  const create = await runSpool(['admin', 'webhook', 'create', '--help'], {});
  t.regex(create.stdout, /--spool-url <url>/);
  t.regex(create.stdout, /--url <url> +the https URL deliveries are POSTed to/);
  const refused = await runSpool(
    ['admin', 'org', 'list', '--url', t.context.sys.url, '--token', 'wrong'],
    {},
  );
  t.is(refused.code, 1);
  t.regex(refused.stderr, /refused the operator token from --token/);
});

test('spool admin lists print a table with --format table, and say on stderr where the next page starts', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Cli Table Org');
  // The test clock stands still: the stations come a second after their organization, so that the
  // audit log, newest first, lists them before it.
  sys.clock.advance(1000);
  const desk = await createStation(sys.url, org, { name: 'Desk' });
  const back = await createStation(sys.url, org, { name: 'Back office' });
  const lines = (out: string) => out.trimEnd().split('\n');

  const first = await spool(t, [
    'station',
    'list',
    '--org',
    org,
    '--limit',
    '1',
    '--format',
    'table',
  ]);
  t.is(first.code, 0, first.stderr);
  const [header, ...rows] = lines(first.stdout);
  t.regex(
    header ?? '',
    /^ID +NAME +ONLINE +LAST SEEN +AGENT +UPDATE +REGION +LOCATION +TOKEN REVOKED$/,
  );
  t.is(rows.length, 1);
  const cursor = /^more: --cursor (\S+)$/.exec(first.stderr.trim())?.[1];
  t.truthy(cursor, first.stderr);
  const rest = await spool(t, [
    'station',
    'list',
    '--org',
    org,
    '--cursor',
    cursor ?? '',
    '--format',
    'table',
  ]);
  t.is(rest.code, 0, rest.stderr);
  t.is(rest.stderr, '');
  // Both stations, each once, never online: no agent, no update, no last contact, "-" for what
  // is empty.
  const all = [...rows, ...lines(rest.stdout).slice(1)].map((r) => r.split(/ {2,}/));
  t.deepEqual(all.map((r) => r[0]).sort(), [desk.id, back.id].sort());
  t.deepEqual(all.map((r) => r.slice(1)).sort(), [
    ['Back office', 'no', '-', '-', '-', 'default', '-', '-'],
    ['Desk', 'no', '-', '-', '-', 'default', '-', '-'],
  ]);

  // Every organization's offline stations, each with its organization (these two among them).
  const down = await spool(t, ['station', 'list-all', '--offline', '--limit', '200']);
  t.is(down.code, 0, down.stderr);
  const listed = (JSON.parse(down.stdout) as { items: Array<{ id: string; org_id: string }> })
    .items;
  for (const station of [desk, back]) {
    t.like(
      listed.find((s) => s.id === station.id),
      { org_id: org },
    );
  }

  const audit = await spool(t, ['audit', '--org', org, '--format', 'table']);
  t.is(audit.code, 0, audit.stderr);
  const entries = lines(audit.stdout).slice(1);
  t.is(entries.length, 3, 'the two stations, and the organization’s own creation');
  t.true(
    entries
      .slice(0, 2)
      .every((e) => /operator +POST +\/admin\/v1\/orgs\/:org\/stations +201 /.test(e)),
  );
  // Each says what it created: the new station's path.
  for (const station of [desk, back]) {
    t.true(entries.some((e) => e.endsWith(`created=/admin/v1/orgs/${org}/stations/${station.id}`)));
  }
  t.regex(entries[2] ?? '', /operator +POST +\/admin\/v1\/orgs +201 /);

  const jobs = await spool(t, [
    'job',
    'list',
    '--org',
    org,
    '--status',
    'failed',
    '--format',
    'table',
  ]);
  t.is(jobs.code, 0, jobs.stderr);
  t.regex(jobs.stdout, /^ID +STATUS +TITLE +REFERENCE +PRINTER +CREATED +DETAIL\n$/);
  // The creation-time filters reach the API as its created_after and created_before.
  const window = await spool(t, [
    'job',
    'list',
    '--org',
    org,
    '--created-after',
    '2026-01-01T00:00:00Z',
    '--created-before',
    '2100-01-01T00:00:00Z',
  ]);
  t.is(window.code, 0, window.stderr);
  const badTime = await spool(t, ['job', 'list', '--org', org, '--created-after', 'yesterday']);
  t.is(badTime.code, 1);
  t.regex(badTime.stderr, /created_after must be an RFC 3339 time/);
  const noJob = await spool(t, ['job', 'get', '--org', org, '--id', desk.id]);
  t.is(noJob.code, 1);
  t.regex(noJob.stderr, /"code":\s*"not_found"/);

  const bad = await spool(t, ['org', 'list', '--format', 'yaml']);
  t.is(bad.code, 2, 'wrong usage');
  t.regex(bad.stderr, /argument 'yaml' is invalid/);
});

test('spool admin invitation lists pending invitations and revokes one, whose link then fails', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Cli Invitations Org');
  const invite = async (email: string) => {
    sys.clock.advance(1000);
    const res = await call<{ invitation: { id: string }; url: string }>(
      sys.url,
      'POST',
      `/admin/v1/orgs/${org}/invitations`,
      { token: OPERATOR_TOKEN, body: { email, role: 'viewer' } },
    );
    return res.body;
  };
  const kept = await invite('kept@example.com');
  const wrong = await invite('wrong@example.com');

  const listed = await spool(t, ['invitation', 'list', '--org', org]);
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual(listed.json, (await http(t, `/orgs/${org}/invitations`)).body);
  t.deepEqual(
    ((listed.json?.items ?? []) as Array<{ email: string }>).map((i) => i.email),
    ['kept@example.com', 'wrong@example.com'],
  );
  const table = await spool(t, ['invitation', 'list', '--org', org, '--format', 'table']);
  t.regex(table.stdout, /^ID +EMAIL +ROLE +INVITED BY +CREATED +EXPIRES\n/);
  t.regex(table.stdout, /wrong@example\.com +viewer +operator /);

  const revoked = await spool(t, [
    'invitation',
    'revoke',
    '--org',
    org,
    '--id',
    wrong.invitation.id,
  ]);
  t.is(revoked.code, 0, revoked.stderr);
  t.deepEqual(revoked.json, { revoked: true, id: wrong.invitation.id });
  const token = new URL(wrong.url).hash.slice(1);
  const link = await call(sys.url, 'GET', `/console/v1/invitations/${token}`);
  t.is(link.status, 404);
  const after = await spool(t, ['invitation', 'list', '--org', org]);
  t.deepEqual(
    ((after.json?.items ?? []) as Array<{ id: string }>).map((i) => i.id),
    [kept.invitation.id],
  );
  const got = await spool(t, ['invitation', 'get', '--org', org, '--id', wrong.invitation.id]);
  t.is(got.code, 0, got.stderr);
  t.like(got.json?.invitation, { email: 'wrong@example.com', used_at: null });

  const unknown = await spool(t, ['invitation', 'revoke', '--org', org, '--id', randomUUID()]);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /"code":\s*"not_found"/);
  const log = await spool(t, ['audit', '--org', org, '--actor', 'operator']);
  const items = log.json?.items as Array<{ method: string; route: string; status: number }>;
  t.deepEqual(
    items.slice(0, 2).map((e) => `${e.method} ${e.route} ${e.status}`),
    [
      'DELETE /admin/v1/orgs/:org/invitations/:id 404',
      'DELETE /admin/v1/orgs/:org/invitations/:id 204',
    ],
  );
  const help = await runSpool(['admin', 'invitation', '--help'], {});
  t.regex(help.stdout, /list \[options\] +list an organization's pending invitations/);
  t.regex(help.stdout, /revoke \[options\] +revoke an invitation: its link stops working/);
});

test('spool admin person list shows an organization’s members and their roles', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Cli People Org');
  const ada = await member(sys.url, org, 'owner', 'ada@example.com');
  sys.clock.advance(1000);
  const bob = await member(sys.url, org, 'viewer', 'bob@example.com');
  const listed = await spool(t, ['person', 'list', '--org', org]);
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual(listed.json, (await http(t, `/orgs/${org}/people`)).body);
  const items = listed.json?.items as Array<{ person_id: string; email: string; role: string }>;
  t.deepEqual(
    items.map((m) => [m.email, m.role]),
    [
      ['ada@example.com', 'owner'],
      ['bob@example.com', 'viewer'],
    ],
  );
  t.is(items[0]?.person_id, ada.personId);
  const table = await spool(t, ['person', 'list', '--org', org, '--format', 'table']);
  t.regex(table.stdout, /^ID +NAME +EMAIL +ROLE +JOINED\n/);
  t.regex(table.stdout, /bob@example\.com +viewer /);

  // The operator acts as an owner would, at night, with no owner to reach.
  const promoted = await spool(t, [
    'person',
    'role',
    '--org',
    org,
    '--id',
    bob.personId,
    '--role',
    'admin',
  ]);
  t.is(promoted.code, 0, promoted.stderr);
  t.like(promoted.json?.member, { person_id: bob.personId, role: 'admin' });
  const lastOwner = await spool(t, ['person', 'remove', '--org', org, '--id', ada.personId]);
  t.is(lastOwner.code, 1);
  t.regex(lastOwner.stderr, /last owner/);
  t.is((await bob.call('GET', `/console/v1/orgs/${org}/keys`)).status, 200);
  const removed = await spool(t, ['person', 'remove', '--org', org, '--id', bob.personId]);
  t.is(removed.code, 0, removed.stderr);
  t.deepEqual(removed.json, { removed: true, id: bob.personId });
  // Their session loses the organization at once (this gateway hears of it over NATS).
  await eventually(
    () => bob.call('GET', `/console/v1/orgs/${org}/keys`),
    (res) => res.status === 404,
  );
  const left = await spool(t, ['person', 'list', '--org', org]);
  t.deepEqual(
    ((left.json?.items ?? []) as Array<{ email: string }>).map((m) => m.email),
    ['ada@example.com'],
  );
  const unknown = await spool(t, ['person', 'list', '--org', randomUUID()]);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /"code":\s*"not_found"/);
});

test('spool admin settings set with nothing to change says so, changes nothing, and audits nothing', async (t) => {
  type Audit = { items: Array<{ route: string }> };
  const settingsChanges = async () =>
    ((await http(t, '/audit?limit=200')).body as Audit).items.filter(
      (e) => e.route === '/admin/v1/settings',
    ).length;
  const before = await settingsChanges();
  const res = await spool(t, ['settings', 'set']);
  t.is(res.code, 2);
  t.regex(
    res.stderr,
    /^error: nothing to change: give at least one of --job-document-retention-days, .*--downloads-file\n/,
  );
  t.is(await settingsChanges(), before);
});

test('spool admin station update refuses --location with --no-location, and an update of nothing', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Cli Location Flags Org');
  const station = await createStation(sys.url, org, { name: 'Desk' });
  const ids = ['--org', org, '--id', station.id];
  for (const both of [
    ['--location', randomUUID(), '--no-location'],
    ['--no-location', '--location', randomUUID()],
  ]) {
    const res = await spool(t, ['station', 'update', ...ids, ...both]);
    t.is(res.code, 2, both.join(' '));
    t.regex(res.stderr, /^error: give either --location ID or --no-location, not both\n/);
  }
  const nothing = await spool(t, ['station', 'update', ...ids]);
  t.is(nothing.code, 2);
  t.regex(nothing.stderr, /^error: nothing to change: give at least one of --name, /);
  const after = await http(t, `/orgs/${org}/stations/${station.id}`);
  t.like((after.body as { station: object }).station, { name: 'Desk', location_id: null });
});
