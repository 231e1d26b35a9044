/**
 * The webhook retry policy (services/webhooks/policy.ts) without a database: when a delivery is
 * tried again, when it gives up and when its endpoint is disabled, with the clock as plain dates.
 */
import test from 'ava';
import { FAILING_DISABLE_MS, RETRY_POLICY, RETRY_WAITS_MS } from '../services/webhooks/defaults.js';
import {
  attemptsPerRound,
  claimStep,
  DISABLED_NOTICE,
  LAST_ATTEMPT_ABANDONED,
  MAX_RETRY_AFTER_MS,
  nextStep,
  retryAt,
} from '../services/webhooks/policy.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const noJitter = () => 0;
const failed = { succeeded: false, statusCode: 503, retryAt: at(30_000) };
const healthy = { enabled: true, failingSince: null };

test('a round makes one attempt more than there are waits: 8 by the specification', (t) => {
  t.is(attemptsPerRound(RETRY_POLICY), 8);
  t.is(attemptsPerRound({ retryWaitsMs: [1_000] }), 2);
});

test('retryAt follows the waits of the schedule and gives none after the last attempt', (t) => {
  const times = RETRY_WAITS_MS.map((_, i) =>
    retryAt(i + 1, { succeeded: false }, T0, RETRY_POLICY, noJitter),
  );
  t.deepEqual(
    times,
    RETRY_WAITS_MS.map((wait) => at(wait)),
  );
  t.is(retryAt(8, { succeeded: false }, T0, RETRY_POLICY, noJitter), undefined);
});

test('retryAt gives none after a success, and draws no jitter for it', (t) => {
  let draws = 0;
  const random = () => {
    draws++;
    return 0.5;
  };
  t.is(retryAt(1, { succeeded: true }, T0, RETRY_POLICY, random), undefined);
  t.is(draws, 0);
});

test('jitter lengthens a wait by up to its fraction, never shortens it', (t) => {
  const most = retryAt(1, { succeeded: false }, T0, RETRY_POLICY, () => 0.9999);
  t.deepEqual(most, at(32_999));
  const none = retryAt(1, { succeeded: false }, T0, { ...RETRY_POLICY, jitter: 0 }, () => 0.9999);
  t.deepEqual(none, at(30_000));
});

test('Retry-After lengthens a wait, never shortens it, and counts for 7 days at most', (t) => {
  const answer = (retryAfter: string) => ({ succeeded: false, retryAfter });
  t.deepEqual(retryAt(1, answer('90'), T0, RETRY_POLICY, noJitter), at(90_000));
  t.deepEqual(retryAt(3, answer('90'), T0, RETRY_POLICY, noJitter), at(600_000));
  t.deepEqual(
    retryAt(1, answer('Thu, 01 Jan 2026 01:00:00 GMT'), T0, RETRY_POLICY, noJitter),
    at(3_600_000),
  );
  t.deepEqual(retryAt(1, answer('soon'), T0, RETRY_POLICY, noJitter), at(30_000));
  t.deepEqual(
    retryAt(1, answer(String(30 * 24 * 3600)), T0, RETRY_POLICY, noJitter),
    at(MAX_RETRY_AFTER_MS),
  );
  t.is(retryAt(8, answer('90'), T0, RETRY_POLICY, noJitter), undefined, 'not past the last');
});

test('a claim sends while the endpoint is enabled and the round has attempts left', (t) => {
  const enabled = { enabled: true, disabledReason: '' };
  t.deepEqual(claimStep(0, enabled, 8), { send: true });
  t.deepEqual(claimStep(7, enabled, 8), { send: true });
  t.deepEqual(claimStep(8, enabled, 8), { send: false, notice: LAST_ATTEMPT_ABANDONED });
});

test('a claim ends a delivery of a disabled or deleted endpoint with the reason', (t) => {
  t.deepEqual(claimStep(0, { enabled: false, disabledReason: 'gone' }, 8), {
    send: false,
    notice: DISABLED_NOTICE.gone,
  });
  t.deepEqual(claimStep(0, { enabled: false, disabledReason: '' }, 8), {
    send: false,
    notice: DISABLED_NOTICE.operator,
  });
  t.deepEqual(claimStep(0, { enabled: null, disabledReason: null }, 8), {
    send: false,
    notice: DISABLED_NOTICE.operator,
  });
});

test('a success ends the delivery and the endpoint’s run of failures', (t) => {
  const decision = nextStep(
    at(0),
    { succeeded: true, statusCode: 200, retryAt: undefined },
    { enabled: true, failingSince: at(-60_000) },
    at(1_000),
    RETRY_POLICY,
  );
  t.deepEqual(decision, { step: { kind: 'succeeded' }, failingSince: null });
});

test('a failure is tried again at its time, and starts the endpoint’s run of failures', (t) => {
  const decision = nextStep(at(0), failed, healthy, at(1_000), RETRY_POLICY);
  t.deepEqual(decision, { step: { kind: 'retry', retryAt: at(30_000) }, failingSince: at(0) });
});

test('the last attempt of a round gives up, keeping the notice', (t) => {
  const last = { ...failed, retryAt: undefined };
  const decision = nextStep(at(0), last, healthy, at(1_000), RETRY_POLICY);
  t.deepEqual(decision, { step: { kind: 'giveUp', notice: undefined }, failingSince: at(0) });
});

test('410 Gone disables the endpoint whatever attempts are left', (t) => {
  const gone = { ...failed, statusCode: 410 };
  const { step } = nextStep(at(0), gone, healthy, at(1_000), RETRY_POLICY);
  t.deepEqual(step, {
    kind: 'disable',
    reason: 'gone',
    notice: 'the endpoint answered 410 Gone, so it was disabled',
  });
});

test('failing every attempt for 5 days disables the endpoint, and not a moment before', (t) => {
  const since = at(0);
  const endpoint = { enabled: true, failingSince: since };
  const before = nextStep(at(1), failed, endpoint, at(FAILING_DISABLE_MS - 1), RETRY_POLICY);
  t.is(before.step.kind, 'retry');
  t.deepEqual(before.failingSince, since, 'the run of failures keeps its start');
  const { step } = nextStep(at(1), failed, endpoint, at(FAILING_DISABLE_MS), RETRY_POLICY);
  t.deepEqual(step, {
    kind: 'disable',
    reason: 'failing',
    notice: 'every attempt to the endpoint since 2026-01-01T00:00:00Z failed, so it was disabled',
  });
});

test('a failure to an endpoint disabled meanwhile gives up, saying so; a 410 disables nothing more', (t) => {
  const disabled = { enabled: false, failingSince: at(0) };
  for (const statusCode of [503, 410]) {
    const { step } = nextStep(
      at(0),
      { ...failed, statusCode },
      disabled,
      at(FAILING_DISABLE_MS * 2),
      RETRY_POLICY,
    );
    t.deepEqual(step, { kind: 'giveUp', notice: DISABLED_NOTICE.operator });
  }
});
