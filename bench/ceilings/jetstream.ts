/**
 * Ceilings on the nats-server Spool uses: JetStream publishes of a 1 KiB message to a file-backed
 * stream with the same 2-minute de-duplication window as Spool's streams, each with its own
 * `Nats-Msg-Id` as the outbox relay sets it. Two shapes: 500 publishes in flight (what the relay's
 * batches can reach) and one publish at a time, awaiting each acknowledgement (what a link's
 * report costs, since a session handles its agent's messages in order).
 */
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import { epochMs } from '../clock.js';
import { type RateResult, rateResult } from './pg-insert.js';

const STREAM = 'BENCH_CEILING';
const PAYLOAD = new Uint8Array(1024).fill(120);

export async function jetstreamPublishRate(p: {
  natsUrl: string;
  inFlight: number;
  durationMs: number;
}): Promise<RateResult> {
  const nc = await connect({ servers: p.natsUrl.split(','), name: 'spool-bench-ceiling' });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(STREAM).catch(() => undefined);
  await jsm.streams.add({
    name: STREAM,
    subjects: ['bench.ceiling.>'],
    duplicate_window: nanos(2 * 60 * 1000),
  });
  const js = jetstream(nc);
  const latencies: number[] = [];
  let errors = 0;
  const started = epochMs();
  const end = started + p.durationMs;
  await Promise.all(
    Array.from({ length: p.inFlight }, async (_, i) => {
      while (epochMs() < end) {
        const t0 = epochMs();
        try {
          await js.publish(`bench.ceiling.${i % 16}`, PAYLOAD, { msgID: randomUUID() });
          latencies.push(epochMs() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsedMs = epochMs() - started;
  await jsm.streams.delete(STREAM).catch(() => undefined);
  await nc.close();
  return rateResult(latencies, errors, elapsedMs);
}
