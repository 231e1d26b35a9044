import { jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import anyTest, { type TestFn } from 'ava';
import { connectBus, ensureStreams, type NatsConnection } from '../lib/bus.js';
import { silentLogger } from '../lib/logger.js';
import { type StreamPublishError, StreamPublisher } from '../lib/stream-publisher.js';
import { isTransient } from '../lib/transient.js';
import { startTestNats, type TestNats, untilJetStreamAnswers } from './helpers/nats.js';

const test = anyTest as TestFn<{ nats: TestNats; nc: NatsConnection }>;

test.before(async (t) => {
  const nats = await startTestNats();
  const nc = await connectBus({ url: nats.url, name: 'publisher-test', logger: silentLogger });
  await ensureStreams(nc);
  t.context = { nats, nc };
});

test.after.always(async (t) => {
  await t.context.nc?.close();
  await t.context.nats?.stop();
});

test('publishes many at once, each stored once and in order, a repeated id as a duplicate', async (t) => {
  const { nc } = t.context;
  const publisher = new StreamPublisher(nc);
  t.teardown(() => publisher.close());
  const subject = 'events.org-pub.job.created';
  const acks = await Promise.all(
    Array.from({ length: 500 }, (_, i) =>
      publisher.publish(subject, JSON.stringify({ n: i }), { msgID: `pub-${i}` }),
    ),
  );
  t.true(acks.every((a) => a.stream === 'EVENTS' && !a.duplicate));
  const seqs = acks.map((a) => a.seq);
  t.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
  );
  t.is(new Set(seqs).size, 500);
  t.is(publisher.inFlight, 0);

  const again = await publisher.publish(subject, JSON.stringify({ n: 7 }), { msgID: 'pub-7' });
  t.true(again.duplicate);
  t.is(again.seq, acks[7]?.seq as number);

  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info('EVENTS', { subjects_filter: subject });
  t.is(info.state.subjects?.[subject], 500);
  const stored = await jsm.streams.getMessage('EVENTS', { seq: acks[42]?.seq as number });
  t.deepEqual(stored?.json(), { n: 42 });
  t.is(stored?.header.get('Nats-Msg-Id'), 'pub-42');
});

test('a subject no stream takes fails at once, as a transient failure', async (t) => {
  const publisher = new StreamPublisher(t.context.nc);
  t.teardown(() => publisher.close());
  const err = await t.throwsAsync<StreamPublishError>(
    publisher.publish('nowhere.at.all', 'x', { msgID: 'n-1' }),
  );
  t.is(err?.status, 503);
  t.regex(err?.message ?? '', /no stream takes nowhere\.at\.all/);
  t.true(isTransient(err));
  t.is(publisher.inFlight, 0);
});

test('an error JetStream answers with fails that publish only, and is not transient', async (t) => {
  const publisher = new StreamPublisher(t.context.nc);
  t.teardown(() => publisher.close());
  const subject = 'events.org-pub.job.printed';
  const first = await publisher.publish(subject, 'a');
  const h = natsHeaders();
  h.set('Nats-Expected-Last-Sequence', String(first.seq - 1));
  const [wrong, right] = await Promise.allSettled([
    publisher.publish(subject, 'b', { headers: h }),
    publisher.publish(subject, 'c'),
  ]);
  t.is(wrong.status, 'rejected');
  const err = (wrong as PromiseRejectedResult).reason as StreamPublishError;
  t.is(err.status, 400);
  t.regex(err.message, /wrong last sequence/);
  t.false(isTransient(err));
  t.is(right.status, 'fulfilled');
});

test('a publish whose acknowledgement never comes fails once its time is up', async (t) => {
  const { nc } = t.context;
  // Something takes the subject (so the server reports no missing responder) but never answers.
  const silent = nc.subscribe('silent.subject');
  t.teardown(() => silent.unsubscribe());
  let now = 0;
  const publisher = new StreamPublisher(nc, { timeoutMs: 5_000, now: () => now });
  t.teardown(() => publisher.close());

  const early = publisher.publish('silent.subject', 'first');
  const earlyFailed = t.throwsAsync<StreamPublishError>(early);
  now = 3_000;
  const late = publisher.publish('silent.subject', 'second');
  let lateSettled = false;
  late
    .catch(() => {})
    .finally(() => {
      lateSettled = true;
    });
  await nc.flush();

  now = 5_000;
  publisher.expire();
  const err = await earlyFailed;
  t.is(err?.status, 408);
  t.true(isTransient(err));
  await Promise.resolve();
  t.false(lateSettled, 'the later publish still has time');
  t.is(publisher.inFlight, 1);

  publisher.close();
  const closed = await t.throwsAsync<StreamPublishError>(late);
  t.is(closed?.status, 503);
  t.is(publisher.inFlight, 0);
});

test('publishes fail at once when the connection drops and while it is down, then go again', async (t) => {
  // A server of its own, killed here, and acknowledgements waited for a whole minute: only the
  // connection dropping can fail these publishes in time.
  const nats = await startTestNats();
  t.teardown(() => nats.stop());
  const nc = await connectBus({ url: nats.url, name: 'publisher-drop', logger: silentLogger });
  t.teardown(() => nc.close());
  await ensureStreams(nc);
  const publisher = new StreamPublisher(nc, { timeoutMs: 60_000 });
  t.teardown(() => publisher.close());
  const silent = nc.subscribe('silent.subject');
  t.teardown(() => silent.unsubscribe());

  const waiting = publisher.publish('silent.subject', 'never answered');
  await nc.flush();
  t.is(publisher.inFlight, 1);
  nats.kill('SIGKILL');
  const dropped = await t.throwsAsync<StreamPublishError>(waiting);
  t.is(dropped?.status, 503);
  t.true(isTransient(dropped), 'the caller tries again');
  const whileDown = await t.throwsAsync<StreamPublishError>(
    publisher.publish('events.org-drop.job.created', 'while down'),
  );
  t.is(whileDown?.status, 503);
  t.is(publisher.inFlight, 0);

  await nats.restart();
  const jsm = await untilJetStreamAnswers(nc);
  const ack = await publisher.publish('events.org-drop.job.created', 'after', { msgID: 'after-1' });
  t.is(ack.stream, 'EVENTS');
  const info = await jsm.streams.info('EVENTS', { subjects_filter: 'events.org-drop.>' });
  t.is(info.state.subjects?.['events.org-drop.job.created'], 1, 'only what went after is stored');
});
