import anyTest, { type TestFn } from 'ava';
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

const test = anyTest as TestFn<{ sys: TestSystem; links: LinkClient[] }>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem(), links: [] };
});

test.after.always(async (t) => {
  for (const link of t.context.links ?? []) link.close();
  await t.context.sys?.stop();
});

const op = <T = Record<string, unknown>>(
  t: { context: { sys: TestSystem } },
  method: string,
  path: string,
  body?: unknown,
) =>
  call<T>(t.context.sys.url, method, `/admin/v1${path}`, {
    token: OPERATOR_TOKEN,
    ...(body === undefined ? {} : { body }),
  });

interface Page<T> {
  items: T[];
  next_cursor: string;
}
interface StationJson {
  id: string;
  name: string;
  location_id: string | null;
  online: boolean;
  last_seen_at: string | null;
  agent_version: string | null;
}
interface PrinterJson {
  id: string;
  name: string;
  station_id: string;
  status: string;
}
interface ErrorBody {
  error: { code: string; message: string; param?: string };
}

async function location(t: { context: { sys: TestSystem } }, org: string, name: string) {
  const res = await op<{ location: { id: string } }>(t, 'POST', `/orgs/${org}/locations`, {
    name,
  });
  return res.body.location.id;
}

test('organizations are listed oldest first, found by any part of their name in any case, a page at a time', async (t) => {
  const suffix = Math.random().toString(36).slice(2, 8);
  const names = [`Harbour Freight ${suffix}`, `Inland HARBOUR ${suffix}`, `Mountain ${suffix}`];
  const ids: string[] = [];
  for (const name of names) {
    ids.push(await createOrg(t.context.sys.url, name));
    t.context.sys.clock.advance(1000);
  }

  const found = await op<Page<{ id: string; name: string }>>(
    t,
    'GET',
    `/orgs?q=${encodeURIComponent(`harbour`)}&limit=200`,
  );
  t.is(found.status, 200);
  t.deepEqual(
    found.body.items.filter((o) => o.name.endsWith(suffix)).map((o) => o.id),
    [ids[0], ids[1]],
  );

  const first = await op<Page<{ id: string }>>(t, 'GET', `/orgs?q=${suffix}&limit=2`);
  t.deepEqual(
    first.body.items.map((o) => o.id),
    [ids[0], ids[1]],
  );
  t.not(first.body.next_cursor, '');
  const second = await op<Page<{ id: string }>>(
    t,
    'GET',
    `/orgs?q=${suffix}&limit=2&cursor=${first.body.next_cursor}`,
  );
  t.deepEqual(
    second.body.items.map((o) => o.id),
    [ids[2]],
  );
  t.is(second.body.next_cursor, '');

  const none = await op<Page<unknown>>(t, 'GET', '/orgs?q=no-such-organization-name');
  t.deepEqual(none.body, { items: [], next_cursor: '' });
  const bad = await op<ErrorBody>(t, 'GET', '/orgs?name=x');
  t.is(bad.status, 400);
  t.is(bad.body.error.code, 'unknown_field');
});

test('stations are listed with online state, last contact and agent version; renamed, moved and got', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Stations Inc');
  const other = await createOrg(sys.url, 'Elsewhere Ltd');
  const hall = await location(t, org, 'Hall');
  const attic = await location(t, org, 'Attic');
  const foreign = await location(t, other, 'Foreign');
  const online = await createStation(sys.url, org, { name: 'Online', location_id: hall });
  sys.clock.advance(1000);
  const idle = await createStation(sys.url, org, { name: 'Idle' });
  t.context.links.push(await connectLink(sys.linkAddress, online.token, [printer('p1')]));

  const list = await op<Page<StationJson>>(t, 'GET', `/orgs/${org}/stations`);
  t.is(list.status, 200);
  const [a, b] = list.body.items;
  t.is(a?.id, online.id);
  t.true(a?.online);
  t.is(a?.agent_version, 'test');
  t.is(a?.location_id, hall);
  t.truthy(a?.last_seen_at);
  t.is(b?.id, idle.id);
  t.false(b?.online);
  t.is(b?.agent_version, null);
  t.is(b?.last_seen_at, null);

  const got = await op<{ station: StationJson }>(t, 'GET', `/orgs/${org}/stations/${online.id}`);
  t.deepEqual(got.body.station, a);
  // Online, it is seen now: not when its link opened, a minute and a half before.
  const linkedAt = Date.parse(a?.last_seen_at as string);
  sys.clock.advance(90_000);
  const later = await op<{ station: StationJson }>(t, 'GET', `/orgs/${org}/stations/${online.id}`);
  const seen = Date.parse(later.body.station.last_seen_at as string);
  t.true(Math.abs(seen - sys.clock.now().getTime()) < 1_000, later.body.station.last_seen_at ?? '');
  t.true(seen - linkedAt >= 89_000);

  const moved = await op<{ station: StationJson }>(
    t,
    'PATCH',
    `/orgs/${org}/stations/${online.id}`,
    { name: 'Front desk', location_id: attic },
  );
  t.is(moved.status, 200);
  t.is(moved.body.station.name, 'Front desk');
  t.is(moved.body.station.location_id, attic);
  // Its printers move with it.
  const inAttic = await op<Page<PrinterJson>>(
    t,
    'GET',
    `/orgs/${org}/printers?location_id=${attic}`,
  );
  t.deepEqual(
    inAttic.body.items.map((p) => p.name),
    ['p1'],
  );

  const elsewhere = await op<ErrorBody>(t, 'PATCH', `/orgs/${org}/stations/${online.id}`, {
    location_id: foreign,
  });
  t.is(elsewhere.status, 400);
  t.is(elsewhere.body.error.param, 'location_id');
  const out = await op<{ station: StationJson }>(t, 'PATCH', `/orgs/${org}/stations/${online.id}`, {
    location_id: null,
  });
  t.is(out.body.station.location_id, null);
  t.is(out.body.station.name, 'Front desk');

  // Another organization's station is not found, in every verb.
  for (const [method, body] of [
    ['GET', undefined],
    ['PATCH', { name: 'Stolen' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await op<ErrorBody>(t, method, `/orgs/${other}/stations/${online.id}`, body);
    t.is(res.status, 404, method);
    t.is(res.body.error.code, 'not_found');
  }
  const still = await op<{ station: StationJson }>(t, 'GET', `/orgs/${org}/stations/${online.id}`);
  t.is(still.body.station.name, 'Front desk');
  t.is((await op(t, 'GET', `/orgs/${other}/stations`)).body.items?.toString(), '');
  t.is((await op(t, 'GET', '/orgs/9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d/stations')).status, 404);
});

test('deleting a station fails its unfinished jobs, removes its printers and ends its token and link', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Deletes Stations');
  const { secret } = await createKey(sys.url, org, { scopes: ['jobs:write', 'jobs:read'] });
  const station = await createStation(sys.url, org);
  const link = await connectLink(sys.linkAddress, station.token, [printer('desk')]);
  t.context.links.push(link);
  const printerId = link.welcome.printerIds.desk ?? '';
  const job = (hold: boolean) =>
    call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${org}/jobs`, {
      token: secret,
      body: { printer_id: printerId, hold, content: { type: 'text', data: 'hello' } },
    });
  const queued = (await job(false)).body.job.id;
  const held = (await job(true)).body.job.id;
  await link.until(() => link.jobs.length === 1);

  const res = await op(t, 'DELETE', `/orgs/${org}/stations/${station.id}`);
  t.is(res.status, 204);
  for (const id of [queued, held]) {
    const got = await call<{ job: { status: string; status_detail: string } }>(
      sys.url,
      'GET',
      `/v1/orgs/${org}/jobs/${id}`,
      { token: secret },
    );
    t.is(got.body.job.status, 'failed');
    t.is(got.body.job.status_detail, 'its station was deleted');
  }
  t.is((await op(t, 'GET', `/orgs/${org}/stations/${station.id}`)).status, 404);
  t.is((await op(t, 'GET', `/orgs/${org}/printers/${printerId}`)).status, 404);
  // New jobs for its printer are refused: the jobs service hears of the deletion on the bus.
  await eventually(
    () => job(false),
    (r) => r.status === 400,
  );
  // Nor can its failed jobs be tried or printed again: they would wait for nothing, for ever.
  for (const action of ['retry', 'reprint']) {
    const again = await call<{ error: { code: string; message: string } }>(
      sys.url,
      'POST',
      `/v1/orgs/${org}/jobs/${queued}/${action}`,
      { token: secret },
    );
    t.is(again.status, 409, action);
    t.is(
      again.body.error.message,
      "this job's printer was deleted (or its station): send a new job to another printer",
    );
  }
  t.truthy(await link.ended, 'the link is cut');
  await t.throwsAsync(connectLink(sys.linkAddress, station.token, [printer('desk')]));
  t.is((await op(t, 'DELETE', `/orgs/${org}/stations/${station.id}`)).status, 404);
});

test('printers are listed per organization and station, got, and deleted whatever their status', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Printers Co');
  const other = await createOrg(sys.url, 'Not Printers Co');
  const { secret } = await createKey(sys.url, org, { scopes: ['jobs:write', 'jobs:read'] });
  const one = await createStation(sys.url, org, { name: 'One' });
  const two = await createStation(sys.url, org, { name: 'Two' });
  const link = await connectLink(sys.linkAddress, one.token, [printer('a'), printer('b')]);
  t.context.links.push(link);
  t.context.links.push(await connectLink(sys.linkAddress, two.token, [printer('c')]));

  const all = await op<Page<PrinterJson>>(t, 'GET', `/orgs/${org}/printers`);
  t.deepEqual(all.body.items.map((p) => p.name).sort(), ['a', 'b', 'c']);
  const ofOne = await op<Page<PrinterJson>>(t, 'GET', `/orgs/${org}/printers?station_id=${one.id}`);
  t.deepEqual(ofOne.body.items.map((p) => p.name).sort(), ['a', 'b']);
  const a = ofOne.body.items.find((p) => p.name === 'a') as PrinterJson;
  const got = await op<{ printer: PrinterJson }>(t, 'GET', `/orgs/${org}/printers/${a.id}`);
  t.is(got.body.printer.station_id, one.id);
  t.is((await op(t, 'GET', `/orgs/${other}/printers/${a.id}`)).status, 404);
  t.is((await op(t, 'DELETE', `/orgs/${other}/printers/${a.id}`)).status, 404);

  // b is no longer reported: removed; its waiting job fails when the operator deletes it.
  link.send({ printers: { printers: [printer('a')] } });
  const b = ofOne.body.items.find((p) => p.name === 'b') as PrinterJson;
  await eventually(
    () => op<{ printer: PrinterJson }>(t, 'GET', `/orgs/${org}/printers/${b.id}`),
    (r) => r.body.printer.status === 'removed',
  );
  const job = await call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${org}/jobs`, {
    token: secret,
    body: { printer_id: b.id, content: { type: 'text', data: 'hello' } },
  });
  t.is((await op(t, 'DELETE', `/orgs/${org}/printers/${b.id}`)).status, 204);
  const failed = await call<{
    job: { status: string; status_detail: string };
    events: Array<Record<string, unknown>>;
  }>(sys.url, 'GET', `/v1/orgs/${org}/jobs/${job.body.job.id}`, { token: secret });
  t.is(failed.body.job.status, 'failed');
  t.is(failed.body.job.status_detail, 'printer "b" was deleted');
  // DESIGN §4's actor for the operator; and each event is spec §4's {at, status, detail, actor}.
  const last = failed.body.events.at(-1);
  t.like(last, { status: 'failed', actor: 'admin', detail: 'printer "b" was deleted' });
  t.deepEqual(Object.keys(last ?? {}).sort(), ['actor', 'at', 'detail', 'status']);
  t.is((await op(t, 'GET', `/orgs/${org}/printers/${b.id}`)).status, 404);
  await eventually(
    () =>
      call(sys.url, 'POST', `/v1/orgs/${org}/jobs`, {
        token: secret,
        body: { printer_id: b.id, content: { type: 'text', data: 'hello' } },
      }),
    (r) => r.status === 400,
  );

  // A ready printer can be deleted too; the others stay.
  t.is((await op(t, 'DELETE', `/orgs/${org}/printers/${a.id}`)).status, 204);
  const left = await op<Page<PrinterJson>>(t, 'GET', `/orgs/${org}/printers`);
  t.deepEqual(
    left.body.items.map((p) => p.name),
    ['c'],
  );
});

test('locations are listed, got, changed, and deleted only once no station is in them', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Locations Co');
  const other = await createOrg(sys.url, 'Other Locations Co');
  const hall = await location(t, org, 'Hall');
  const station = await createStation(sys.url, org, { location_id: hall });

  const list = await op<Page<{ id: string; name: string }>>(t, 'GET', `/orgs/${org}/locations`);
  t.deepEqual(
    list.body.items.map((l) => l.id),
    [hall],
  );
  const changed = await op<{ location: { name: string; address: string; timezone: string } }>(
    t,
    'PATCH',
    `/orgs/${org}/locations/${hall}`,
    { name: 'Great hall', timezone: 'Europe/Berlin' },
  );
  t.is(changed.status, 200);
  t.like(changed.body.location, { name: 'Great hall', address: '', timezone: 'Europe/Berlin' });
  const badZone = await op<ErrorBody>(t, 'PATCH', `/orgs/${org}/locations/${hall}`, {
    timezone: 'Mars/Olympus',
  });
  t.is(badZone.status, 400);
  t.is(badZone.body.error.param, 'timezone');
  const got = await op<{ location: { name: string } }>(t, 'GET', `/orgs/${org}/locations/${hall}`);
  t.is(got.body.location.name, 'Great hall');
  t.is((await op(t, 'GET', `/orgs/${other}/locations/${hall}`)).status, 404);
  t.is((await op(t, 'PATCH', `/orgs/${other}/locations/${hall}`, { name: 'x' })).status, 404);

  const refused = await op<ErrorBody>(t, 'DELETE', `/orgs/${org}/locations/${hall}`);
  t.is(refused.status, 409);
  t.is(refused.body.error.code, 'conflict');
  t.is(
    refused.body.error.message,
    '1 station is in this location ("Front desk"): move or delete it first',
  );
  await op(t, 'PATCH', `/orgs/${org}/stations/${station.id}`, { location_id: null });
  t.is((await op(t, 'DELETE', `/orgs/${other}/locations/${hall}`)).status, 404);
  t.is((await op(t, 'DELETE', `/orgs/${org}/locations/${hall}`)).status, 204);
  t.is((await op(t, 'GET', `/orgs/${org}/locations/${hall}`)).status, 404);
});

test('templates are listed, got, changed and deleted', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Templates Co');
  const other = await createOrg(sys.url, 'Other Templates Co');
  const created = await op<{ template: { id: string } }>(t, 'POST', `/orgs/${org}/templates`, {
    name: 'Label',
    kind: 'text',
    body: 'Hello {{name}}',
    fields: [{ name: 'name' }],
  });
  const id = created.body.template.id;
  const list = await op<Page<{ id: string }>>(t, 'GET', `/orgs/${org}/templates`);
  t.deepEqual(
    list.body.items.map((x) => x.id),
    [id],
  );
  const got = await op<{ template: { id: string; name: string } }>(
    t,
    'GET',
    `/orgs/${org}/templates/${id}`,
  );
  t.deepEqual(got.body, created.body);
  t.is((await op(t, 'GET', `/orgs/${other}/templates/${id}`)).status, 404);

  const changed = await op<{ template: { name: string; body: string; fields: unknown[] } }>(
    t,
    'PATCH',
    `/orgs/${org}/templates/${id}`,
    {
      name: 'Badge',
      body: 'Hi {{name}} of {{team}}',
      fields: [{ name: 'name' }, { name: 'team', default: 'ops' }],
    },
  );
  t.is(changed.status, 200);
  t.like(changed.body.template, { name: 'Badge', body: 'Hi {{name}} of {{team}}' });
  t.deepEqual(changed.body.template.fields, [
    { name: 'name', required: true, default: null },
    { name: 'team', required: false, default: 'ops' },
  ]);
  const unknownField = await op<ErrorBody>(t, 'PATCH', `/orgs/${org}/templates/${id}`, {
    body: 'Hi {{nobody}}',
  });
  t.is(unknownField.status, 400);
  t.is((await op(t, 'PATCH', `/orgs/${other}/templates/${id}`, { name: 'x' })).status, 404);
  const kept = await op<{ template: { body: string } }>(t, 'GET', `/orgs/${org}/templates/${id}`);
  t.is(kept.body.template.body, 'Hi {{name}} of {{team}}');

  t.is((await op(t, 'DELETE', `/orgs/${other}/templates/${id}`)).status, 404);
  t.is((await op(t, 'DELETE', `/orgs/${org}/templates/${id}`)).status, 204);
  t.is((await op(t, 'GET', `/orgs/${org}/templates/${id}`)).status, 404);
  t.deepEqual((await op(t, 'GET', `/orgs/${org}/templates`)).body, { items: [], next_cursor: '' });
});

test("an organization's jobs are listed and got as its integration sees them, and no other organization's", async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Support Case');
  const other = await createOrg(sys.url, 'Someone Else');
  const { secret } = await createKey(sys.url, org, { scopes: ['jobs:write', 'jobs:read'] });
  const station = await createStation(sys.url, org);
  const link = await connectLink(sys.linkAddress, station.token, [printer('desk')]);
  t.context.links.push(link);
  const v1 = <T>(method: string, path: string, body?: unknown) =>
    call<T>(sys.url, method, `/v1/orgs/${org}${path}`, {
      token: secret,
      ...(body === undefined ? {} : { body }),
    });
  const made = await v1<{ job: { id: string } }>('POST', '/jobs', {
    printer_id: link.welcome.printerIds.desk,
    hold: true,
    reference: 'ticket-77',
    content: { type: 'text', data: 'private words' },
  });
  t.is(made.status, 201);
  const jobId = made.body.job.id;

  const listed = await op(t, 'GET', `/orgs/${org}/jobs?status=held&reference=ticket-77`);
  t.is(listed.status, 200);
  t.deepEqual(listed.body, (await v1('GET', '/jobs?status=held&reference=ticket-77')).body);
  t.deepEqual(
    ((listed.body.items ?? []) as Array<{ id: string }>).map((j) => j.id),
    [jobId],
  );
  const got = await op(t, 'GET', `/orgs/${org}/jobs/${jobId}`);
  t.is(got.status, 200);
  t.deepEqual(got.body, (await v1('GET', `/jobs/${jobId}`)).body);
  t.false(JSON.stringify(got.body).includes('private words'), 'no document');

  // Scoped by the organization of the path; filters checked as for integrators.
  t.is((await op(t, 'GET', `/orgs/${other}/jobs/${jobId}`)).status, 404);
  t.deepEqual((await op<Page<unknown>>(t, 'GET', `/orgs/${other}/jobs`)).body.items, []);
  t.is((await op(t, 'GET', '/orgs/00000000-0000-4000-8000-000000000000/jobs')).status, 404);
  const bad = await op<ErrorBody>(t, 'GET', `/orgs/${org}/jobs?status=lost`);
  t.is(bad.status, 400);
  t.like(bad.body.error, { code: 'invalid', param: 'status' });
});

test("every organization's stations in one list, or only those offline, each with its organization", async (t) => {
  const [north, south] = [await createOrg(t.context.sys.url), await createOrg(t.context.sys.url)];
  const up = await createStation(t.context.sys.url, north, { name: 'Up' });
  const down = await createStation(t.context.sys.url, north, { name: 'Down' });
  const away = await createStation(t.context.sys.url, south, { name: 'Away' });
  t.context.links.push(await connectLink(t.context.sys.linkAddress, up.token, [printer('p')]));
  await eventually(
    () => op<{ station: { online: boolean } }>(t, 'GET', `/orgs/${north}/stations/${up.id}`),
    (res) => res.body.station.online,
  );

  /** Every page of the list, with what it says of each of the three. */
  const all = async (params: string) => {
    const seen: Array<{ id: string; org_id: string; online: boolean }> = [];
    let cursor = '';
    do {
      const res = await op<Page<{ id: string; org_id: string; online: boolean }>>(
        t,
        'GET',
        `/stations?limit=200${params}${cursor ? `&cursor=${cursor}` : ''}`,
      );
      t.is(res.status, 200);
      seen.push(...res.body.items);
      cursor = res.body.next_cursor;
    } while (cursor);
    return seen.filter((s) => [up.id, down.id, away.id].includes(s.id));
  };
  // Oldest first; these three were made at one instant of the test clock, so compare them as sets.
  const sorted = (rows: unknown[][]) =>
    rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  t.deepEqual(
    sorted((await all('&offline=true')).map((s) => [s.id, s.org_id, s.online])),
    sorted([
      [down.id, north, false],
      [away.id, south, false],
    ]),
  );
  t.deepEqual((await all('')).map((s) => s.id).sort(), [up.id, down.id, away.id].sort());
  const bad = await op<{ error: { code: string; param: string } }>(t, 'GET', '/stations?offline=1');
  t.is(bad.status, 400);
  t.like(bad.body.error, { code: 'invalid', param: 'offline' });
});
