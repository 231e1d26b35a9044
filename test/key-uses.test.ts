/**
 * The gateway's batching of key uses: written a chunk a call, one write at a time, and what a
 * failed write held kept for the next.
 */
import test from 'ava';
import { type KeyUse, KeyUses } from '../gateway/key-uses.js';
import { ManualClock } from '../lib/clock.js';
import { silentLogger } from '../lib/logger.js';

const key = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

test('uses go a chunk a call, sorted by key; a failed write keeps what it had left', async (t) => {
  const calls: KeyUse[][] = [];
  let failNext = false;
  const uses = new KeyUses({
    record: async (chunk) => {
      if (failNext) {
        failNext = false;
        throw new Error('accounts away');
      }
      calls.push(chunk);
    },
    clock: new ManualClock('2026-11-26T10:00:00Z'),
    logger: silentLogger,
  });
  for (let i = 2499; i >= 0; i--) uses.note('org', key(i));
  await uses.flush();
  t.deepEqual(
    calls.map((c) => c.length),
    [1000, 1000, 500],
  );
  t.is(calls[0]?.[0]?.keyId, key(0), 'sorted by key');

  calls.length = 0;
  for (let i = 0; i < 1500; i++) uses.note('org', key(i));
  failNext = true;
  await uses.flush();
  t.deepEqual(calls, [], 'the first chunk failed, and nothing after it was sent');
  await uses.flush();
  t.deepEqual(
    calls.map((c) => c.length),
    [1000, 500],
    'the next write sends all of them',
  );
});
