/**
 * The event stream's resource events (docs/realtime.md "Resource events") against a running Spool:
 * locations, stations and pools made, changed and deleted, printers reported for the first time
 * and deleted and API keys made and revoked arrive on the stream in the API's shapes with no
 * secret; a key without `locations:read` gets no location events, one without `printers:read` no
 * station, printer or pool events, and no key gets the key events, which a signed-in member does;
 * webhooks never get them.
 */
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import type { PrinterCapabilities } from '../gen/spool/v1/stations.js';
import { RESOURCE_EVENT_TYPES } from '../lib/contracts/event-types.js';
import { type Browser, member } from './helpers/console.js';
import { connectLink, printer } from './helpers/link-client.js';
import { type Receiver, startReceiver } from './helpers/receiver.js';
import { openStream, type SseMessage, type SseStream } from './helpers/sse.js';
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
  orgId: string;
  receiver: Receiver;
  /** jobs:read and printers:read. */
  reader: string;
  /** jobs:read only. */
  jobsOnly: string;
  /** jobs:read and locations:read. */
  places: string;
  admin: Browser;
}

const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const [sys, receiver] = await Promise.all([startTestSystem(), startReceiver()]);
  t.context = { sys, receiver } as Ctx;
  const orgId = await createOrg(sys.url);
  const [reader, jobsOnly, places, admin] = await Promise.all([
    createKey(sys.url, orgId, { scopes: ['jobs:read', 'printers:read'] }),
    createKey(sys.url, orgId, { scopes: ['jobs:read'] }),
    createKey(sys.url, orgId, { scopes: ['jobs:read', 'locations:read'] }),
    member(sys.url, orgId, 'admin'),
  ]);
  // An endpoint of every type: resource events must still not reach it.
  const hook = await call(sys.url, 'POST', `/admin/v1/orgs/${orgId}/webhooks`, {
    token: OPERATOR_TOKEN,
    body: { url: receiver.url, events: ['*'] },
  });
  if (hook.status !== 201) throw new Error(`create webhook answered ${hook.status}`);
  Object.assign(t.context, {
    orgId,
    reader: reader.secret,
    jobsOnly: jobsOnly.secret,
    places: places.secret,
    admin,
  });
});

test.after.always(async (t) => {
  await t.context.receiver?.close();
  await t.context.sys?.stop();
});

function streamUrl(t: { context: Ctx }, query = ''): string {
  return `${t.context.sys.url}/v1/orgs/${t.context.orgId}/stream${query}`;
}

/** A stream opened with the admin member's session cookie, as the console opens it. */
function sessionStream(t: { context: Ctx }, query = ''): Promise<SseStream> {
  return openStream(streamUrl(t, query), {
    headers: { cookie: `spool_session=${t.context.admin.cookie}` },
  });
}

interface Body<T> {
  type: string;
  created_at: string;
  org_id: string;
  data: T;
}

function bodyOf<T>(m: SseMessage): Body<T> {
  return JSON.parse(m.data) as Body<T>;
}

/** Waits for the event of `type` whose data `match` picks, and answers its body. */
async function eventOf<T>(
  stream: SseStream,
  type: string,
  match: (data: T) => boolean,
): Promise<Body<T>> {
  const found = (ms: SseMessage[]) => ms.find((m) => m.event === type && match(bodyOf<T>(m).data));
  const ms = await stream.until((all) => found(all) !== undefined);
  return bodyOf<T>(found(ms) as SseMessage);
}

type StationData = { station: Record<string, unknown> & { id: string; name: string } };

test('stations made, renamed, their token revoked and deleted arrive as station events in the API shape', async (t) => {
  const { sys, orgId } = t.context;
  const stream = await openStream(streamUrl(t), { token: t.context.reader });
  t.teardown(() => stream.close());
  t.is(stream.status, 200);

  const made = await createStation(sys.url, orgId, { name: 'Back office' });
  const created = await eventOf<StationData>(
    stream,
    'station.created',
    (d) => d.station.id === made.id,
  );
  t.is(created.org_id, orgId);
  const api = await call<{ station: Record<string, unknown> }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${orgId}/stations/${made.id}`,
    { token: OPERATOR_TOKEN },
  );
  // The event has the station's public shape: the admin view's agent update fields are not in it.
  const {
    platform: _platform,
    update_state: _state,
    update_version: _version,
    update_at: _at,
    ...publicShape
  } = api.body.station;
  t.deepEqual(created.data.station, publicShape);

  const renamed = await call(sys.url, 'PATCH', `/admin/v1/orgs/${orgId}/stations/${made.id}`, {
    token: OPERATOR_TOKEN,
    body: { name: 'Loading dock' },
  });
  t.is(renamed.status, 200);
  const updated = await eventOf<StationData>(
    stream,
    'station.updated',
    (d) => d.station.id === made.id && d.station.name === 'Loading dock',
  );
  t.is(updated.data.station.token_revoked_at, null);

  const revoked = await call(
    sys.url,
    'DELETE',
    `/admin/v1/orgs/${orgId}/stations/${made.id}/token`,
    { token: OPERATOR_TOKEN },
  );
  t.true(revoked.status < 300);
  await eventOf<StationData>(
    stream,
    'station.updated',
    (d) => d.station.id === made.id && d.station.token_revoked_at !== null,
  );

  const gone = await call(sys.url, 'DELETE', `/admin/v1/orgs/${orgId}/stations/${made.id}`, {
    token: OPERATOR_TOKEN,
  });
  t.true(gone.status < 300);
  const deleted = await eventOf<StationData>(
    stream,
    'station.deleted',
    (d) => d.station.id === made.id,
  );
  t.is(deleted.data.station.name, 'Loading dock');
  // No station event carries the device token.
  for (const m of stream.messages) t.false(m.data.includes(made.token), m.event);
});

type LocationData = { location: Record<string, unknown> & { id: string; name: string } };

test('locations made, renamed and deleted arrive as location events in the API shape, and a change to nothing sends none', async (t) => {
  const { sys, orgId } = t.context;
  const stream = await openStream(streamUrl(t), { token: t.context.places });
  t.teardown(() => stream.close());
  t.is(stream.status, 200);
  const admin = `/admin/v1/orgs/${orgId}/locations`;

  const made = await call<{ location: LocationData['location'] }>(sys.url, 'POST', admin, {
    token: OPERATOR_TOKEN,
    body: { name: 'Annex', address: '1 Dock Road', timezone: 'Europe/Berlin' },
  });
  t.is(made.status, 201);
  const id = made.body.location.id;
  const created = await eventOf<LocationData>(
    stream,
    'location.created',
    (d) => d.location.id === id,
  );
  t.is(created.org_id, orgId);
  t.deepEqual(created.data.location, made.body.location);
  // The very shape the key-based API lists.
  const listed = await call<{ locations: LocationData['location'][] }>(
    sys.url,
    'GET',
    `/v1/orgs/${orgId}/locations`,
    { token: t.context.places },
  );
  t.deepEqual(
    listed.body.locations.find((l) => l.id === id),
    created.data.location,
  );

  const renamed = await call<{ location: LocationData['location'] }>(
    sys.url,
    'PATCH',
    `${admin}/${id}`,
    { token: OPERATOR_TOKEN, body: { name: 'North annex' } },
  );
  t.is(renamed.status, 200);
  const updated = await eventOf<LocationData>(
    stream,
    'location.updated',
    (d) => d.location.id === id && d.location.name === 'North annex',
  );
  t.deepEqual(updated.data.location, renamed.body.location);
  // Giving it the name it has changes nothing, and sends nothing.
  const same = await call(sys.url, 'PATCH', `${admin}/${id}`, {
    token: OPERATOR_TOKEN,
    body: { name: 'North annex', timezone: 'Europe/Berlin' },
  });
  t.is(same.status, 200);

  const gone = await call(sys.url, 'DELETE', `${admin}/${id}`, { token: OPERATOR_TOKEN });
  t.is(gone.status, 204);
  const deleted = await eventOf<LocationData>(
    stream,
    'location.deleted',
    (d) => d.location.id === id,
  );
  t.deepEqual(deleted.data.location, renamed.body.location);
  t.is(
    stream.messages.filter(
      (m) => m.event === 'location.updated' && bodyOf<LocationData>(m).data.location.id === id,
    ).length,
    1,
  );
});

test('a key without locations:read gets no location events, and naming them answers 403', async (t) => {
  const { sys, orgId } = t.context;
  const places = await openStream(streamUrl(t), { token: t.context.places });
  const reader = await openStream(streamUrl(t), { token: t.context.reader });
  t.teardown(() => {
    places.close();
    reader.close();
  });
  const made = await call<{ location: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'Unseen' } },
  );
  t.is(made.status, 201);
  await eventOf<LocationData>(
    places,
    'location.created',
    (d) => d.location.id === made.body.location.id,
  );
  // A station the reader sees shows the shared feed has handed it everything before.
  const marker = await createStation(sys.url, orgId, { name: 'After the location' });
  await eventOf<StationData>(reader, 'station.created', (d) => d.station.id === marker.id);
  t.false(reader.messages.some((m) => m.event.startsWith('location.')));

  const asked = await openStream(streamUrl(t, '?types=location.created'), {
    token: t.context.reader,
  });
  t.is(asked.status, 403);
  t.regex(await asked.body(), /locations:read/);
});

// Serial: it takes the organization's first printer.status, which the other tests' printers would
// race when run beside it.
test.serial('a printer deleted by the operator arrives as printer.deleted', async (t) => {
  const { sys, orgId } = t.context;
  const stream = await openStream(streamUrl(t, '?types=printer.deleted,printer.status'), {
    token: t.context.reader,
  });
  t.teardown(() => stream.close());
  const station = await createStation(sys.url, orgId, { name: 'Printer room' });
  const link = await connectLink(sys.linkAddress, station.token, [printer('label-1')]);
  t.teardown(() => link.close());
  const status = await eventOf<{ printer_id: string; status: string }>(
    stream,
    'printer.status',
    () => true,
  );
  const printerId = status.data.printer_id;
  const res = await call(sys.url, 'DELETE', `/admin/v1/orgs/${orgId}/printers/${printerId}`, {
    token: OPERATOR_TOKEN,
  });
  t.true(res.status < 300);
  const deleted = await eventOf<{ printer_id: string; station_id: string }>(
    stream,
    'printer.deleted',
    (d) => d.printer_id === printerId,
  );
  t.deepEqual(deleted.data, { printer_id: printerId, station_id: station.id });
});

type PoolData = { pool: Record<string, unknown> & { id: string; printer_ids: string[] } };

test('pools made, changed, left by a deleted printer and deleted arrive as pool events in the API shape, to printers:read only', async (t) => {
  const { sys, orgId } = t.context;
  const stream = await openStream(streamUrl(t), { token: t.context.reader });
  const places = await openStream(streamUrl(t), { token: t.context.places });
  t.teardown(() => {
    stream.close();
    places.close();
  });
  const station = await createStation(sys.url, orgId, { name: 'Pool room' });
  const link = await connectLink(sys.linkAddress, station.token, [
    printer('pool-a'),
    printer('pool-b'),
  ]);
  t.teardown(() => link.close());
  const listed = await call<{ printers: { id: string; name: string }[] }>(
    sys.url,
    'GET',
    `/v1/orgs/${orgId}/printers?station_id=${station.id}`,
    { token: t.context.reader },
  );
  const idOf = (name: string) => listed.body.printers.find((p) => p.name === name)?.id as string;
  const [a, b] = [idOf('pool-a'), idOf('pool-b')];
  t.truthy(a && b);
  const admin = `/admin/v1/orgs/${orgId}/pools`;
  /** The pool as the key-based API answers it now. */
  const read = async (id: string) =>
    (
      await call<{ pool: PoolData['pool'] }>(sys.url, 'GET', `/v1/orgs/${orgId}/pools/${id}`, {
        token: t.context.reader,
      })
    ).body.pool;

  const made = await call<{ pool: PoolData['pool'] }>(sys.url, 'POST', admin, {
    token: OPERATOR_TOKEN,
    body: { name: 'Desk', printer_ids: [a, b] },
  });
  t.is(made.status, 201);
  const id = made.body.pool.id;
  const created = await eventOf<PoolData>(stream, 'pool.created', (d) => d.pool.id === id);
  t.is(created.org_id, orgId);
  t.deepEqual(created.data.pool, made.body.pool);
  t.deepEqual(created.data.pool, await read(id));

  const changed = await call<{ pool: PoolData['pool'] }>(sys.url, 'PATCH', `${admin}/${id}`, {
    token: OPERATOR_TOKEN,
    body: { strategy: 'ordered' },
  });
  t.is(changed.status, 200);
  const updated = await eventOf<PoolData>(
    stream,
    'pool.updated',
    (d) => d.pool.id === id && d.pool.strategy === 'ordered',
  );
  t.deepEqual(updated.data.pool, changed.body.pool);

  // A printer deleted leaves its pools: the pool's members change without a PATCH.
  const dropped = await call(sys.url, 'DELETE', `/admin/v1/orgs/${orgId}/printers/${b}`, {
    token: OPERATOR_TOKEN,
  });
  t.true(dropped.status < 300);
  const left = await eventOf<PoolData>(
    stream,
    'pool.updated',
    (d) => d.pool.id === id && d.pool.printer_ids.length === 1,
  );
  t.deepEqual(left.data.pool.printer_ids, [a]);
  const before = await read(id);
  t.deepEqual(left.data.pool, before);

  const gone = await call(sys.url, 'DELETE', `${admin}/${id}`, { token: OPERATOR_TOKEN });
  t.is(gone.status, 204);
  const deleted = await eventOf<PoolData>(stream, 'pool.deleted', (d) => d.pool.id === id);
  t.deepEqual(deleted.data.pool, before);

  // A location the jobs:read and locations:read key sees shows the feed has handed it
  // everything before: no pool event among it.
  const marker = await call<{ location: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'After the pool' } },
  );
  await eventOf<LocationData>(
    places,
    'location.created',
    (d) => d.location.id === marker.body.location.id,
  );
  t.false(places.messages.some((m) => m.event.startsWith('pool.')));
  const asked = await openStream(streamUrl(t, '?types=pool.updated'), { token: t.context.places });
  t.is(asked.status, 403);
  t.regex(await asked.body(), /printers:read/);
});

type PrinterData = {
  printer: Record<string, unknown> & {
    id: string;
    name: string;
    station_id: string;
    capabilities: { color: boolean };
  };
};

/** A station's printers as the key-based API lists them. */
async function printersOf(
  t: ExecutionContext<Ctx>,
  stationId: string,
): Promise<PrinterData['printer'][]> {
  const { sys, orgId, reader } = t.context;
  const res = await call<{ printers: PrinterData['printer'][] }>(
    sys.url,
    'GET',
    `/v1/orgs/${orgId}/printers?station_id=${stationId}`,
    { token: reader },
  );
  return res.body.printers;
}

test("a printer's first report sends printer.created once, in the API list's shape; one deleted and reported again is created again", async (t) => {
  const { sys, orgId } = t.context;
  const stream = await openStream(streamUrl(t, '?types=printer.created,printer.status'), {
    token: t.context.reader,
  });
  t.teardown(() => stream.close());
  const place = await call<{ location: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/locations`,
    { token: OPERATOR_TOKEN, body: { name: 'Print shop' } },
  );
  const station = await createStation(sys.url, orgId, {
    name: 'New printers',
    location_id: place.body.location.id,
  });
  const ofStation = (d: PrinterData) => d.printer.station_id === station.id;
  const listed = () => printersOf(t, station.id);

  // First reported in the link's hello.
  const link = await connectLink(sys.linkAddress, station.token, [printer('hello-1')]);
  t.teardown(() => link.close());
  const first = await eventOf<PrinterData>(stream, 'printer.created', ofStation);
  t.is(first.org_id, orgId);
  t.is(first.data.printer.name, 'hello-1');
  t.is(first.data.printer.location_id, place.body.location.id);
  t.deepEqual(
    first.data.printer,
    (await listed()).find((p) => p.id === first.data.printer.id),
  );

  // First reported in a later report, beside one already known whose status changes.
  link.send({ printers: { printers: [printer('hello-1', 'offline'), printer('later-1')] } });
  const later = await eventOf<PrinterData>(
    stream,
    'printer.created',
    (d) => ofStation(d) && d.printer.name === 'later-1',
  );
  t.deepEqual(
    later.data.printer,
    (await listed()).find((p) => p.id === later.data.printer.id),
  );
  // The same printers reported again: statuses change, nothing is created.
  link.send({ printers: { printers: [printer('hello-1'), printer('later-1', 'offline')] } });
  await eventOf<{ printer_id: string; status: string }>(
    stream,
    'printer.status',
    (d) => d.printer_id === later.data.printer.id && d.status === 'offline',
  );
  const created = () =>
    stream.messages
      .filter((m) => m.event === 'printer.created')
      .map((m) => bodyOf<PrinterData>(m).data)
      .filter(ofStation)
      .map((d) => d.printer.name);
  t.deepEqual(created(), ['hello-1', 'later-1']);

  // A printer deleted, then reported again, is a new printer.
  const gone = await call(
    sys.url,
    'DELETE',
    `/admin/v1/orgs/${orgId}/printers/${first.data.printer.id}`,
    { token: OPERATOR_TOKEN },
  );
  t.true(gone.status < 300);
  link.send({ printers: { printers: [printer('hello-1'), printer('later-1', 'offline')] } });
  const again = await eventOf<PrinterData>(
    stream,
    'printer.created',
    (d) => ofStation(d) && d.printer.name === 'hello-1' && d.printer.id !== first.data.printer.id,
  );
  t.truthy(again);
  t.deepEqual(created(), ['hello-1', 'later-1', 'hello-1']);
});

test('a printer reported with other capabilities sends printer.updated in the API shape, on a report and on a new link', async (t) => {
  const { sys, orgId } = t.context;
  const stream = await openStream(
    streamUrl(t, '?types=printer.created,printer.updated,printer.status'),
    { token: t.context.reader },
  );
  t.teardown(() => stream.close());
  const station = await createStation(sys.url, orgId, { name: 'Changing printers' });
  const ofStation = (d: PrinterData) => d.printer.station_id === station.id;
  const listed = async () => (await printersOf(t, station.id))[0];
  const plain = printer('changing');
  const link = await connectLink(sys.linkAddress, station.token, [plain]);
  t.teardown(() => link.close());
  const created = await eventOf<PrinterData>(stream, 'printer.created', ofStation);
  const id = created.data.printer.id;

  // A report with a tray and colour: the printer can do more, its status is the same.
  const colour = {
    ...plain,
    capabilities: { ...(plain.capabilities as PrinterCapabilities), color: true, trays: ['main'] },
  };
  link.send({ printers: { printers: [colour] } });
  const updated = await eventOf<PrinterData>(stream, 'printer.updated', ofStation);
  t.like(updated.data.printer, {
    id,
    status: 'ready',
    capabilities: { color: true, trays: ['main'] },
  });
  t.deepEqual(updated.data.printer, await listed());

  // The same again, then a change of status alone: no other printer.updated.
  link.send({ printers: { printers: [colour] } });
  link.send({ printers: { printers: [{ ...colour, status: 'offline' }] } });
  await eventOf<{ printer_id: string; status: string }>(
    stream,
    'printer.status',
    (d) => d.printer_id === id && d.status === 'offline',
  );
  const updates = () =>
    stream.messages
      .filter((m) => m.event === 'printer.updated')
      .map((m) => bodyOf<PrinterData>(m).data)
      .filter(ofStation);
  t.is(updates().length, 1);

  // A new link whose hello reports it as it was: updated again.
  link.close();
  const again = await connectLink(sys.linkAddress, station.token, [plain]);
  t.teardown(() => again.close());
  const back = await eventOf<PrinterData>(
    stream,
    'printer.updated',
    (d) => ofStation(d) && d.printer.capabilities.color === false,
  );
  t.deepEqual(back.data.printer, await listed());
  t.is(updates().length, 2);
  const creations = stream.messages
    .filter((m) => m.event === 'printer.created')
    .filter((m) => ofStation(bodyOf<PrinterData>(m).data));
  t.is(creations.length, 1, 'it is the same printer');
});

test('a key without printers:read gets no printer.created', async (t) => {
  const { sys, orgId } = t.context;
  const jobsOnly = await openStream(streamUrl(t), { token: t.context.jobsOnly });
  t.teardown(() => jobsOnly.close());
  const station = await createStation(sys.url, orgId, { name: 'Unseen printers' });
  const link = await connectLink(sys.linkAddress, station.token, [printer('unseen-1')]);
  t.teardown(() => link.close());
  const { body } = await eventually(
    () =>
      call<{ printers: { id: string }[] }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgId}/printers?station_id=${station.id}`,
        { token: t.context.reader },
      ),
    (res) => res.body.printers.length === 1,
  );
  const printerId = body.printers[0]?.id as string;
  // Its printer.status, which jobs:read receives, comes after its printer.created.
  await eventOf<{ printer_id: string }>(
    jobsOnly,
    'printer.status',
    (d) => d.printer_id === printerId,
  );
  t.false(jobsOnly.messages.some((m) => m.event === 'printer.created'));
  const asked = await openStream(streamUrl(t, '?types=printer.created'), {
    token: t.context.jobsOnly,
  });
  t.is(asked.status, 403);
  t.regex(await asked.body(), /printers:read/);
});

test('API keys made and revoked arrive on a member session stream without their secret', async (t) => {
  const { orgId, admin } = t.context;
  const stream = await sessionStream(t, '?types=api_key.created,api_key.revoked');
  t.teardown(() => stream.close());
  t.is(stream.status, 200);

  const made = await admin.call<{ key: { id: string }; secret: string }>(
    'POST',
    `/console/v1/orgs/${orgId}/keys`,
    { body: { mode: 'test', scopes: ['jobs:read'], name: 'till' } },
  );
  t.is(made.status, 201);
  type KeyData = { key: Record<string, unknown> & { id: string } };
  const created = await eventOf<KeyData>(
    stream,
    'api_key.created',
    (d) => d.key.id === made.body.key.id,
  );
  t.deepEqual(created.data.key, made.body.key as unknown as KeyData['key']);
  t.is(created.data.key.revoked_at, null);

  const revoked = await admin.call('DELETE', `/console/v1/orgs/${orgId}/keys/${made.body.key.id}`);
  t.true(revoked.status < 300);
  const gone = await eventOf<KeyData>(
    stream,
    'api_key.revoked',
    (d) => d.key.id === made.body.key.id,
  );
  t.not(gone.data.key.revoked_at, null);
  for (const m of stream.messages) {
    t.false(m.data.includes(made.body.secret), m.event);
    t.false(m.data.includes(made.body.secret.slice(-12)), m.event);
  }
});

test('a key without printers:read gets no station events, no key gets key events, and naming them answers 403', async (t) => {
  const { sys, orgId } = t.context;
  const jobsOnly = await openStream(streamUrl(t), { token: t.context.jobsOnly });
  const reader = await openStream(streamUrl(t), { token: t.context.reader });
  const session = await sessionStream(t);
  t.teardown(() => {
    jobsOnly.close();
    reader.close();
    session.close();
  });
  t.is(jobsOnly.status, 200);

  const made = await createStation(sys.url, orgId, { name: 'Marker' });
  const key = await createKey(sys.url, orgId, { scopes: ['jobs:read'] });
  // The reader sees the station, the session the station and the key.
  await eventOf<StationData>(reader, 'station.created', (d) => d.station.id === made.id);
  await eventOf<StationData>(session, 'station.created', (d) => d.station.id === made.id);
  await eventOf<{ key: { id: string } }>(
    session,
    'api_key.created',
    (d) => d.key.id === key.key.id,
  );
  // One more station, seen by the reader, shows the feed (which every stream here shares) has
  // handed the jobs-only stream everything before it.
  const marker = await createStation(sys.url, orgId, { name: 'After' });
  await eventOf<StationData>(reader, 'station.created', (d) => d.station.id === marker.id);
  t.false(
    reader.messages.some((m) => m.event.startsWith('api_key.')),
    'an API key receives no key events',
  );
  t.deepEqual(
    jobsOnly.messages.filter((m) => (RESOURCE_EVENT_TYPES as readonly string[]).includes(m.event)),
    [],
  );

  const asked = await openStream(streamUrl(t, '?types=station.created'), {
    token: t.context.jobsOnly,
  });
  t.is(asked.status, 403);
  t.regex(await asked.body(), /printers:read/);
  const keys = await openStream(streamUrl(t, '?types=api_key.created'), {
    token: t.context.reader,
  });
  t.is(keys.status, 403);
  t.regex(await keys.body(), /signed-in members/);
});

test('resource events never reach a webhook endpoint, even one that takes every type', async (t) => {
  const { sys, orgId, receiver } = t.context;
  const stream = await openStream(streamUrl(t), { token: t.context.reader });
  t.teardown(() => stream.close());
  const made = await createStation(sys.url, orgId, { name: 'Quiet' });
  await eventOf<StationData>(stream, 'station.created', (d) => d.station.id === made.id);
  // The station's link opening sends station.online, which the endpoint does get: the fan-out
  // has read past station.created by then.
  const link = await connectLink(sys.linkAddress, made.token, []);
  t.teardown(() => link.close());
  const typeOf = (r: { body: Buffer }) =>
    JSON.parse(r.body.toString()) as { type: string; data: { station_id?: string } };
  await receiver.until((rs) =>
    rs.some((r) => typeOf(r).type === 'station.online' && typeOf(r).data.station_id === made.id),
  );
  t.deepEqual(
    receiver.requests
      .map((r) => typeOf(r).type)
      .filter(
        (type) =>
          !type.startsWith('job.') && !/^(station\.(online|offline)|printer\.status)$/.test(type),
      ),
    [],
  );
});
