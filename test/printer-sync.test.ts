/**
 * The printers a link's hello and later printer lists record: new printers are added, changed
 * ones take the new status (keeping their id), ones no longer reported read `removed`, and a
 * `printer.status` event goes out for each of those and for no printer that did not change.
 */
import test from 'ava';
import { collectEvents } from './helpers/events.js';
import { connectLink, printer } from './helpers/link-client.js';
import {
  call,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
} from './helpers/system.js';

interface PrinterView {
  id: string;
  name: string;
  status: string;
  detail: string;
  capabilities: { paper_sizes: string[]; duplex: boolean };
  updated_at: string;
}

test('a link opening records added, changed and removed printers and says so once each', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const events = await collectEvents(sys.nats.url);
  t.teardown(() => events.close());
  const orgId = await createOrg(sys.url);
  const station = await createStation(sys.url, orgId);
  // Events and views give times to the second: the clock starts on one and moves by minutes.
  sys.clock.set(new Date(Math.ceil(Date.now() / 1000) * 1000));
  const printers = async () => {
    const res = await call<{ items: PrinterView[] }>(
      sys.url,
      'GET',
      `/admin/v1/orgs/${orgId}/printers?station_id=${station.id}`,
      { token: OPERATOR_TOKEN },
    );
    return new Map(res.body.items.map((p) => [p.name, p]));
  };
  const statusEvents = (after: Date) =>
    events.events.filter(
      (e) => e.type === 'printer.status' && new Date(e.created_at) >= after && e.org_id === orgId,
    );

  const openedAt = sys.clock.now();
  const first = await connectLink(sys.linkAddress, station.token, [
    printer('kept'),
    printer('changed'),
    printer('relabelled'),
    printer('gone'),
  ]);
  const ids = first.welcome.printerIds;
  t.deepEqual(Object.keys(ids).sort(), ['changed', 'gone', 'kept', 'relabelled']);
  await eventually(
    async () => statusEvents(openedAt).length,
    (n) => n === 4,
  );
  t.deepEqual(
    statusEvents(openedAt)
      .map((e) => [e.data.printer_id, e.data.status])
      .sort(),
    Object.values(ids)
      .map((id) => [id, 'ready'])
      .sort(),
  );
  first.close();
  await eventually(
    async () => events.events.some((e) => e.type === 'station.offline'),
    (seen) => seen,
  );

  // The agent comes back a minute later: one printer as it was (with new paper sizes, which is
  // not a status change), one jammed, one new, one gone.
  sys.clock.advance(60_000);
  const reopenedAt = sys.clock.now();
  const wide = printer('kept');
  wide.capabilities = { ...wide.capabilities, paperSizes: ['A3'] } as typeof wide.capabilities;
  const second = await connectLink(sys.linkAddress, station.token, [
    wide,
    printer('changed', 'error', 'paper jam'),
    printer('relabelled', 'ready', 'now on tray 2'),
    printer('new'),
  ]);
  t.teardown(() => second.close());
  const again = second.welcome.printerIds;
  t.is(again.kept, ids.kept);
  t.is(again.changed, ids.changed);
  t.is(again.relabelled, ids.relabelled);
  t.truthy(again.new);
  t.false(Object.values(ids).includes(again.new as string));
  t.is(again.gone, undefined);

  await eventually(
    async () => statusEvents(reopenedAt).length,
    (n) => n >= 4,
  );
  await eventually(
    async () =>
      events.events.some(
        (e) => e.type === 'station.online' && new Date(e.created_at) >= reopenedAt,
      ),
    (seen) => seen,
  );
  t.deepEqual(
    statusEvents(reopenedAt)
      .map((e) => [e.data.printer_id, e.data.status, e.data.detail])
      .sort(),
    [
      [ids.changed, 'error', 'paper jam'],
      [ids.relabelled, 'ready', 'now on tray 2'],
      [again.new, 'ready', ''],
      [ids.gone, 'removed', 'the station no longer reports this printer'],
    ].sort(),
  );

  const after = await printers();
  t.like(after.get('kept'), { id: ids.kept, status: 'ready', detail: '' });
  t.deepEqual(after.get('kept')?.capabilities.paper_sizes, ['A3']);
  // Other capabilities are a change too, and move `updated_at`.
  t.is(new Date(after.get('kept')?.updated_at ?? 0).getTime(), reopenedAt.getTime());
  t.like(after.get('changed'), { id: ids.changed, status: 'error', detail: 'paper jam' });
  t.is(new Date(after.get('changed')?.updated_at ?? 0).getTime(), reopenedAt.getTime());
  t.like(after.get('relabelled'), { status: 'ready', detail: 'now on tray 2' });
  t.like(after.get('new'), { id: again.new, status: 'ready' });
  t.like(after.get('gone'), {
    id: ids.gone,
    status: 'removed',
    detail: 'the station no longer reports this printer',
  });

  // A printer list the agent sends later is recorded the same way.
  sys.clock.advance(60_000);
  const listedAt = sys.clock.now();
  second.send({ printers: { printers: [printer('kept'), printer('changed'), printer('gone')] } });
  await eventually(
    async () => (await printers()).get('gone')?.status,
    (status) => status === 'ready',
  );
  const listed = await printers();
  t.like(listed.get('gone'), { id: ids.gone, detail: '' });
  t.like(listed.get('new'), { id: again.new, status: 'removed' });
  t.like(listed.get('relabelled'), { status: 'removed' });
  await eventually(
    async () => statusEvents(listedAt).length,
    (n) => n >= 4,
  );
  t.deepEqual(
    statusEvents(listedAt)
      .map((e) => [e.data.printer_id, e.data.status])
      .sort(),
    [
      [ids.changed, 'ready'],
      [ids.gone, 'ready'],
      [again.new, 'removed'],
      [ids.relabelled, 'removed'],
    ].sort(),
  );

  // The same list again, but for one status: the printers that did not change keep their time.
  sys.clock.advance(60_000);
  second.send({
    printers: { printers: [printer('kept'), printer('changed', 'offline'), printer('gone')] },
  });
  await eventually(
    async () => (await printers()).get('changed')?.status,
    (status) => status === 'offline',
  );
  const unchanged = await printers();
  t.is(unchanged.get('kept')?.updated_at, listed.get('kept')?.updated_at);
  t.is(unchanged.get('gone')?.updated_at, listed.get('gone')?.updated_at);
});

test('links that open at once are recorded together, each with its own printers and events', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const events = await collectEvents(sys.nats.url);
  t.teardown(() => events.close());
  const orgId = await createOrg(sys.url);
  const stations = await Promise.all(
    Array.from({ length: 40 }, () => createStation(sys.url, orgId)),
  );

  // Every station at once, and the first one twice: its two opens cannot share a transaction.
  const links = await Promise.all([
    ...stations.map((s) => connectLink(sys.linkAddress, s.token, [printer('a'), printer('b')])),
    connectLink(sys.linkAddress, (stations[0] as { token: string }).token, [
      printer('a'),
      printer('b'),
    ]),
  ]);
  t.teardown(() => {
    for (const l of links) l.close();
  });
  const ids = links.slice(0, 40).map((l) => l.welcome.printerIds);
  t.is(new Set(ids.flatMap((p) => [p.a, p.b])).size, 80, 'two stations share a printer id');
  t.deepEqual(links[40]?.welcome.printerIds, ids[0], 'a station opened twice got new printers');

  const res = await call<{ items: Array<{ id: string; station_id: string; name: string }> }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${orgId}/printers?limit=100`,
    { token: OPERATOR_TOKEN },
  );
  t.is(res.body.items.length, 80);
  stations.forEach((s, i) => {
    const own = res.body.items.filter((p) => p.station_id === s.id);
    t.deepEqual(own.map((p) => p.id).sort(), [ids[i]?.a, ids[i]?.b].sort());
  });
  await eventually(
    async () =>
      events.events.filter((e) => e.org_id === orgId && e.type === 'printer.status').length,
    (n) => n >= 80,
  );
  const ofOrg = events.events.filter((e) => e.org_id === orgId);
  const online = ofOrg.filter((e) => e.type === 'station.online').map((e) => e.data.station_id);
  t.deepEqual([...new Set(online)].sort(), stations.map((s) => s.id).sort());
  // The first station's second open replaced its first link: it stayed online, and said so once.
  t.is(online.length, 40);
  // The second open of the first station changed no printer, so it said nothing of them.
  const statuses = ofOrg.filter((e) => e.type === 'printer.status');
  t.deepEqual(statuses.map((e) => e.data.printer_id).sort(), ids.flatMap((p) => [p.a, p.b]).sort());
});

test('links that close at once take their stations offline together, each once; a replaced link changes nothing', async (t) => {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const events = await collectEvents(sys.nats.url);
  t.teardown(() => events.close());
  const orgId = await createOrg(sys.url);
  const stations = await Promise.all(
    Array.from({ length: 30 }, () => createStation(sys.url, orgId)),
  );
  const links = await Promise.all(
    stations.map((s) => connectLink(sys.linkAddress, s.token, [printer('a')])),
  );
  // The first station's agent connects again: its newer link replaces the first, whose end must
  // not take the station offline.
  const [kept] = stations as [(typeof stations)[0]];
  const newer = await connectLink(sys.linkAddress, kept.token, [printer('a')]);
  t.teardown(() => newer.close());
  const onlineOf = async () => {
    const res = await call<{ items: Array<{ id: string; online: boolean }> }>(
      sys.url,
      'GET',
      `/admin/v1/orgs/${orgId}/stations?limit=100`,
      { token: OPERATOR_TOKEN },
    );
    return new Map(res.body.items.map((s) => [s.id, s.online]));
  };
  t.true([...(await onlineOf()).values()].every(Boolean));

  for (const link of links) link.close();
  const gone = stations.slice(1).map((s) => s.id);
  const online = await eventually(onlineOf, (m) => gone.every((id) => m.get(id) === false));
  t.true(online.get(kept.id));
  const offline = () =>
    events.events
      .filter((e) => e.org_id === orgId && e.type === 'station.offline')
      .map((e) => e.data.station_id as string);
  await eventually(
    async () => offline().length,
    (n) => n >= gone.length,
  );
  t.deepEqual(offline().sort(), [...gone].sort());
});
