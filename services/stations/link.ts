/**
 * The server side of the station link (docs/station-link.md): the sessions this process holds,
 * one per connected agent ({@link LinkSession}), and the rounds that re-read them all. A session
 * authenticates the device token, records the link, forwards the station's jobs from
 * `dispatch.<org>.<station>` (and those pending when it opened) with their documents, and turns
 * the agent's reports into messages on `reports.<org>.<station>` before accepting them.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ObservableResult } from '@opentelemetry/api';
import { spoolMetrics } from '../../lib/metrics.js';
import type { Call, LinkDeps } from './link-deps.js';
import { createRereads, RESYNC_BATCH } from './link-rereads.js';
import { LinkSession } from './link-session.js';

export interface LinkRegistry {
  /** Links held by this process, by station id. */
  readonly size: number;
  handler(call: Call): void;
  /**
   * Re-reads every link's token and pending jobs now, a batch at a time; resolves when the round
   * is over (the one under way, if any). Also run after NATS reconnects and every `resyncMs`.
   */
  resync(): Promise<void>;
  /** Ends every link (the agents reconnect to another replica). */
  closeAll(): void;
}

export function createLinkRegistry(deps: LinkDeps): LinkRegistry {
  const sessions = new Set<LinkSession>();
  const rereads = createRereads(deps);
  // Dispatch messages reach a link over core NATS, which keeps nothing for a subscriber that was
  // away: after the connection comes back, and every so often besides, each link asks the jobs
  // service for its station's pending jobs (offers already made on the link are not repeated).
  // A round walks the links a batch at a time, its batches spread over half the period when it
  // is the periodic backstop, so that 10,000 links cost a few dozen queries and calls, and
  // dispatch is served between them.
  const resyncMs = deps.resyncMs ?? 60_000;
  let round: Promise<void> | undefined;
  const resyncAll = (spreadMs: number): Promise<void> => {
    if (round) return round;
    round = (async () => {
      const links = [...sessions];
      const batches = Math.ceil(links.length / RESYNC_BATCH);
      const start = Date.now();
      for (let i = 0; i < batches; i++) {
        const waitMs = start + (spreadMs * i) / batches - Date.now();
        await new Promise((resolve) =>
          waitMs >= 1 ? setTimeout(resolve, waitMs) : setImmediate(resolve),
        );
        await Promise.all(
          links.slice(i * RESYNC_BATCH, (i + 1) * RESYNC_BATCH).map((s) => s.resync()),
        );
      }
    })().finally(() => {
      round = undefined;
    });
    return round;
  };
  void (async () => {
    for await (const s of deps.nc.status()) if (s.type === 'reconnect') void resyncAll(0);
  })();
  const timer = setInterval(() => void resyncAll(resyncMs / 2), resyncMs);
  timer.unref();
  const { stationsConnected } = spoolMetrics();
  const observeLinks = (result: ObservableResult) => result.observe(sessions.size);
  stationsConnected.addCallback(observeLinks);
  return {
    get size() {
      return sessions.size;
    },
    handler(call) {
      const session = new LinkSession(call, deps, rereads, () => sessions.delete(session));
      sessions.add(session);
      session.run().catch((err: unknown) => {
        deps.logger.error({ err }, 'station link failed');
        session.close(GrpcStatus.INTERNAL, 'internal error');
      });
    },
    resync() {
      return resyncAll(0);
    },
    closeAll() {
      clearInterval(timer);
      stationsConnected.removeCallback(observeLinks);
      for (const s of sessions) s.close(GrpcStatus.UNAVAILABLE, 'the server is shutting down');
    },
  };
}
