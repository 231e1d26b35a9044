/**
 * The stations store on a real PostgreSQL: the outbox rows of its writes go to the relay as soon as
 * they are committed, so their events leave at once rather than at the relay's poll, which only
 * takes rows a few seconds old.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { ManualClock } from '../lib/clock.js';
import type { OutboxRow } from '../lib/outbox.js';
import { migrations } from '../services/stations/index.js';
import { OUTBOX_TABLE } from '../services/stations/station-outbox.js';
import { createStationStore } from '../services/stations/store.js';
import { createStoreDatabase, type StoreDatabase } from './helpers/store-database.js';

const test = anyTest as TestFn<StoreDatabase>;

test.before(async (t) => {
  t.context = await createStoreDatabase([migrations]);
});

test.after.always(async (t) => {
  await t.context?.close();
});

function storeFor(t: { context: StoreDatabase }) {
  const handed: OutboxRow[] = [];
  const clock = new ManualClock('2026-11-25T10:00:00Z');
  const store = createStationStore(t.context.pool, clock, (rows) => handed.push(...rows));
  return { store, handed };
}

async function newStation(store: ReturnType<typeof storeFor>['store'], orgId: string) {
  const tokenHash = randomBytes(32);
  const station = await store.createStation({
    orgId,
    name: 'front desk',
    locationId: '',
    region: 'default',
    tokenHash,
  });
  return { station, tokenHash };
}

const offlineRows = (rows: OutboxRow[], orgId: string) =>
  rows.filter((r) => r.subject === `events.${orgId}.station.offline`);

test('deleting an online station hands its station.offline to the relay when it commits', async (t) => {
  const { store, handed } = storeFor(t);
  const orgId = randomUUID();
  const { station, tokenHash } = await newStation(store, orgId);
  t.truthy(await store.linkOpened(tokenHash, randomUUID(), [], { version: 'test' }));

  await store.deleteStation(orgId, station.id);

  const rows = offlineRows(handed, orgId);
  t.is(rows.length, 1);
  t.deepEqual(JSON.parse((rows[0] as OutboxRow).payload.toString()).data, {
    station_id: station.id,
  });
  // The row handed over is the one committed, for the relay to delete once published.
  const { rows: stored } = await t.context.pool.query(
    `SELECT id FROM ${OUTBOX_TABLE} WHERE id = $1`,
    [(rows[0] as OutboxRow).id],
  );
  t.is(stored.length, 1);
});

test('deleting an offline station hands the relay its station.deleted, and no station.offline', async (t) => {
  const { store, handed } = storeFor(t);
  const orgId = randomUUID();
  const { station } = await newStation(store, orgId);
  handed.length = 0;

  await store.deleteStation(orgId, station.id);

  t.deepEqual(offlineRows(handed, orgId), []);
  t.deepEqual(
    handed.map((r) => r.subject),
    [`events.${orgId}.station.deleted`],
  );
});

test('a link recorded closed twice (two replicas sweeping a lost one) sends station.offline once', async (t) => {
  const { store, handed } = storeFor(t);
  const orgId = randomUUID();
  const { tokenHash } = await newStation(store, orgId);
  const linkId = `${randomUUID()}:${randomUUID()}`;
  const opened = await store.linkOpened(tokenHash, linkId, [], { version: 'test' });
  if (!opened) throw new Error('the link did not open');

  const closed = await Promise.all([
    store.linkClosed(opened.station, linkId),
    store.linkClosed(opened.station, linkId),
  ]);
  t.deepEqual(closed.sort(), [false, true]);
  t.is(await store.linkClosed(opened.station, linkId), false);
  t.is(offlineRows(handed, orgId).length, 1);
});
