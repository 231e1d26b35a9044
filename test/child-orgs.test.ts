/**
 * The gateway's cache of which organization is whose child (gateway/child-orgs.ts): an answer is
 * kept for its time and then asked again, a deleted child is forgotten at once, and a failure to
 * ask is not kept.
 */
import test from 'ava';
import { ChildOrgCache } from '../gateway/child-orgs.js';
import { ManualClock } from '../lib/clock.js';

function counted(answers: Record<string, string>) {
  const asked: string[] = [];
  let failing = false;
  return {
    asked,
    fail(on: boolean) {
      failing = on;
    },
    load: async (orgId: string) => {
      asked.push(orgId);
      if (failing) throw new Error('the accounts service is unreachable');
      return answers[orgId] ?? '';
    },
  };
}

test('an answer, a child or none, is kept for its time, then asked again', async (t) => {
  const clock = new ManualClock();
  const source = counted({ child: 'parent' });
  const cache = new ChildOrgCache({ load: source.load, clock, ttlMs: 1_000 });
  t.is(await cache.parentOf('child'), 'parent');
  t.is(await cache.parentOf('child'), 'parent');
  t.is(await cache.parentOf('stranger'), '');
  t.is(await cache.parentOf('stranger'), '');
  t.deepEqual(source.asked, ['child', 'stranger']);
  clock.advance(1_000);
  t.is(await cache.parentOf('child'), 'parent');
  t.deepEqual(source.asked, ['child', 'stranger', 'child']);
});

test('lookups at once share one question', async (t) => {
  const source = counted({ child: 'parent' });
  const cache = new ChildOrgCache({ load: source.load, clock: new ManualClock() });
  const answers = await Promise.all([1, 2, 3].map(() => cache.parentOf('child')));
  t.deepEqual(answers, ['parent', 'parent', 'parent']);
  t.is(source.asked.length, 1);
});

test('a child forgotten is asked again, and a lookup under way as it was forgotten is not kept', async (t) => {
  const answers: Record<string, string> = { child: 'parent' };
  const source = counted(answers);
  const cache = new ChildOrgCache({ load: source.load, clock: new ManualClock() });
  t.is(await cache.parentOf('child'), 'parent');
  answers.child = '';
  cache.forget('child');
  t.is(await cache.parentOf('child'), '');

  answers.child = 'parent';
  cache.forget('child');
  const underway = cache.parentOf('child');
  answers.child = '';
  cache.forget('child');
  await underway;
  t.is(await cache.parentOf('child'), '', 'the answer begun before the deletion was not kept');
});

test('a failure to ask is not kept', async (t) => {
  const source = counted({ child: 'parent' });
  const cache = new ChildOrgCache({ load: source.load, clock: new ManualClock() });
  source.fail(true);
  await t.throwsAsync(cache.parentOf('child'), { message: /unreachable/ });
  source.fail(false);
  t.is(await cache.parentOf('child'), 'parent');
});
