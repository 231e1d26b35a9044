/** Work one at a time per key (lib/keyed-turns.ts), as webhook endpoint creations use it. */
import test from 'ava';
import { KeyedTurns } from '../lib/keyed-turns.js';

/** A promise and the function that settles it. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every settled promise's reactions run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

test('work under one key starts only once the work asked for before it has ended', async (t) => {
  const turns = new KeyedTurns();
  const started: string[] = [];
  const first = deferred<string>();
  const second = deferred<string>();
  const a = turns.run('org-1', () => {
    started.push('a');
    return first.promise;
  });
  const b = turns.run('org-1', () => {
    started.push('b');
    return second.promise;
  });
  await settle();
  t.deepEqual(started, ['a']);
  first.resolve('one');
  t.is(await a, 'one');
  await settle();
  t.deepEqual(started, ['a', 'b']);
  second.resolve('two');
  t.is(await b, 'two');
});

test('work under another key goes on beside it', async (t) => {
  const turns = new KeyedTurns();
  const held = deferred();
  const started: string[] = [];
  void turns.run('org-1', () => {
    started.push('org-1');
    return held.promise;
  });
  t.is(
    await turns.run('org-2', async () => {
      started.push('org-2');
      return 'done';
    }),
    'done',
  );
  t.deepEqual(started, ['org-1', 'org-2']);
  held.resolve();
});

test('work that fails fails alone, and the next under its key still runs', async (t) => {
  const turns = new KeyedTurns();
  const failing = turns.run('org-1', async () => {
    throw new Error('the limit is reached');
  });
  const next = turns.run('org-1', async () => 'created');
  await t.throwsAsync(failing, { message: 'the limit is reached' });
  t.is(await next, 'created');
});

test('a key is forgotten once its work has ended', async (t) => {
  const turns = new KeyedTurns();
  const held = deferred();
  const running = turns.run('org-1', () => held.promise);
  t.is(turns.size, 1);
  held.resolve();
  await running;
  await settle();
  t.is(turns.size, 0);
});
