/**
 * Locations through the console's endpoints: every member lists them with their stations counted,
 * admins create, change and delete them with the operator API's rules and move stations between
 * them, a location with a station in it stays, and each change is in the audit log as the person
 * who made it.
 */
import { randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { type Browser, type ErrorBody, member } from './helpers/console.js';
import {
  call,
  createOrg,
  createStation,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

// One after another: each test signs people in, and checking passwords at once is what the
// accounts service limits.
const test = anyTest.serial as TestFn<{ sys: TestSystem }>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

interface LocationJson {
  id: string;
  name: string;
  address: string;
  timezone: string;
  created_at: string;
}

type Listed = LocationJson & { station_count: number };

/** An organization with a signed-in admin. */
async function orgWithAdmin(sys: TestSystem, name: string) {
  const orgId = await createOrg(sys.url, name);
  return { orgId, admin: await member(sys.url, orgId, 'admin') };
}

async function create(person: Browser, orgId: string, body: Record<string, unknown>) {
  return person.call<{ location: LocationJson }>('POST', `/console/v1/orgs/${orgId}/locations`, {
    body,
  });
}

test('a viewer lists the locations with their stations counted, and may not change them', async (t) => {
  const { sys } = t.context;
  const { orgId, admin } = await orgWithAdmin(sys, 'Listing Co');
  const developer = await member(sys.url, orgId, 'developer');
  const viewer = await member(sys.url, orgId, 'viewer');
  const hall = await create(admin, orgId, { name: 'Hall', timezone: 'Europe/Berlin' });
  // Listed oldest first; the test's clock stands still unless moved.
  sys.clock.advance(1000);
  const annex = await create(admin, orgId, { name: 'Annex', address: '1 Dock Road' });
  t.is(hall.status, 201);
  t.is(annex.status, 201);
  await createStation(sys.url, orgId, { name: 'Desk', location_id: hall.body.location.id });
  await createStation(sys.url, orgId, { name: 'Till', location_id: hall.body.location.id });
  await createStation(sys.url, orgId, { name: 'Nowhere' });

  const list = await viewer.call<{ items: Listed[] }>('GET', `/console/v1/orgs/${orgId}/locations`);
  t.is(list.status, 200);
  t.deepEqual(list.body.items, [
    { ...hall.body.location, station_count: 2 },
    { ...annex.body.location, station_count: 0 },
  ]);

  const path = `/console/v1/orgs/${orgId}/locations`;
  const one = `${path}/${hall.body.location.id}`;
  const station = `/console/v1/orgs/${orgId}/stations/${randomUUID()}`;
  for (const [who, role] of [
    [viewer, 'viewer'],
    [developer, 'developer'],
  ] as const) {
    for (const [method, at, body] of [
      ['POST', path, { name: 'Refused' }],
      ['PATCH', one, { name: 'Refused' }],
      ['DELETE', one, undefined],
      ['PATCH', station, { location_id: null }],
    ] as const) {
      const res = await who.call<ErrorBody>(method, at, body === undefined ? {} : { body });
      t.is(res.status, 403, `${role} ${method} ${at}`);
      t.is(res.body.error.code, 'forbidden');
      t.is(
        res.body.error.message,
        `this needs the admin role; you are ${role === 'viewer' ? 'a viewer' : 'a developer'}`,
      );
    }
  }
  const after = await viewer.call<{ items: Listed[] }>('GET', path);
  t.deepEqual(
    after.body.items.map((l) => l.name),
    ['Hall', 'Annex'],
    'nothing changed',
  );

  // Another organization's member sees none of them.
  const other = await member(sys.url, await createOrg(sys.url, 'Elsewhere'), 'owner');
  t.is((await other.call('GET', path)).status, 404);
  t.is((await other.call('PATCH', one, { body: { name: 'Taken' } })).status, 404);
});

test('an admin creates, changes and deletes a location as the operator API does', async (t) => {
  const { sys } = t.context;
  const { orgId, admin } = await orgWithAdmin(sys, 'Changing Co');
  const created = await create(admin, orgId, {
    name: 'Berlin',
    address: 'Alexanderplatz 1',
    timezone: 'Europe/Berlin',
  });
  t.is(created.status, 201);
  const { location } = created.body;
  t.like(location, { name: 'Berlin', address: 'Alexanderplatz 1', timezone: 'Europe/Berlin' });
  // Named by its path on the console's API, where it is changed and deleted; /v1 answers it.
  const one = created.headers.get('location') ?? '';
  t.is(one, `/console/v1/orgs/${orgId}/locations/${location.id}`);
  const got = await admin.call<{ location: LocationJson }>(
    'GET',
    `/v1/orgs/${orgId}/locations/${location.id}`,
  );
  t.is(got.status, 200);
  t.deepEqual(got.body.location, location);

  const renamed = await admin.call<{ location: LocationJson }>('PATCH', one, {
    body: { name: 'Berlin Mitte', address: '' },
  });
  t.is(renamed.status, 200);
  t.deepEqual(renamed.body.location, { ...location, name: 'Berlin Mitte', address: '' });
  const operator = await call<{ location: LocationJson }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${orgId}/locations/${location.id}`,
    { token: OPERATOR_TOKEN },
  );
  t.deepEqual(operator.body.location, renamed.body.location);

  t.is((await admin.call('DELETE', one)).status, 204);
  const gone = await admin.call<ErrorBody>('DELETE', one);
  t.is(gone.status, 404);
  t.is(gone.body.error.code, 'not_found');
  t.is((await admin.call('PATCH', one, { body: { name: 'Back' } })).status, 404);
});

test('a location with a station in it is not deleted until the station moves out', async (t) => {
  const { sys } = t.context;
  const { orgId, admin } = await orgWithAdmin(sys, 'Moving Co');
  const hall = (await create(admin, orgId, { name: 'Hall' })).body.location;
  sys.clock.advance(1000);
  const annex = (await create(admin, orgId, { name: 'Annex' })).body.location;
  const made = await admin.call<{ station: { id: string } }>(
    'POST',
    `/console/v1/orgs/${orgId}/stations`,
    { body: { name: 'Front desk', location_id: hall.id } },
  );
  const station = `/console/v1/orgs/${orgId}/stations/${made.body.station.id}`;

  const refused = await admin.call<ErrorBody>(
    'DELETE',
    `/console/v1/orgs/${orgId}/locations/${hall.id}`,
  );
  t.is(refused.status, 409);
  t.like(refused.body.error, {
    code: 'conflict',
    message: '1 station is in this location ("Front desk"): move or delete it first',
  });

  const moved = await admin.call<{ station: { id: string; location_id: string | null } }>(
    'PATCH',
    station,
    { body: { location_id: annex.id } },
  );
  t.is(moved.status, 200);
  t.like(moved.body.station, { id: made.body.station.id, location_id: annex.id });
  const counts = await admin.call<{ items: Listed[] }>(
    'GET',
    `/console/v1/orgs/${orgId}/locations`,
  );
  t.deepEqual(
    counts.body.items.map((l) => [l.name, l.station_count]),
    [
      ['Hall', 0],
      ['Annex', 1],
    ],
  );
  t.is((await admin.call('DELETE', `/console/v1/orgs/${orgId}/locations/${hall.id}`)).status, 204);

  // Out of any location: null, as the operator API takes it.
  const out = await admin.call<{ station: { location_id: string | null } }>('PATCH', station, {
    body: { location_id: null },
  });
  t.is(out.status, 200);
  t.is(out.body.station.location_id, null);
  t.is((await admin.call('DELETE', `/console/v1/orgs/${orgId}/locations/${annex.id}`)).status, 204);
});

test('bad input answers 400 in the catalogue’s envelope, naming the field', async (t) => {
  const { sys } = t.context;
  const { orgId, admin } = await orgWithAdmin(sys, 'Checking Co');
  const path = `/console/v1/orgs/${orgId}/locations`;

  const badZone = await create(admin, orgId, { name: 'Base', timezone: 'Mars/Olympus' });
  t.is(badZone.status, 400);
  t.like((badZone.body as unknown as ErrorBody).error, {
    code: 'invalid',
    param: 'timezone',
    message: 'timezone must be an IANA time zone such as Europe/Berlin; "Mars/Olympus" is not one',
  });
  t.truthy((badZone.body as unknown as ErrorBody).error.request_id);

  const cases: [string, unknown, string, string][] = [
    ['POST', { address: 'No name' }, 'invalid', 'name'],
    ['POST', { name: '' }, 'invalid', 'name'],
    ['POST', { name: 'x'.repeat(201) }, 'invalid', 'name'],
    ['POST', { name: 'Base', colour: 'red' }, 'unknown_field', 'colour'],
  ];
  for (const [method, body, code, param] of cases) {
    const res = await admin.call<ErrorBody>(method, path, { body });
    t.is(res.status, 400, JSON.stringify(body));
    t.like(res.body.error, { code, param }, JSON.stringify(body));
  }
  const listed = await admin.call<{ items: Listed[] }>('GET', path);
  t.deepEqual(listed.body.items, [], 'nothing was created');

  const base = (await create(admin, orgId, { name: 'Base' })).body.location;
  const one = `${path}/${base.id}`;
  const patchZone = await admin.call<ErrorBody>('PATCH', one, { body: { timezone: 'Nowhere' } });
  t.is(patchZone.status, 400);
  t.like(patchZone.body.error, { code: 'invalid', param: 'timezone' });
  const nothing = await admin.call<ErrorBody>('PATCH', one, { body: {} });
  t.is(nothing.status, 400);
  t.regex(nothing.body.error.message, /nothing to change/);

  // A station's move takes a location of the organization, or null; nothing else of it.
  const made = await createStation(sys.url, orgId, { name: 'Desk' });
  const station = `/console/v1/orgs/${orgId}/stations/${made.id}`;
  const stationCases: [unknown, string, string][] = [
    [{ location_id: '' }, 'invalid', 'location_id'],
    [{ location_id: randomUUID() }, 'invalid', 'location_id'],
    [{ location_id: base.id, region: 'eu' }, 'unknown_field', 'region'],
    [{ name: 'Renamed' }, 'unknown_field', 'name'],
  ];
  for (const [body, code, param] of stationCases) {
    const res = await admin.call<ErrorBody>('PATCH', station, { body });
    t.is(res.status, 400, JSON.stringify(body));
    t.like(res.body.error, { code, param }, JSON.stringify(body));
  }
  const unknown = await admin.call<ErrorBody>(
    'PATCH',
    `/console/v1/orgs/${orgId}/stations/${randomUUID()}`,
    { body: { location_id: base.id } },
  );
  t.is(unknown.status, 404);
});

interface Entry {
  actor: string | null;
  session_id: string | null;
  org_id: string | null;
  method: string;
  route: string | null;
  target: Record<string, string>;
  status: number | null;
}

test('each change the console makes to locations and stations is in the audit log as the person', async (t) => {
  const { sys } = t.context;
  const { orgId, admin } = await orgWithAdmin(sys, 'Audited Co');
  const hall = await create(admin, orgId, { name: 'Hall' });
  const id = hall.body.location.id;
  const one = `/console/v1/orgs/${orgId}/locations/${id}`;
  await admin.call('PATCH', one, { body: { name: 'Great hall', timezone: 'Europe/Paris' } });
  const station = await createStation(sys.url, orgId, { name: 'Desk' });
  await admin.call('PATCH', `/console/v1/orgs/${orgId}/stations/${station.id}`, {
    body: { location_id: id },
  });
  t.is((await admin.call('DELETE', one)).status, 409);
  await admin.call('PATCH', `/console/v1/orgs/${orgId}/stations/${station.id}`, {
    body: { location_id: null },
  });
  t.is((await admin.call('DELETE', one)).status, 204);

  const audit = await call<{ items: Entry[] }>(sys.url, 'GET', `/admin/v1/audit?org=${orgId}`, {
    token: OPERATOR_TOKEN,
  });
  const actor = `person:${admin.personId}`;
  // The admin's writes to the console's organization routes (not their acceptance of the
  // invitation). The test's clock stands still, so the entries share one time: compared as a set.
  const mine = audit.body.items.filter(
    (e) => e.actor === actor && e.route?.startsWith('/console/v1/orgs/'),
  );
  const sorted = (entries: Omit<Entry, 'actor' | 'session_id' | 'org_id'>[]) =>
    entries
      .map((e) =>
        JSON.stringify({ ...e, target: Object.fromEntries(Object.entries(e.target).sort()) }),
      )
      .sort();
  const entries = mine.map(({ method, route, target, status }) => ({
    method,
    route,
    target,
    status,
  }));
  t.deepEqual(
    sorted(entries),
    sorted([
      {
        method: 'POST',
        route: '/console/v1/orgs/:org/locations',
        target: { created: `/console/v1/orgs/${orgId}/locations/${id}` },
        status: 201,
      },
      {
        method: 'PATCH',
        route: '/console/v1/orgs/:org/locations/:id',
        target: { id, fields: 'name,timezone' },
        status: 200,
      },
      {
        method: 'PATCH',
        route: '/console/v1/orgs/:org/stations/:id',
        target: { id: station.id, fields: 'location_id' },
        status: 200,
      },
      {
        method: 'DELETE',
        route: '/console/v1/orgs/:org/locations/:id',
        target: { id },
        status: 409,
      },
      {
        method: 'PATCH',
        route: '/console/v1/orgs/:org/stations/:id',
        target: { id: station.id, fields: 'location_id' },
        status: 200,
      },
      {
        method: 'DELETE',
        route: '/console/v1/orgs/:org/locations/:id',
        target: { id },
        status: 204,
      },
    ]),
  );
  t.true(mine.every((e) => e.session_id !== null && e.org_id === orgId));
});
