/**
 * What a station's agent reports of its jobs, turned into messages on
 * `reports.<org>.<station>` and accepted once JetStream stores them.
 */
import { headers as natsHeaders } from '@nats-io/transport-node';
import { context } from '@opentelemetry/api';
import type { JobReceived, JobResult } from '../../gen/spool/v1/stations.js';
import { subjects } from '../../lib/bus.js';
import { type StationReport, trustedConfirmation } from '../../lib/contracts/station-report.js';
import type { Logger } from '../../lib/logger.js';
import {
  contextFrom,
  injectHeaders,
  inSpan,
  natsAttributes,
  natsSpanName,
  SpanKind,
  spoolAttributes,
  tracing,
} from '../../lib/tracing.js';
import { isTransient, retryTransient } from '../../lib/transient.js';
import { attemptKey, type LinkDeps } from './link-deps.js';
import type { AgentOutbound } from './link-outbound.js';
import type { LinkStation } from './link-station.js';

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

/** A report as the link makes it, before it names its station. */
export type AgentReport = Omit<StationReport, 'org_id' | 'station_id'>;

export interface LinkReportsOptions {
  deps: Pick<LinkDeps, 'publisher' | 'reports' | 'reportRetryMs' | 'receivedHoldMs' | 'jobs'>;
  station: LinkStation;
  logger: Logger;
  outbound: AgentOutbound;
  closed: () => boolean;
  /** Runs a step in turn with the agent's messages. */
  inTurn: (step: () => Promise<void>) => void;
  /** The agent has reported the attempt's result: it no longer holds the job. */
  finished: (key: string) => void;
}

/** One link's reports: those held a moment for the result, and those waiting for NATS. */
export class LinkReports {
  readonly #options: LinkReportsOptions;
  readonly #receivedHoldMs: number;
  /**
   * `received` reports held back a moment, by job attempt, in case the `result` follows: the two
   * then go as one report.
   */
  readonly #heldReceived = new Map<string, { body: JobReceived; timer: NodeJS.Timeout }>();
  /** A report waits for NATS, which no replica reaches: said once in the log, until one is stored. */
  #reportsWaiting = false;

  constructor(options: LinkReportsOptions) {
    this.#options = options;
    this.#receivedHoldMs = options.deps.receivedHoldMs ?? RECEIVED_HOLD_MS;
  }

  /** The agent has the job: reported at once, or held a moment for its result. */
  async received(body: JobReceived): Promise<void> {
    const key = attemptKey(body.jobId, body.attempt);
    if (this.#receivedHoldMs <= 0 || this.#heldReceived.has(key)) {
      await this.#accept('received', body);
      return;
    }
    // A fast printer's result follows within a few milliseconds (so do both reports sent again
    // after a reconnect): held that long, the two go as one report. Nothing waits on a
    // `received` but the job's `sent` status.
    const timer = setTimeout(
      () => this.#options.inTurn(() => this.#releaseReceived(key)),
      this.#receivedHoldMs,
    );
    this.#heldReceived.set(key, { body, timer });
  }

  /**
   * The agent claims a pool job it is about to print: the jobs service records it as this
   * station's (accepted: the agent prints it) unless it was routed elsewhere first (withdrawn:
   * the agent drops it). A claim that cannot be answered now is not answered; the agent claims
   * again.
   */
  async claim(body: JobReceived): Promise<void> {
    const { deps, station, outbound, logger } = this.#options;
    const { jobId, attempt } = body;
    try {
      const { claimed } = await deps.jobs.claimJob({
        orgId: station.orgId,
        jobId,
        attempt,
        stationId: station.id,
        region: station.region,
      });
      if (claimed) void outbound.send({ accepted: { jobId, attempt, kind: 'received' } });
      else {
        logger.info({ jobId, attempt }, 'a claimed pool job went to another printer: withdrawn');
        this.#options.finished(attemptKey(jobId, attempt));
        void outbound.send({ withdrawn: { jobId, attempt } });
      }
    } catch (err) {
      logger.warn({ err, jobId }, 'could not record a claim; the agent claims again');
    }
  }

  /** The job printed or failed: reported with the `received` held for it, if any. */
  result(result: JobResult): Promise<void> {
    return this.#accept('result', result);
  }

  /** The link ended: held reports were not accepted, and the agent sends them again. */
  stop(): void {
    for (const held of this.#heldReceived.values()) clearTimeout(held.timer);
    this.#heldReceived.clear();
  }

  async #releaseReceived(key: string): Promise<void> {
    const held = this.#heldReceived.get(key);
    if (!held) return;
    this.#heldReceived.delete(key);
    await this.#accept('received', held.body);
  }

  async #accept(kind: 'received' | 'result', body: JobReceived | JobResult): Promise<void> {
    const { outbound } = this.#options;
    const result = kind === 'result' ? (body as JobResult) : undefined;
    const key = attemptKey(body.jobId, body.attempt);
    const held = result && this.#heldReceived.get(key);
    if (held) {
      clearTimeout(held.timer);
      this.#heldReceived.delete(key);
    }
    await this.#store(() =>
      context.with(contextFrom(body.traceContext), () =>
        this.report({
          kind,
          job_id: body.jobId,
          attempt: body.attempt,
          ...(result ? { printed: result.printed, detail: result.detail } : {}),
          ...(result?.printed && result.confirmation
            ? { confirmation: trustedConfirmation(result.confirmation) }
            : {}),
          ...(held ? { received: true } : {}),
        }),
      ),
    );
    const { jobId, attempt } = body;
    if (result) this.#options.finished(key);
    if (held) void outbound.send({ accepted: { jobId, attempt, kind: 'received' } });
    void outbound.send({ accepted: { jobId, attempt, kind } });
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
  async #store(publish: () => Promise<void>): Promise<void> {
    const { deps, closed, logger } = this.#options;
    const { reports } = deps;
    const timeoutMs = deps.reportRetryMs ?? REPORT_RETRY_MS;
    for (;;) {
      try {
        await retryTransient(
          () => {
            if (closed()) throw new Error('link closed');
            return publish();
          },
          { timeoutMs, maxWaitMs: REPORT_RETRY_WAIT_MS },
        );
        reports?.stored();
        if (this.#reportsWaiting) {
          this.#reportsWaiting = false;
          logger.info("NATS stores the station's reports again");
        }
        return;
      } catch (err) {
        if (closed() || !isTransient(err)) throw err;
        reports?.refused();
        const elsewhere = reports ? await reports.elsewhere().catch(() => false) : true;
        if (elsewhere) throw err;
        if (!this.#reportsWaiting) {
          this.#reportsWaiting = true;
          logger.warn(
            { err },
            "NATS does not store the station's reports, for no stations replica: the link stays open and they wait",
          );
        }
      }
    }
  }

  /** Publishes a report, continuing the active trace, and waits for JetStream to store it. */
  async report(report: AgentReport): Promise<void> {
    const { station, deps } = this.#options;
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
      return deps.publisher.publish(subject, JSON.stringify(full), { msgID, headers });
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
}
