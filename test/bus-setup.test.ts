/**
 * What a component says when it cannot set up its NATS side at start: a server it cannot reach
 * is named (without its credentials), and a single server asked for three copies of each stream
 * says which setting to change, at once rather than after a minute of retries.
 */
import test from 'ava';
import { connectBus, ensureStreams, SINGLE_REGION } from '../lib/bus.js';
import { silentLogger } from '../lib/logger.js';
import { startTestNats } from './helpers/nats.js';
import { freePort } from './helpers/ports.js';

test('a NATS server that cannot be reached at start is named, without its password', async (t) => {
  const port = await freePort();
  const err = await t.throwsAsync(
    connectBus({
      url: `nats://spool:s3cret@127.0.0.1:${port}`,
      name: 'test',
      logger: silentLogger,
    }),
  );
  t.is(
    err?.message.startsWith(`cannot connect to NATS at nats://127.0.0.1:${port} (NATS_URL): `),
    true,
    err?.message,
  );
  t.false(err?.message.includes('s3cret'));
});

test('three copies of each stream on one NATS server are refused at once, naming NATS_REPLICAS', async (t) => {
  const nats = await startTestNats();
  t.teardown(() => nats.stop());
  const nc = await connectBus({ url: nats.url, name: 'test', logger: silentLogger });
  t.teardown(() => nc.close());
  await t.throwsAsync(ensureStreams(nc, { ...SINGLE_REGION, replicas: 3 }), {
    message:
      "the NATS server is not clustered and keeps one copy of a stream, but NATS_REPLICAS asks for 3: set NATS_REPLICAS=1 (the chart's nats.replicas) or run a NATS cluster",
  });
});
