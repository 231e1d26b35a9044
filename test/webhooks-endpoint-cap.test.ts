/**
 * An endpoint that does not answer holds its own slots only: with two attempts in flight per
 * endpoint, its other deliveries wait while another endpoint's go at once. The send timeout is
 * the default 15 s, far longer than the test takes however busy the machine, so the held attempts
 * stay in flight until the test answers them.
 */
import anyTest, { type TestFn } from 'ava';
import { gate, startReceiver } from './helpers/receiver.js';
import { createOrg, OPERATOR_TOKEN } from './helpers/system.js';
import { type SystemWithBus, systemWithBus, webhookAdmin } from './helpers/webhooks.js';

const test = anyTest as TestFn<SystemWithBus>;

systemWithBus(test, { endpointConcurrency: 2 });

test('one slow receiver cannot hold up the others', async (t) => {
  const { sys } = t.context;
  const hooks = webhookAdmin(sys.url, OPERATOR_TOKEN, await createOrg(sys.url));
  const held = gate();
  const slow = await startReceiver(held.reply);
  t.teardown(() => slow.close());
  const fast = await startReceiver();
  t.teardown(() => fast.close());
  const a = await hooks.create(slow.url);
  const b = await hooks.create(fast.url);
  for (let i = 0; i < 6; i++) await hooks.ping(a.endpoint.id);
  await hooks.ping(b.endpoint.id);

  await fast.until((q) => q.length === 1);
  await slow.until((q) => q.length === 2);
  t.is(slow.requests.length, 2, 'the slow endpoint has its two in flight; its other four wait');
  t.is(fast.requests.length, 1, 'the fast endpoint did not wait for the slow one');

  held.open();
  await slow.until((q) => q.length === 6);
  await sys.system.webhooks.worker.runDue();
  t.is(held.waiting.max, 2, 'at most the per-endpoint cap in flight');
});
