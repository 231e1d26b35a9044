/**
 * A busy accounts service answers slower or `429 rate_limited`, never `503`: a burst of sign-ins
 * larger than the password-hashing queue gets each its normal answer or a `429` with Retry-After,
 * and the attempts refused for a full queue do not count as failed sign-ins.
 */
import { availableParallelism } from 'node:os';
import anyTest, { type TestFn } from 'ava';
import { defaultHashingOptions } from '../services/accounts/hashing-queue.js';
import { Browser, type ErrorBody, member, PASSWORD } from './helpers/console.js';
import { createOrg, startTestSystem, type TestSystem } from './helpers/system.js';

const test = anyTest.serial as TestFn<{ sys: TestSystem; orgId: string }>;

test.before(async (t) => {
  // Each attempt comes from an address of its own (X-Forwarded-For), clear of the address limit.
  const sys = await startTestSystem({ trustProxy: 1 });
  t.context = { sys, orgId: await createOrg(sys.url, 'Acme Print') };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

test('a burst of sign-ins beyond the hashing queue answers 401, 200 or 429 with Retry-After, never 503', async (t) => {
  const { sys, orgId } = t.context;
  await member(sys.url, orgId, 'viewer', 'busy@example.com');
  const { concurrency, maxWaiting } = defaultHashingOptions(availableParallelism());
  const burst = 5 * (concurrency + maxWaiting);
  const answers = await Promise.all(
    Array.from({ length: burst }, (_, i) =>
      new Browser(sys.url).call<ErrorBody>('POST', '/console/v1/sign-in', {
        body:
          // Every tenth the right password of an account, the others unknown emails.
          i % 10 === 0
            ? { email: 'busy@example.com', password: PASSWORD }
            : { email: `nobody-${i}@example.com`, password: 'a guessed password' },
        headers: { 'x-forwarded-for': `198.51.100.${i % 250}` },
      }),
    ),
  );
  const statuses = answers.map((a) => a.status);
  for (const [i, answer] of answers.entries()) {
    if (answer.status === 429) {
      t.is(answer.body.error.code, 'rate_limited');
      t.true(Number(answer.headers.get('retry-after')) >= 1, statuses.join(' '));
    } else {
      t.is(answer.status, i % 10 === 0 ? 200 : 401, statuses.join(' '));
    }
  }
  t.true(
    statuses.some((s) => s === 429),
    `more sign-ins than the queue holds are refused: ${statuses.join(' ')}`,
  );
  t.true(
    statuses.some((s) => s === 401),
    `those in the queue are answered: ${statuses.join(' ')}`,
  );

  // None of those refused counted against the account: it signs in at once.
  const after = await new Browser(sys.url).call('POST', '/console/v1/sign-in', {
    body: { email: 'busy@example.com', password: PASSWORD },
    headers: { 'x-forwarded-for': '203.0.113.1' },
  });
  t.is(after.status, 200);
});

test('wrong passwords of one account sent at once answer 401 or 429, never 503', async (t) => {
  const { sys, orgId } = t.context;
  await member(sys.url, orgId, 'viewer', 'guessed@example.com');
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      new Browser(sys.url).call<ErrorBody>('POST', '/console/v1/sign-in', {
        body: { email: 'guessed@example.com', password: `wrong password ${i}` },
        headers: { 'x-forwarded-for': `192.0.2.${i}` },
      }),
    ),
  );
  const statuses = answers.map((a) => a.status);
  t.true(
    statuses.every((s) => s === 401 || s === 429),
    statuses.join(' '),
  );
  t.true(
    statuses.filter((s) => s === 401).length <= 10,
    `at most the account's limit are checked: ${statuses.join(' ')}`,
  );
  for (const answer of answers.filter((a) => a.status === 429)) {
    t.true(Number(answer.headers.get('retry-after')) >= 1);
  }
});
