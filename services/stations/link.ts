/**
 * The server side of the station link (docs/station-link.md): one session per connected agent.
 * A session authenticates the device token, records the link, forwards the station's jobs from
 * `dispatch.<org>.<station>` (and those pending when it opened) with their documents, and turns
 * the agent's reports into messages on `reports.<org>.<station>` before accepting them.
 */

import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { status as GrpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import type { ObjectStore } from '@nats-io/obj';
import { headers as natsHeaders, type Subscription } from '@nats-io/transport-node';
import { type Context, context, type ObservableResult } from '@opentelemetry/api';
import type { Job, JobsServiceClient } from '../../gen/spool/v1/jobs.js';
import {
  type AgentMessage,
  type JobReceived,
  type JobResult,
  type PrinterReport,
  PrintOptions,
  type ServerMessage,
} from '../../gen/spool/v1/stations.js';
import { type NatsConnection, subjects } from '../../lib/bus.js';
import type { DispatchMessage, DispatchOffer } from '../../lib/contracts/dispatch.js';
import type { StationReport } from '../../lib/contracts/station-report.js';
import { credentialKind, hashCredential } from '../../lib/credentials.js';
import type { AsyncClient } from '../../lib/grpc.js';
import { jobJson } from '../../lib/job-view.js';
import type { Logger } from '../../lib/logger.js';
import { spoolMetrics } from '../../lib/metrics.js';
import { cannotPrint } from '../../lib/printer-status.js';
import type { StreamPublisher } from '../../lib/stream-publisher.js';
import {
  contextFrom,
  contextOfMessage,
  injectHeaders,
  inSpan,
  natsAttributes,
  natsSpanName,
  SpanKind,
  spoolAttributes,
  traceCarrier,
  tracing,
} from '../../lib/tracing.js';
import { isTransient, retryTransient } from '../../lib/transient.js';
import {
  AgentInputError,
  checkHello,
  checkJobRef,
  checkPrinters,
  cleanText,
  MAX_DETAIL,
} from './agent-input.js';
import type { LinkStation } from './link-station.js';
import type { StationStore } from './store.js';

/**
 * The ids of the printers in `reports` that are offered no job ({@link cannotPrint}). Their jobs
 * stay queued, their detail saying why (services/jobs/printer-waits.ts), and are offered when the
 * agent reports the printer able to print again.
 */
function heldPrinters(reports: PrinterReport[], ids: Record<string, string>): Set<string> {
  const held = new Set<string>();
  for (const report of reports) {
    const id = ids[report.name];
    if (id !== undefined && cannotPrint(report.status)) held.add(id);
  }
  return held;
}

/** How long an agent has to say hello after connecting. */
const HELLO_TIMEOUT_MS = 10_000;

/**
 * How long a station's `received` is held for its `result`. The discard and file backends answer
 * within a millisecond or two; a paper printer's result comes seconds later and its `received`
 * goes alone, this much later.
 */
export const RECEIVED_HOLD_MS = 10;

/**
 * How long a report is tried again while its stream cannot take it before the link closes, for
 * its agent to link again to a replica that can; while no other replica can either, the link
 * stays open and the report is tried again for this long once more, and so on.
 */
const REPORT_RETRY_MS = 30_000;

/**
 * The longest wait between two tries of a report: a stream whose leader went away elects another
 * in a few seconds, and the station's report should be in it within a second of that.
 */
const REPORT_RETRY_WAIT_MS = 1_000;

/**
 * When a link outside its station's home region asks for its pending jobs once more. Its
 * subscription reaches the home region's NATS over the gateway between the two clusters a moment
 * after the local server has it, and an offer published there meanwhile reaches nobody: this
 * second read finds the jobs created in that moment, where the minute re-read would find them up
 * to a minute later.
 */
export const AWAY_REREAD_MS = 2_000;

/**
 * Links re-read together: one query for their tokens and one call for their stations' pending
 * jobs. Small enough that handling one batch's answers does not hold up dispatch for long.
 */
const RESYNC_BATCH = 250;

/** Re-read batches in flight at once: links opening in a burst wait for a batch less long. */
const RESYNC_IN_FLIGHT = 2;

/** A failed re-read is tried again after a random wait of up to this, doubling per failure… */
const RESYNC_RETRY_FIRST_MS = 500;
/** …up to this, until it succeeds, the link closes, or a round re-reads it anyway. */
const RESYNC_RETRY_CAP_MS = 30_000;

export interface LinkDeps {
  store: StationStore;
  nc: NatsConnection;
  /** Publishes the stations' reports to their region's reports stream. */
  publisher: StreamPublisher;
  documents: ObjectStore;
  jobs: AsyncClient<JobsServiceClient>;
  /** This process's region; a link of a station homed elsewhere is served, across regions. */
  region: string;
  /** A new link id, naming this replica (`ReplicaWatch.linkId`); a bare UUID by default. */
  newLinkId?: () => string;
  logger: Logger;
  /** How often each link re-reads its station's pending jobs, as a backstop (default 60 s). */
  resyncMs?: number;
  /**
   * How long a `received` waits for its job's `result`, to go with it as one report (default
   * `RECEIVED_HOLD_MS`; 0 sends each at once).
   */
  receivedHoldMs?: number;
  /**
   * Told whether each report was stored, and asked, when one could not be for `reportRetryMs`,
   * whether another replica could store it: the link then ends, for its agent to link there. By
   * default, the link ends.
   */
  reports?: {
    stored(): void;
    refused(): void;
    elsewhere(): Promise<boolean>;
  };
  /** Default {@link REPORT_RETRY_MS}. */
  reportRetryMs?: number;
}

type Call = ServerDuplexStream<AgentMessage, ServerMessage>;

/** The job fields a session needs to offer a job. */
type OfferedJob = DispatchOffer['job'];

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

/** Queues links for a re-read and runs the queue in batches. */
interface Rereads {
  /**
   * Resolves once a batch with `session` in it has been read and offered; rejects if it failed.
   * `fresh`: the link's token was read a moment ago, as it opened, so only its jobs are read.
   */
  want(session: Session, fresh?: boolean): Promise<void>;
}

const stationKey = (orgId: string, stationId: string) => `${orgId}/${stationId}`.toLowerCase();

/**
 * Re-reads links in batches: the tokens of a batch in one query, then the pending jobs of the
 * stations whose tokens still hold in one `PendingJobsForStations` call. Links asking while
 * RESYNC_IN_FLIGHT batches are in flight wait for the next one, so a burst of asks costs a few
 * calls, not two per link; the process serves other work between two batches.
 */
function createRereads(deps: LinkDeps): Rereads {
  const queue = new Map<
    Session,
    {
      promise: Promise<void>;
      resolve: () => void;
      reject: (err: unknown) => void;
      fresh: boolean;
    }
  >();
  let inFlight = 0;
  let scheduled = false;

  async function read(batch: Array<{ session: Session; fresh: boolean }>): Promise<void> {
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

export function createLinkRegistry(deps: LinkDeps): LinkRegistry {
  const sessions = new Set<Session>();
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
      const session = new Session(call, deps, rereads, () => sessions.delete(session));
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

/** One attempt at a job, as a key. */
function attemptKey(jobId: string, attempt: number): string {
  return `${jobId}#${attempt}`;
}

function bearerToken(call: Call): string | undefined {
  const value = call.metadata.get('authorization')[0];
  if (typeof value !== 'string') return undefined;
  return /^Bearer\s+(\S+)$/i.exec(value)?.[1];
}

class Session {
  readonly #call: Call;
  readonly #deps: LinkDeps;
  readonly #rereads: Rereads;
  readonly #onClosed: () => void;
  readonly #linkId: string;
  readonly #logger: Logger;
  #station: LinkStation | undefined;
  #printerIds: Record<string, string> = {};
  /** Printers whose jobs are not offered now, by id: the agent reports them unable to print. */
  #heldPrinters = new Set<string>();
  #subscriptions: Subscription[] = [];
  /** Job attempts already offered on this link, so a job is not sent twice over one link. */
  readonly #offered = new Set<string>();
  /**
   * Job attempts the agent holds without a result yet, by key: those it named in its hello and
   * those offered since. A withdrawal it may have missed (sent while it was away, or while NATS
   * was) is sent again when a re-read finds one of them no longer pending.
   */
  readonly #unfinished = new Map<string, { jobId: string; attempt: number }>();
  /** Writes to the agent, in order: a job's offer and chunks never interleave with another's. */
  #out: Promise<void> = Promise.resolve();
  /** Incoming messages, handled one at a time in arrival order. */
  #in: Promise<void> = Promise.resolve();
  /**
   * `received` reports held back a moment, by job attempt, in case the `result` follows: the two
   * then go as one report.
   */
  readonly #receivedHoldMs: number;
  readonly #heldReceived = new Map<string, { body: JobReceived; timer: NodeJS.Timeout }>();
  #closed = false;
  #opened = false;
  #tokenHash: Buffer | undefined;
  /** Why the link ended, for its log line: what {@link close} said, or the connection's loss. */
  #closeReason = 'the agent went away: its connection closed or was lost';
  /** When the station was linked (`performance.now()`), for how long it stayed. */
  #linkedAt: number | undefined;
  /** Failed re-reads in a row, and the timer of the next try. */
  #resyncFailures = 0;
  #resyncRetry: NodeJS.Timeout | undefined;
  /** A report waits for NATS, which no replica reaches: said once in the log, until one is stored. */
  #reportsWaiting = false;

  constructor(call: Call, deps: LinkDeps, rereads: Rereads, onClosed: () => void) {
    this.#call = call;
    this.#deps = deps;
    this.#linkId = deps.newLinkId?.() ?? randomUUID();
    this.#receivedHoldMs = deps.receivedHoldMs ?? RECEIVED_HOLD_MS;
    this.#rereads = rereads;
    this.#onClosed = onClosed;
    this.#logger = deps.logger.child({ link: this.#linkId });
    call.on('error', () => this.#cleanup());
    call.on('cancelled', () => this.#cleanup());
    call.on('close', () => this.#cleanup());
    call.on('end', () => this.close(GrpcStatus.OK, 'goodbye'));
  }

  /**
   * Handles the agent's messages one at a time in arrival order. The device token is looked up
   * when the hello comes, in the transaction that records the link (one round trip fewer per
   * handshake); only a missing or malformed one is refused at once.
   */
  async run(): Promise<void> {
    const token = bearerToken(this.#call);
    if (!token || credentialKind(token) !== 'device') {
      this.#refuse();
      return;
    }
    this.#tokenHash = hashCredential(token);
    const helloTimer = setTimeout(
      () => this.close(GrpcStatus.DEADLINE_EXCEEDED, 'no hello from the agent'),
      HELLO_TIMEOUT_MS,
    );
    this.#call.once('data', () => clearTimeout(helloTimer));
    this.#call.on('data', (msg: AgentMessage) => this.#inTurn(() => this.#handle(msg)));
    this.#call.once('close', () => clearTimeout(helloTimer));
  }

  /** Runs `step` after the steps before it; one that fails closes the link. */
  #inTurn(step: () => Promise<void>): void {
    this.#in = this.#in.then(step).catch((err: unknown) => {
      if (err instanceof AgentInputError) {
        // Sent again on the next link, it would be refused again: the agent must change.
        this.#logger.warn(
          { station_id: this.#station?.id, peer: this.#call.getPeer(), reason: err.message },
          'station link refused: the agent sent what no agent of Spool sends',
        );
        this.close(GrpcStatus.INVALID_ARGUMENT, err.message);
        return;
      }
      this.#logger.warn({ err }, 'station message not handled; closing the link');
      this.close(GrpcStatus.UNAVAILABLE, 'try again');
    });
  }

  #refuse(): void {
    const reason = 'the device token is not valid: unknown or revoked';
    // Never the token: where the agent connected from is what tells an operator which one it is.
    this.#logger.warn({ peer: this.#call.getPeer(), reason }, 'station link refused');
    this.close(GrpcStatus.UNAUTHENTICATED, reason);
  }

  async #open(printers: PrinterReport[], agentVersion: string): Promise<void> {
    const opened = await this.#deps.store.linkOpened(
      this.#tokenHash as Buffer,
      this.#linkId,
      printers,
      agentVersion,
    );
    if (!opened) {
      this.#refuse();
      return;
    }
    const { station } = opened;
    this.#station = station;
    this.#printerIds = opened.printerIds;
    this.#heldPrinters = heldPrinters(printers, opened.printerIds);
    // Closed meanwhile: the link's close was not recorded, having no station yet.
    if (this.#closed) {
      this.#recordClosed(station);
      return;
    }

    // A newer link of the same station, on any replica, replaces this one; a revoked or replaced
    // token ends it.
    this.#subscriptions.push(
      this.#deps.nc.subscribe(subjects.links(station.id), {
        callback: (_err, msg) => {
          if (msg.subject === subjects.linkRevoked(station.id)) {
            this.close(
              GrpcStatus.UNAUTHENTICATED,
              'the device token was revoked, or its station deleted',
            );
          } else if (msg.subject === subjects.linkMoved(station.id)) {
            this.#moved();
          } else if (msg.string() !== this.#linkId) {
            this.close(GrpcStatus.ABORTED, 'replaced by a newer link');
          }
        },
      }),
    );
    this.#deps.nc.publish(subjects.linkOpened(station.id), this.#linkId);
    if (station.region !== this.#deps.region) {
      // Served all the same: every offer and report of this link crosses between regions.
      this.#logger.info(
        { station: station.id, homeRegion: station.region, serverRegion: this.#deps.region },
        'station linked outside its home region',
      );
    }
    await this.#send({
      welcome: {
        stationId: station.id,
        orgId: station.orgId,
        printerIds: this.#printerIds,
        homeRegion: station.region,
        serverRegion: this.#deps.region,
        stationName: station.name,
      },
    });
    this.#linkedAt = performance.now();
    this.#logger.info(
      {
        station_id: station.id,
        org_id: station.orgId,
        agent_version: agentVersion,
        printers: printers.length,
        peer: this.#call.getPeer(),
      },
      'station linked',
    );

    // Subscribe before asking for pending jobs, so nothing falls between the two.
    this.#subscriptions.push(
      this.#deps.nc.subscribe(subjects.dispatch(station.region, station.orgId, station.id), {
        callback: (_err, msg) => {
          try {
            this.#dispatch(msg.json<DispatchMessage>(), contextOfMessage(msg));
          } catch (err) {
            this.#logger.warn({ err }, 'unreadable dispatch message');
          }
        },
      }),
    );
    // With the links opening at the same moment: 200 agents reconnecting at once ask in a few
    // batches, not 200 calls. The token was read as the link opened: only the jobs are.
    await this.#rereads.want(this, true);
    if (station.region !== this.#deps.region && !this.#closed && !this.#resyncRetry) {
      this.#resyncRetry = setTimeout(() => {
        this.#resyncRetry = undefined;
        void this.resync();
      }, AWAY_REREAD_MS);
      this.#resyncRetry.unref();
    }
  }

  /** Open, authenticated and not closed: the link a re-read is for. */
  get linked(): boolean {
    return this.#opened && !this.#closed && this.#tokenHash !== undefined && !!this.#station;
  }

  /** The station's token hash; only while {@link linked}. */
  get tokenHash(): Buffer {
    return this.#tokenHash as Buffer;
  }

  /** The id the database records this link under. */
  get linkId(): string {
    return this.#linkId;
  }

  /** The station linked; only while {@link linked}. */
  get station(): LinkStation {
    return this.#station as LinkStation;
  }

  /**
   * Given what the token now belongs to, says whether the link may go on; ends it when the token
   * was revoked or replaced, or the station moved to another region.
   */
  tokenHolds(found: LinkStation | undefined): boolean {
    if (!found || found.revoked || found.id !== this.#station?.id) {
      this.close(
        GrpcStatus.UNAUTHENTICATED,
        'the device token was revoked, or its station deleted',
      );
      return false;
    }
    if (found.region !== this.#station.region) {
      this.#moved();
      return false;
    }
    return true;
  }

  /** The job attempts the agent holds without a result, as of now. */
  unfinishedNow(): Array<{ jobId: string; attempt: number }> {
    return [...this.#unfinished.values()];
  }

  /**
   * Withdraws the job attempts of `unfinished` (what the agent held as the re-read began) that
   * are not among the station's pending `items`: they were cancelled, retried or ended while a
   * withdrawal could not reach the agent. An agent drops a withdrawn job unless it has printed.
   */
  withdrawUnless(items: Job[], unfinished: Array<{ jobId: string; attempt: number }>): void {
    if (this.#closed || unfinished.length === 0) return;
    const pending = new Set(items.map((job) => attemptKey(job.id, job.attempt)));
    for (const { jobId, attempt } of unfinished) {
      const key = attemptKey(jobId, attempt);
      if (pending.has(key) || !this.#unfinished.has(key)) continue;
      this.#unfinished.delete(key);
      this.#logger.info({ jobId, attempt }, 'withdrawing a job no longer pending');
      this.#enqueueSend({ withdrawn: { jobId, attempt } });
    }
  }

  /** Offers the station's pending jobs that this link has not offered yet. */
  offerJobs(items: Job[]): void {
    if (this.#closed) return;
    for (const job of items) {
      this.#offer({
        ...jobJson(job),
        sha256: job.sha256,
        options: PrintOptions.fromPartial(job.options ?? {}),
        trace_context: job.traceContext,
        ...(job.documentInline ? { document_inline: true } : {}),
      });
    }
  }

  /**
   * Checks the token still holds (a revocation message may have been missed), then re-offers,
   * in a batch with other links. A re-read that fails (the database or the jobs service away,
   * often right after the NATS outage that asked for it) is tried again with capped, jittered
   * backoff while the link is open, rather than leaving the station's jobs waiting for the next
   * round. Never rejects.
   */
  resync(): Promise<void> {
    if (!this.linked) return Promise.resolve();
    clearTimeout(this.#resyncRetry);
    this.#resyncRetry = undefined;
    return this.#rereads.want(this).then(
      () => {
        this.#resyncFailures = 0;
      },
      () => {
        this.#resyncFailures += 1;
        this.#retryResync();
      },
    );
  }

  #retryResync(): void {
    if (this.#closed || this.#resyncRetry) return;
    const ceiling = Math.min(
      RESYNC_RETRY_CAP_MS,
      RESYNC_RETRY_FIRST_MS * 2 ** Math.min(this.#resyncFailures - 1, 16),
    );
    // Full jitter: the links that failed together do not all come back in the same instant.
    this.#resyncRetry = setTimeout(() => {
      this.#resyncRetry = undefined;
      void this.resync();
    }, Math.random() * ceiling);
    this.#resyncRetry.unref();
  }

  #dispatch(message: DispatchMessage, trace: Context): void {
    if (message.kind === 'offer') {
      this.#offer(message.job, trace);
      return;
    }
    this.#unfinished.delete(attemptKey(message.job_id, message.attempt));
    this.#enqueueSend({ withdrawn: { jobId: message.job_id, attempt: message.attempt } });
  }

  /** Offers a job; its push continues `trace`, or else the job's own trace. */
  #offer(job: OfferedJob, trace = contextFrom(job.trace_context)): void {
    const key = attemptKey(job.id, job.attempt);
    if (this.#offered.has(key) || this.#closed || this.#heldPrinters.has(job.printer_id)) return;
    this.#offered.add(key);
    const printerName = Object.entries(this.#printerIds).find(
      ([, id]) => id === job.printer_id,
    )?.[0];
    if (printerName === undefined) {
      this.#offered.delete(key);
      this.#logger.warn(
        { jobId: job.id },
        'job for a printer this agent does not report; it waits',
      );
      return;
    }
    this.#unfinished.set(key, { jobId: job.id, attempt: job.attempt });
    this.#out = this.#out
      .then(() => this.#push(job, printerName, trace))
      .catch((err: unknown) => {
        this.#offered.delete(key);
        this.#logger.warn(
          { err, jobId: job.id },
          'could not send a job; it is sent again on reconnect',
        );
      });
  }

  #push(job: OfferedJob, printerName: string, trace: Context): Promise<void> {
    const station = this.#station as LinkStation;
    const attributes = spoolAttributes({
      orgId: station.orgId,
      stationId: station.id,
      jobId: job.id,
      printerId: job.printer_id,
      attempt: job.attempt,
    });
    return inSpan('push job', { kind: SpanKind.PRODUCER, parent: trace, attributes }, () =>
      this.#sendJob(job, printerName),
    );
  }

  /**
   * The document's bytes: in the offer itself, kept with the job (asked of the jobs service), or
   * streamed from the object store.
   */
  async #document(
    job: OfferedJob,
  ): Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array> | undefined> {
    if (job.document !== undefined) return [Buffer.from(job.document, 'base64')];
    if (job.document_inline) {
      const station = this.#station as LinkStation;
      try {
        const { data } = await this.#deps.jobs.getJobDocument({
          orgId: station.orgId,
          jobId: job.id,
        });
        return [data];
      } catch (err) {
        if ((err as { code?: string }).code === 'content_deleted') return undefined;
        throw err;
      }
    }
    return (await this.#deps.documents.get(job.id))?.data;
  }

  async #sendJob(job: OfferedJob, printerName: string): Promise<void> {
    const document = await this.#document(job);
    if (!document) {
      await this.#report({
        kind: 'result',
        job_id: job.id,
        attempt: job.attempt,
        printed: false,
        detail: 'the document is no longer stored',
      });
      return;
    }
    await this.#write({
      offer: {
        jobId: job.id,
        attempt: job.attempt,
        printerId: job.printer_id,
        printerName,
        title: job.title,
        contentType: job.content_type,
        size: job.size,
        sha256: job.sha256,
        options: PrintOptions.fromPartial(job.options),
        traceContext: traceCarrier(),
      },
    });
    let offset = 0;
    for await (const part of document) {
      await this.#write({
        chunk: {
          jobId: job.id,
          offset,
          data: Buffer.from(part.buffer, part.byteOffset, part.length),
          last: false,
        },
      });
      offset += part.length;
    }
    await this.#write({ chunk: { jobId: job.id, offset, data: Buffer.alloc(0), last: true } });
  }

  async #handle(msg: AgentMessage): Promise<void> {
    if (this.#closed) return;
    if (!this.#opened) {
      if (!msg.hello) {
        this.close(GrpcStatus.INVALID_ARGUMENT, 'the first message must be hello');
        return;
      }
      this.#opened = true;
      const hello = checkHello(msg.hello);
      for (const { jobId, attempt } of hello.held) {
        this.#unfinished.set(attemptKey(jobId, attempt), { jobId, attempt });
      }
      await this.#open(hello.printers, hello.agentVersion);
      return;
    }
    const station = this.#station;
    if (!station) return;
    if (msg.printers) {
      const printers = checkPrinters(msg.printers.printers);
      const offering = new Set(
        Object.values(this.#printerIds).filter((id) => !this.#heldPrinters.has(id)),
      );
      this.#printerIds = await this.#deps.store.printersChanged(station, printers);
      this.#heldPrinters = heldPrinters(printers, this.#printerIds);
      // Jobs for a printer the agent reports again (or anew), or able to print again, waited
      // here; offer them now.
      const released = Object.values(this.#printerIds).some(
        (id) => !offering.has(id) && !this.#heldPrinters.has(id),
      );
      if (released) void this.resync();
    } else if (msg.received) {
      const body = msg.received;
      checkJobRef('received', body.jobId, body.attempt);
      const key = attemptKey(body.jobId, body.attempt);
      if (this.#receivedHoldMs <= 0 || this.#heldReceived.has(key)) {
        await this.#acceptReport('received', body);
        return;
      }
      // A fast printer's result follows within a few milliseconds (so do both reports sent again
      // after a reconnect): held that long, the two go as one report. Nothing waits on a
      // `received` but the job's `sent` status.
      const timer = setTimeout(
        () => this.#inTurn(() => this.#releaseReceived(key)),
        this.#receivedHoldMs,
      );
      this.#heldReceived.set(key, { body, timer });
    } else if (msg.result) {
      const { result } = msg;
      checkJobRef('result', result.jobId, result.attempt);
      await this.#acceptReport('result', {
        ...result,
        detail: cleanText(result.detail, MAX_DETAIL),
      });
    }
  }

  async #releaseReceived(key: string): Promise<void> {
    const held = this.#heldReceived.get(key);
    if (!held) return;
    this.#heldReceived.delete(key);
    await this.#acceptReport('received', held.body);
  }

  async #acceptReport(kind: 'received' | 'result', body: JobReceived | JobResult): Promise<void> {
    const result = kind === 'result' ? (body as JobResult) : undefined;
    const key = attemptKey(body.jobId, body.attempt);
    const held = result && this.#heldReceived.get(key);
    if (held) {
      clearTimeout(held.timer);
      this.#heldReceived.delete(key);
    }
    await this.#storeReport(() =>
      context.with(contextFrom(body.traceContext), () =>
        this.#report({
          kind,
          job_id: body.jobId,
          attempt: body.attempt,
          ...(result ? { printed: result.printed, detail: result.detail } : {}),
          ...(held ? { received: true } : {}),
        }),
      ),
    );
    const { jobId, attempt } = body;
    if (result) this.#unfinished.delete(key);
    if (held) this.#enqueueSend({ accepted: { jobId, attempt, kind: 'received' } });
    this.#enqueueSend({ accepted: { jobId, attempt, kind } });
  }

  /**
   * Publishes a report until JetStream stores it. A stream electing a new leader (a NATS server
   * went away) refuses publishes for a few seconds: the report is published again (the same
   * message id, stored once) rather than the link closed, so the station's reports are accepted
   * as soon as the stream takes them. After `reportRetryMs` of refusals the link ends (the agent
   * sends the report again on its next link) if another replica can store reports; if none can,
   * NATS is away for all of them, and ending links would only take stations offline and back, so
   * the report is tried on.
   */
  async #storeReport(publish: () => Promise<void>): Promise<void> {
    const { reports } = this.#deps;
    const timeoutMs = this.#deps.reportRetryMs ?? REPORT_RETRY_MS;
    for (;;) {
      try {
        await retryTransient(
          () => {
            if (this.#closed) throw new Error('link closed');
            return publish();
          },
          { timeoutMs, maxWaitMs: REPORT_RETRY_WAIT_MS },
        );
        reports?.stored();
        if (this.#reportsWaiting) {
          this.#reportsWaiting = false;
          this.#logger.info("NATS stores the station's reports again");
        }
        return;
      } catch (err) {
        if (this.#closed || !isTransient(err)) throw err;
        reports?.refused();
        const elsewhere = reports ? await reports.elsewhere().catch(() => false) : true;
        if (elsewhere) throw err;
        if (!this.#reportsWaiting) {
          this.#reportsWaiting = true;
          this.#logger.warn(
            { err },
            "NATS does not store the station's reports, for no stations replica: the link stays open and they wait",
          );
        }
      }
    }
  }

  /** Publishes a report, continuing the active trace, and waits for JetStream to store it. */
  async #report(report: Omit<StationReport, 'org_id' | 'station_id'>): Promise<void> {
    const station = this.#station as LinkStation;
    const full: StationReport = {
      ...report,
      org_id: station.orgId,
      station_id: station.id,
      region: station.region,
    };
    const subject = subjects.reports(station.region, station.orgId, station.id);
    // The station's id in it too: another station naming the same job cannot have this
    // report dropped as a duplicate of its own.
    const msgID = `${station.id}.${report.job_id}.${report.attempt}.${report.kind}`;
    const publish = () => {
      const headers = natsHeaders();
      injectHeaders(headers);
      return this.#deps.publisher.publish(subject, JSON.stringify(full), { msgID, headers });
    };
    if (!tracing()) {
      await publish();
      return;
    }
    const attributes = {
      ...natsAttributes('publish', subject, msgID),
      ...spoolAttributes({ orgId: station.orgId, stationId: station.id, jobId: report.job_id }),
    };
    await inSpan(
      natsSpanName('publish', subject),
      { kind: SpanKind.PRODUCER, attributes },
      publish,
    );
  }

  #enqueueSend(msg: ServerMessage): void {
    this.#out = this.#out.then(() => this.#write(msg)).catch(() => {});
  }

  #send(msg: ServerMessage): Promise<void> {
    this.#enqueueSend(msg);
    return this.#out;
  }

  async #write(msg: ServerMessage): Promise<void> {
    if (this.#closed) throw new Error('link closed');
    if (!this.#call.write(msg)) await once(this.#call, 'drain');
  }

  /** The station's home region changed: the agent reconnects and is linked as the new region's. */
  #moved(): void {
    this.close(GrpcStatus.UNAVAILABLE, 'the station moved to another region; reconnect');
  }

  close(code: GrpcStatus, details: string): void {
    if (this.#closed) return;
    this.#closeReason = code === GrpcStatus.OK ? 'the agent closed it' : details;
    if (code === GrpcStatus.OK) this.#call.end();
    else this.#call.emit('error', { code, details });
    this.#cleanup();
  }

  #cleanup(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#resyncRetry);
    // Held reports were not accepted: the agent sends them again when it reconnects.
    for (const held of this.#heldReceived.values()) clearTimeout(held.timer);
    this.#heldReceived.clear();
    for (const sub of this.#subscriptions) sub.unsubscribe();
    this.#onClosed();
    if (this.#station) {
      this.#recordClosed(this.#station);
      if (this.#linkedAt !== undefined) {
        this.#logger.info(
          {
            station_id: this.#station.id,
            org_id: this.#station.orgId,
            reason: this.#closeReason,
            linked_s: Math.round((performance.now() - this.#linkedAt) / 1000),
          },
          'station unlinked',
        );
      }
    }
  }

  /** Records the link's end once more: a re-read recorded its station online as it closed. */
  recordClosedAgain(): void {
    if (this.#station) this.#recordClosed(this.#station);
  }

  #recordClosed(station: LinkStation): void {
    this.#deps.store
      .linkClosed(station, this.#linkId)
      .catch((err: unknown) => this.#logger.warn({ err }, 'could not record the station offline'));
  }
}
