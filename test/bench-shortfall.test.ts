/**
 * The benchmark fails rather than report figures under a label that overstates what ran
 * (bench/shortfall.ts): fewer streams, links, agents or jobs than asked, or more than a few errors.
 */
import test from 'ava';
import { fewErrors, requireAll, requireFewErrors, ShortfallError } from '../bench/shortfall.js';

test('a scenario that opened fewer than it asked for fails, naming what was asked and what ran', (t) => {
  const err = t.throws(
    () =>
      requireAll('event streams: streams opened', 1_000, 20, [
        'the stream answered 429',
        'the stream answered 429',
      ]),
    { instanceOf: ShortfallError },
  );
  t.is(
    err?.message,
    'event streams: streams opened: 20 of the 1,000 asked for (the stream answered 429)',
  );
  t.notThrows(() => requireAll('fleet: links connected', 10_000, 10_000));
});

test('errors up to one in a thousand pass; one more fails the run', (t) => {
  t.is(fewErrors(999), 0);
  t.is(fewErrors(5_000), 5);
  t.notThrows(() => requireFewErrors('ingest: POST /jobs', 5_000, 5));
  const err = t.throws(() => requireFewErrors('ingest: POST /jobs', 5_000, 6, ['503']), {
    instanceOf: ShortfallError,
  });
  t.is(
    err?.message,
    'ingest: POST /jobs: 6 of 5,000 failed, more than the 5 allowed (1 in 1,000) (503)',
  );
  t.throws(() => requireFewErrors('fixed rate: jobs printed with their webhook', 30, 1));
});
