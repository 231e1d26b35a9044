/**
 * The gateway's key cache remembers refusals as it remembers keys: a made-up key sent again and
 * again costs the accounts service one look-up per cache period, not one per request.
 */
import test from 'ava';
import { KeyCache } from '../gateway/key-cache.js';
import { ManualClock } from '../lib/clock.js';
import { unauthorized } from '../lib/errors.js';

test('a refused key is refused from the cache until its period ends; a failure to look up is not kept', async (t) => {
  const clock = new ManualClock(new Date('2026-11-27T00:00:00Z'));
  let loads = 0;
  let down = false;
  const cache = new KeyCache({
    clock,
    ttlMs: 30_000,
    load: async () => {
      loads++;
      if (down) throw new Error('accounts unreachable');
      throw unauthorized('the API key is not valid');
    },
  });
  const madeUp = Buffer.alloc(32, 7);
  for (let i = 0; i < 5; i++) {
    await t.throwsAsync(cache.get(madeUp), { message: 'the API key is not valid' });
  }
  t.is(loads, 1);
  clock.advance(30_000);
  await t.throwsAsync(cache.get(madeUp));
  t.is(loads, 2, 'looked up again once the period ended');

  // An accounts service that cannot answer says nothing of the key: asked again each time.
  down = true;
  const other = Buffer.alloc(32, 8);
  await t.throwsAsync(cache.get(other), { message: 'accounts unreachable' });
  await t.throwsAsync(cache.get(other), { message: 'accounts unreachable' });
  t.is(loads, 4);
});
