/**
 * The delivery worker's rounds, against an in-memory store and a sender that answers at once (the
 * real store and HTTP are the other webhook tests'): every outcome a round records frees room
 * that the same round claims again, so the wire never waits a round for it.
 */
import test from 'ava';
import { ManualClock } from '../lib/clock.js';
import { silentLogger } from '../lib/logger.js';
import type { ClaimedDelivery, ClaimInput } from '../services/webhooks/claims.js';
import { RETRY_WAITS_MS } from '../services/webhooks/defaults.js';
import type { AttemptResult, Sender } from '../services/webhooks/delivery.js';
import type { AttemptOutcomeInput } from '../services/webhooks/outcomes.js';
import type { Round } from '../services/webhooks/rounds.js';
import { DeliveryWorker } from '../services/webhooks/worker.js';

interface RoundSeen {
  recorded: number;
  /** Deliveries due when the round claimed. */
  due: number;
  claimed: number;
}

/** Due deliveries in memory; each round takes a turn of the event loop, as a database's would. */
function memoryStore(deliveries: ClaimedDelivery[]) {
  const due = [...deliveries];
  const recorded: string[] = [];
  const rounds: RoundSeen[] = [];
  return {
    recorded,
    rounds,
    async recordAndClaim(
      outcomes: readonly AttemptOutcomeInput[],
      _record: unknown,
      claim: ClaimInput | undefined,
    ): Promise<Round> {
      await new Promise((resolve) => setImmediate(resolve));
      for (const o of outcomes) recorded.push(o.claimed.id);
      const dueBefore = due.length;
      let claimed: ClaimedDelivery[] = [];
      if (claim) {
        const candidates = due
          .filter(
            (d) => !claim.exclude.includes(d.endpointId) && !claim.excludeOrgs.includes(d.orgId),
          )
          .slice(0, claim.limit);
        const picked = new Set(claim.pick(candidates));
        claimed = due.filter((d) => picked.has(d.id));
        for (const c of claimed) due.splice(due.indexOf(c), 1);
      }
      rounds.push({ recorded: outcomes.length, due: dueBefore, claimed: claimed.length });
      return { recorded: outcomes.map(() => 'succeeded'), disabledIn: [], claimed };
    },
  };
}

const answered: Sender = {
  send: async (): Promise<AttemptResult> => ({
    succeeded: true,
    statusCode: 200,
    error: '',
    durationMs: 1,
    responseBody: '',
    retryAfter: undefined,
  }),
  close: async () => {},
};

function deliveries(count: number, endpoints: number): ClaimedDelivery[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `d${i}`,
    orgId: 'org',
    endpointId: `e${i % endpoints}`,
    eventType: 'job.created',
    url: 'http://receiver.invalid/',
    body: Buffer.from('{}'),
    secrets: ['secret'],
    attempt: 1,
    roundAttempt: 1,
    claim: 'claim',
    startedAt: new Date(0),
    traceContext: {},
  }));
}

test('a round that records outcomes claims as many again while deliveries are due', async (t) => {
  const store = memoryStore(deliveries(60, 3));
  const worker = new DeliveryWorker({
    store,
    sender: answered,
    clock: new ManualClock(),
    logger: silentLogger,
    retryWaitsMs: RETRY_WAITS_MS,
    jitter: 0,
    concurrency: 4,
    endpointConcurrency: 4,
    orgConcurrency: 4,
    leaseMs: 60_000,
    pollMs: 60_000,
  });
  await worker.runDue();

  t.is(store.recorded.length, 60, 'every delivery recorded');
  t.is(new Set(store.recorded).size, 60, 'each once');
  t.is(worker.stats.attempts, 60);
  for (const [i, round] of store.rounds.entries()) {
    t.true(
      round.claimed >= Math.min(round.recorded, round.due),
      `round ${i + 1} recorded ${round.recorded} with ${round.due} due and claimed ${round.claimed}`,
    );
  }
});
