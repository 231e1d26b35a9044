/**
 * The delivery log's attempts (docs/webhooks.md, "Rounds" and "A crash mid-attempt"), read
 * through the store as the API reads them: an attempt being sent shows `in_flight`; when its
 * claim lapses the next claim logs it `abandoned` and makes the next attempt; an outcome that
 * comes in late replaces the `abandoned`, and every number appears once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import anyTest, { type TestFn } from 'ava';
import { ManualClock } from '../lib/clock.js';
import { createPool, type Pool } from '../lib/db.js';
import type { SpoolEvent } from '../lib/events.js';
import { migrate } from '../lib/migrate.js';
import type { ClaimedDelivery, ClaimInput } from '../services/webhooks/claims.js';
import { createSecretBox, generateSecret } from '../services/webhooks/crypto.js';
import { migrations } from '../services/webhooks/index.js';
import type { AttemptOutcomeInput, AttemptRecord } from '../services/webhooks/outcomes.js';
import { createWebhookStore, type WebhookStore } from '../services/webhooks/store.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const test = anyTest as TestFn<{ db: TestDatabase; pool: Pool }>;

const LEASE_MS = 60_000;

test.before(async (t) => {
  const db = await createTestDatabase();
  const pool = createPool({ url: db.url, max: 4 });
  await migrate(pool, [migrations]);
  t.context = { db, pool };
});

test.after.always(async (t) => {
  await t.context.pool?.end();
  await t.context.db?.drop();
});

function event(orgId: string, clock: ManualClock): SpoolEvent {
  return {
    id: randomUUID(),
    type: 'job.created',
    created_at: clock.now().toISOString(),
    org_id: orgId,
    data: { id: randomUUID() },
  };
}

/** A round's claim of everything due of the organization, as a worker with room makes it. */
function claimAll(clock: ManualClock, orgId: string): ClaimInput {
  const now = clock.now();
  return {
    now,
    leaseUntil: new Date(now.getTime() + LEASE_MS),
    limit: 10,
    exclude: [],
    excludeOrgs: [],
    pick: (candidates) => candidates.filter((c) => c.orgId === orgId).map((c) => c.id),
    maxAttempts: 8,
    expectWork: true,
  };
}

function answered(statusCode: number): AttemptRecord {
  return {
    succeeded: statusCode < 300,
    statusCode,
    error: statusCode < 300 ? '' : `the receiver answered ${statusCode}`,
    durationMs: 5,
    responseBody: '',
  };
}

async function attemptsLogged(
  store: WebhookStore,
  orgId: string,
  endpointId: string,
): Promise<Array<{ number: number; outcome: string; statusCode: number }>> {
  const { items } = await store.listDeliveries(orgId, endpointId, {
    limit: 10,
    cursor: '',
    state: undefined,
  });
  if (items.length !== 1) throw new Error(`expected one delivery, found ${items.length}`);
  return (items[0]?.attempts ?? []).map((a) => ({
    number: a.number,
    outcome: a.outcome,
    statusCode: a.statusCode,
  }));
}

/** Records one attempt's outcome in a round that claims nothing. */
function recordOnly(store: WebhookStore, clock: ManualClock, outcome: AttemptOutcomeInput) {
  return store.recordAndClaim(
    [outcome],
    { now: clock.now(), failingDisableMs: Number.MAX_SAFE_INTEGER },
    undefined,
  );
}

/**
 * A store of its own on a fresh organization with one endpoint, and one event's delivery the
 * fan-out handed over claimed, as to a worker about to send it.
 */
async function handedOver(pool: Pool) {
  const clock = new ManualClock();
  const store = createWebhookStore(pool, clock, createSecretBox(randomBytes(32)));
  const orgId = randomUUID();
  const endpoint = await store.createEndpoint({
    orgId,
    url: 'https://receiver.invalid/hooks',
    events: ['job.created'],
    description: '',
    secret: generateSecret(),
  });
  const now = clock.now();
  const fanned = await store.fanOut([{ event: event(orgId, clock), trace: {} }], 1 << 20, {
    now,
    leaseUntil: new Date(now.getTime() + LEASE_MS),
    claim: randomUUID(),
    pick: (candidates) => candidates.map((c) => c.id),
  });
  if (fanned.claimed.length !== 1) throw new Error(`handed over ${fanned.claimed.length}`);
  return {
    clock,
    store,
    orgId,
    endpointId: endpoint.id,
    claimed: fanned.claimed[0] as ClaimedDelivery,
  };
}

test.serial(
  'an attempt in flight, abandoned by a lapsed claim, then recorded late: each number logged once with what happened',
  async (t) => {
    // The fan-out hands the delivery over claimed: its first attempt is on the wire.
    const { clock, store, orgId, endpointId, claimed: first } = await handedOver(t.context.pool);
    t.deepEqual(await attemptsLogged(store, orgId, endpointId), [
      { number: 1, outcome: 'in_flight', statusCode: 0 },
    ]);

    // Its worker says nothing for longer than the lease: the next claim logs it abandoned.
    clock.advance(LEASE_MS + 1);
    const record = { now: clock.now(), failingDisableMs: Number.MAX_SAFE_INTEGER };
    const round = await store.recordAndClaim([], record, claimAll(clock, orgId));
    const second = round.claimed[0] as ClaimedDelivery;
    t.is(round.claimed.length, 1);
    t.is(second.attempt, 2);
    t.deepEqual(await attemptsLogged(store, orgId, endpointId), [
      { number: 1, outcome: 'abandoned', statusCode: 0 },
      { number: 2, outcome: 'in_flight', statusCode: 0 },
    ]);

    // The first worker was only slow: its outcome replaces the abandoned one, and the delivery
    // stays with the claim that holds it now.
    const late = await recordOnly(store, clock, {
      claimed: first,
      result: answered(200),
      retryAt: undefined,
    });
    t.deepEqual(late.recorded, ['lost']);
    t.deepEqual(await attemptsLogged(store, orgId, endpointId), [
      { number: 1, outcome: 'succeeded', statusCode: 200 },
      { number: 2, outcome: 'in_flight', statusCode: 0 },
    ]);

    // The second attempt fails and is retried later.
    const retryAt = new Date(clock.now().getTime() + 30_000);
    const failed = await recordOnly(store, clock, {
      claimed: second,
      result: answered(503),
      retryAt,
    });
    t.deepEqual(failed.recorded, ['retry']);
    t.deepEqual(await attemptsLogged(store, orgId, endpointId), [
      { number: 1, outcome: 'succeeded', statusCode: 200 },
      { number: 2, outcome: 'failed', statusCode: 503 },
    ]);
  },
);

test.serial(
  'an outcome that comes in after its endpoint was deleted leaves nothing of the delivery behind',
  async (t) => {
    const { clock, store, orgId, endpointId, claimed: sent } = await handedOver(t.context.pool);

    // Deleted while its attempt is on the wire; the answer comes in afterwards.
    await store.deleteEndpoint(orgId, endpointId);
    const late = await recordOnly(store, clock, {
      claimed: sent,
      result: answered(200),
      retryAt: undefined,
    });
    t.deepEqual(late.recorded, ['lost']);
    const { rows } = await t.context.pool.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM webhook_attempts WHERE org_id = $1)
       + (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1) AS n`,
      [orgId],
    );
    t.is(Number(rows[0]?.n), 0, 'no row of the deleted endpoint’s delivery is left');
  },
);
