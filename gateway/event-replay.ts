/**
 * The events a resuming stream missed: read from `EVENTS` by a short-lived consumer of the
 * organization's subjects that starts after the client's `Last-Event-ID` (or, when that event is
 * over 24 hours old, at the first event of the last 24 hours), up to where the live feed took over
 * for that stream. The sequence tells replayed and live copies apart, so the switch loses and
 * repeats nothing.
 */
import {
  AckPolicy,
  DeliverPolicy,
  type JetStreamManager,
  jetstream,
  type MsgRequest,
  type StoredMsg,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '../lib/bus.js';
import type { Clock } from '../lib/clock.js';
import { EVENTS_STREAM } from './event-feed.js';
import { frameOf, type StoredEvent } from './event-frames.js';
import type { Listener } from './event-listener.js';

const STREAM = EVENTS_STREAM;

/** How far back a reconnecting client is given the events it missed. */
export const RESUME_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface ReplayDeps {
  nc: NatsConnection;
  clock: Clock;
  /** The feed's manager, once it has started. */
  jsm: JetStreamManager | undefined;
  /** Bytes that may wait for one slow client; a replay waits for it past half of them. */
  bufferBytes: number;
}

/** The organization's first stored event at or after `seq`, if any. */
async function nextOf(
  jsm: JetStreamManager,
  orgId: string,
  seq: number,
): Promise<StoredMsg | null> {
  // STREAM.MSG.GET takes `next_by_subj` (nats-server 2.9+), which the client's type omits.
  const query = { seq, next_by_subj: `events.${orgId}.>` } as unknown as MsgRequest;
  return jsm.streams.getMessage(STREAM, query);
}

/** Where the replay starts: right after `after`, or a day back when that is older or unknown. */
async function startOf(
  jsm: JetStreamManager,
  l: Listener,
  after: number,
  cutoff: number,
): Promise<{ opt_start_seq: number } | { opt_start_time: string }> {
  const state = (await jsm.streams.info(STREAM)).state;
  if (after > state.last_seq) {
    // An id from before the stream was recreated: it orders nothing now, so a day is sent.
    l.last = 0;
    return { opt_start_time: new Date(cutoff).toISOString() };
  }
  const at =
    after >= state.first_seq
      ? await jsm.streams
          .getMessage(STREAM, { seq: after })
          .then((m) => m?.time.getTime())
          .catch(() => undefined)
      : undefined;
  return at !== undefined && at >= cutoff
    ? { opt_start_seq: after + 1 }
    : { opt_start_time: new Date(cutoff).toISOString() };
}

/**
 * Sends the organization's events after `after` that are under a day old, up to `until`, the
 * feed's position when the stream opened; the live feed has held everything after it.
 */
export async function replay(
  deps: ReplayDeps,
  l: Listener,
  after: number,
  until: number,
): Promise<void> {
  const { jsm } = deps;
  if (!jsm) throw new Error('the event feed has not started');
  const cutoff = deps.clock.now().getTime() - RESUME_WINDOW_MS;
  const start = await startOf(jsm, l, after, cutoff);
  const info = await jsm.consumers.add(STREAM, {
    filter_subject: `events.${l.orgId}.>`,
    ack_policy: AckPolicy.None,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: nanos(60_000),
    ...('opt_start_seq' in start
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start.opt_start_seq }
      : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: start.opt_start_time }),
  });
  try {
    const consumer = await jetstream(deps.nc).consumers.get(STREAM, info.name);
    /** The last sequence the replay read; the live feed sends what comes after `until`. */
    let read = 'opt_start_seq' in start ? start.opt_start_seq - 1 : undefined;
    let more = info.num_pending > 0;
    /** Set when the consumer stops short of what is stored: the rest is read one by one. */
    let byOne = false;
    const deliver = async (msg: StoredEvent, at: number) => {
      read = msg.seq;
      if (at < cutoff) return;
      const item = frameOf(msg);
      if (item && item.orgId === l.orgId && l.wants(item.frame)) {
        l.send(item.frame);
        // A day of events is read no faster than the client takes them.
        if (l.waiting > deps.bufferBytes / 2) await l.drained();
      }
    };
    while (!l.closed) {
      if (!more) {
        // The consumer's count of what is left is only a hint: nats-server 2.9 can stop a
        // filtered consumer short of the last stored events. The stream itself settles it.
        if (read === undefined || read >= until) break;
        const next = await nextOf(jsm, l.orgId, read + 1);
        if (!next || next.seq > until) break;
        if (byOne) {
          await deliver(next, next.time.getTime());
          continue;
        }
      }
      const batch = await consumer.fetch({ max_messages: 256, expires: 1_000 });
      let got = 0;
      more = false;
      for await (const msg of batch) {
        got++;
        await deliver(msg, msg.time.getTime());
        if (l.closed || msg.seq >= until) break;
        if (msg.info.pending === 0) break;
        if (got === 256) more = true;
      }
      if (got === 0) byOne = true;
    }
  } finally {
    await jsm.consumers.delete(STREAM, info.name).catch(() => undefined);
  }
}
