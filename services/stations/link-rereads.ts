/**
 * Links re-read in batches: the tokens of a batch in one query, then the pending jobs of the
 * stations whose tokens still hold in one `PendingJobsForStations` call.
 */
import type { Job } from '../../gen/spool/v1/jobs.js';
import type { JobAttempt, LinkDeps } from './link-deps.js';
import type { LinkStation } from './link-station.js';

/**
 * Links re-read together: one query for their tokens and one call for their stations' pending
 * jobs. Small enough that handling one batch's answers does not hold up dispatch for long.
 */
export const RESYNC_BATCH = 250;

/** Re-read batches in flight at once: links opening in a burst wait for a batch less long. */
const RESYNC_IN_FLIGHT = 2;

/** A link as a re-read sees it. */
export interface RereadLink {
  /** Open, authenticated and not closed: the link a re-read is for. */
  readonly linked: boolean;
  /** The station's token hash; only while {@link linked}. */
  readonly tokenHash: Buffer;
  /** The id the database records this link under. */
  readonly linkId: string;
  /** The station linked; only while {@link linked}. */
  readonly station: LinkStation;
  /** The job attempts the agent holds without a result, as of now. */
  unfinishedNow(): JobAttempt[];
  /**
   * Given what the token now belongs to, says whether the link may go on; ends it when the token
   * was revoked or replaced, or the station moved to another region.
   */
  tokenHolds(found: LinkStation | undefined): boolean;
  /** Records the link's end once more: a re-read recorded its station online as it closed. */
  recordClosedAgain(): void;
  /** Offers the station's pending jobs that this link has not offered yet. */
  offerJobs(items: Job[]): void;
  /** Withdraws the attempts of `unfinished` that are not among the pending `items`. */
  withdrawUnless(items: Job[], unfinished: JobAttempt[]): void;
}

/** Queues links for a re-read and runs the queue in batches. */
export interface Rereads {
  /**
   * Resolves once a batch with `link` in it has been read and offered; rejects if it failed.
   * `fresh`: the link's token was read a moment ago, as it opened, so only its jobs are read.
   */
  want(link: RereadLink, fresh?: boolean): Promise<void>;
}

const stationKey = (orgId: string, stationId: string) => `${orgId}/${stationId}`.toLowerCase();

/**
 * Re-reads links in batches. Links asking while RESYNC_IN_FLIGHT batches are in flight wait for
 * the next one, so a burst of asks costs a few calls, not two per link; the process serves other
 * work between two batches.
 */
export function createRereads(deps: Pick<LinkDeps, 'store' | 'jobs' | 'logger'>): Rereads {
  const queue = new Map<
    RereadLink,
    {
      promise: Promise<void>;
      resolve: () => void;
      reject: (err: unknown) => void;
      fresh: boolean;
    }
  >();
  let inFlight = 0;
  let scheduled = false;

  async function read(batch: Array<{ session: RereadLink; fresh: boolean }>): Promise<void> {
    const live = batch.filter(({ session }) => session.linked);
    // What each agent holds unfinished as the read begins: what is not pending once read was
    // cancelled, retried or ended meanwhile. A job offered after this moment is not among them.
    const unfinished = new Map(live.map(({ session }) => [session, session.unfinishedNow()]));
    const check = live.filter(({ fresh }) => !fresh).map(({ session }) => session);
    let holding = live.filter(({ fresh }) => fresh).map(({ session }) => session);
    if (check.length > 0) {
      const hashes = new Map(check.map((s) => [s.tokenHash.toString('hex'), s.tokenHash]));
      const found = await deps.store.stationsByTokenHashes([...hashes.values()]);
      const held = check.filter((s) => s.tokenHolds(found.get(s.tokenHash.toString('hex'))));
      holding = [...holding, ...held];
      // Recorded offline while this link is open: a replica took this one for lost (it could not
      // reach the database for a while). The link is this station's current one, so it is online.
      const swept = held.filter((s) => {
        const row = found.get(s.tokenHash.toString('hex'));
        return s.linked && row && !row.online && row.linkId === s.linkId;
      });
      if (swept.length > 0) {
        const online = await deps.store.linksStillOpen(
          swept.map((s) => ({ station: s.station, linkId: s.linkId })),
        );
        deps.logger.warn({ stations: online }, 'recorded online again stations taken for lost');
        // A link that closed meanwhile may have had its end recorded before that: again, after.
        for (const s of swept) if (!s.linked) s.recordClosedAgain();
      }
    }
    if (holding.length === 0) return;
    const stations = new Map(
      holding.map((s) => [stationKey(s.station.orgId, s.station.id), s.station]),
    );
    const answer = await deps.jobs.pendingJobsForStations({
      stations: [...stations.values()].map((s) => ({ orgId: s.orgId, stationId: s.id })),
    });
    const pending = new Map(answer.stations.map((p) => [stationKey(p.orgId, p.stationId), p]));
    for (const s of holding) {
      const items = pending.get(stationKey(s.station.orgId, s.station.id))?.items ?? [];
      s.offerJobs(items);
      s.withdrawUnless(items, unfinished.get(s) ?? []);
    }
  }

  async function readBatch(): Promise<void> {
    const batch = [...queue].slice(0, RESYNC_BATCH);
    for (const [s] of batch) queue.delete(s);
    try {
      await read(batch.map(([session, { fresh }]) => ({ session, fresh })));
      for (const [, waiting] of batch) waiting.resolve();
    } catch (err) {
      deps.logger.warn(
        { err, links: batch.length },
        'could not re-read pending jobs; will try again',
      );
      for (const [, waiting] of batch) waiting.reject(err);
    }
  }

  function pump(): void {
    scheduled = false;
    while (inFlight < RESYNC_IN_FLIGHT && queue.size > 0) {
      inFlight += 1;
      void readBatch().finally(() => {
        inFlight -= 1;
        // Offers and the links' messages go out before the next batch is read.
        schedule();
      });
    }
  }

  function schedule(): void {
    if (scheduled || queue.size === 0) return;
    scheduled = true;
    // Whatever else asks in this turn of the event loop joins the same batch.
    setImmediate(pump);
  }

  return {
    want(session, fresh = false) {
      const queued = queue.get(session);
      if (queued) return queued.promise;
      let resolve = () => {};
      let reject: (err: unknown) => void = () => {};
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      queue.set(session, { promise, resolve, reject, fresh });
      schedule();
      return promise;
    },
  };
}
