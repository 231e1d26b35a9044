/**
 * The policies of a busy accounts service, without a database: the password-hashing queue (how
 * many hashes run and wait, and the `429` beyond that) and the verdict of the sign-in limits on an
 * attempt's counts.
 */
import test from 'ava';
import { isSpoolError } from '../lib/errors.js';
import {
  admits,
  createHashingQueue,
  defaultHashingOptions,
  nextEstimate,
} from '../services/accounts/hashing-queue.js';

const OPTIONS = { concurrency: 2, maxWaiting: 4, maxWaitMs: 1_000 };

test('a hash runs while a slot is free, waits while the queue has room and time, else is refused', (t) => {
  t.true(admits({ running: 1, waiting: 0, estimateMs: 5_000 }, OPTIONS));
  t.true(admits({ running: 2, waiting: 3, estimateMs: 100 }, OPTIONS));
  t.false(admits({ running: 2, waiting: 4, estimateMs: 100 }, OPTIONS), 'the queue is full');
  // One waiting ahead of it at 600 ms a hash, two at a time: its turn comes after 600 ms.
  t.true(admits({ running: 2, waiting: 1, estimateMs: 600 }, OPTIONS));
  // Two ahead: the second round, after 1,200 ms, past the longest wait.
  t.false(admits({ running: 2, waiting: 2, estimateMs: 600 }, OPTIONS));
});

test('the estimate of a hash follows the durations measured', (t) => {
  t.is(nextEstimate(100, 100), 100);
  t.is(nextEstimate(100, 600), 200);
  t.true(nextEstimate(200, 100) < 200);
});

test('hashes at once: one per core, up to the four threads of libuv', (t) => {
  t.is(defaultHashingOptions(1).concurrency, 1);
  t.is(defaultHashingOptions(2).concurrency, 2);
  t.is(defaultHashingOptions(64).concurrency, 4);
  t.true(defaultHashingOptions(2).maxWaiting >= 2);
});

test('the queue runs hashes in turn and refuses one beyond its room at once, with Retry-After', async (t) => {
  const queue = createHashingQueue({ concurrency: 1, maxWaiting: 2, maxWaitMs: 60_000 });
  const releases: Array<() => void> = [];
  const started: number[] = [];
  const hash = (n: number) => () =>
    new Promise<number>((resolve) => {
      started.push(n);
      releases.push(() => resolve(n));
    });
  const first = queue.run(hash(1));
  const second = queue.run(hash(2));
  const third = queue.run(hash(3));
  const refused = await queue.run(hash(4)).catch((err: unknown) => err);
  t.true(isSpoolError(refused));
  t.like(refused, { code: 'rate_limited', retryAfter: 1 });
  t.deepEqual(queue.load().running, 1);
  t.deepEqual(queue.load().waiting, 2);

  await Promise.resolve();
  t.deepEqual(started, [1]);
  releases.shift()?.();
  t.is(await first, 1);
  await new Promise(setImmediate);
  t.deepEqual(started, [1, 2], 'the one that waited longest goes next');
  releases.shift()?.();
  t.is(await second, 2);
  await new Promise(setImmediate);
  releases.shift()?.();
  t.is(await third, 3);
  t.like(queue.load(), { running: 0, waiting: 0 });
});

test('a hash that fails frees its slot', async (t) => {
  const queue = createHashingQueue({ concurrency: 1, maxWaiting: 0, maxWaitMs: 60_000 });
  await t.throwsAsync(queue.run(() => Promise.reject(new Error('scrypt failed'))));
  t.is(await queue.run(() => Promise.resolve('next')), 'next');
});

/**
 * A queue of one slot on a clock of the test's own, whose first hash runs until `finishAfter`
 * moves the clock by `ms` and ends it.
 */
function queueWithSlowHash(maxWaiting: number) {
  let clock = 0;
  const queue = createHashingQueue({
    concurrency: 1,
    maxWaiting,
    maxWaitMs: 1_000,
    now: () => clock,
  });
  let release = () => {};
  const first = queue.run(
    () =>
      new Promise<string>((resolve) => {
        release = () => resolve('first');
      }),
  );
  return {
    queue,
    async finishAfter(ms: number): Promise<string> {
      clock += ms;
      await new Promise(setImmediate);
      release();
      return first;
    },
  };
}

test('a hash whose turn comes after twice the longest wait is refused then, and its slot goes on', async (t) => {
  const { queue, finishAfter } = queueWithSlowHash(2);
  const late = queue.run(() => Promise.resolve('late'));
  const next = queue.run(() => Promise.resolve('next'));
  // The machine got slow: the running hash took far longer than the estimate admitted the others on.
  t.is(await finishAfter(2_500), 'first');
  const refused = await late.catch((err: unknown) => err);
  t.like(refused, { code: 'rate_limited', retryAfter: 1 });
  // The one behind it waited as long, so it is refused too, and the slots are free again.
  t.like(await next.catch((err: unknown) => err), { code: 'rate_limited' });
  t.like(queue.load(), { running: 0, waiting: 0 });
  t.is(await queue.run(() => Promise.resolve('fresh')), 'fresh');
});

test('a hash whose turn comes within twice the longest wait runs', async (t) => {
  const { queue, finishAfter } = queueWithSlowHash(1);
  const second = queue.run(() => Promise.resolve('second'));
  t.is(await finishAfter(1_500), 'first');
  t.is(await second, 'second');
});
