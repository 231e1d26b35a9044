/**
 * A link once its station is known: what it offers the agent ({@link LinkOffers}), what it takes
 * from the agent's reports ({@link LinkReports}), and what NATS tells it about its station.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Subscription } from '@nats-io/transport-node';
import type { AgentHello, AgentMessage, PrinterReport } from '../../gen/spool/v1/stations.js';
import { subjects } from '../../lib/bus.js';
import type { DispatchMessage } from '../../lib/contracts/dispatch.js';
import type { Logger } from '../../lib/logger.js';
import { contextOfMessage } from '../../lib/tracing.js';
import { checkJobRef, checkPrinters, cleanText, MAX_DETAIL } from './agent-input.js';
import type { JobAttempt, LinkDeps } from './link-deps.js';
import { LinkDiagnoses } from './link-diagnosis.js';
import { LinkOffers } from './link-offers.js';
import type { AgentOutbound } from './link-outbound.js';
import { LinkReports } from './link-reports.js';
import type { LinkStation } from './link-station.js';
import type { UpdatableLink } from './link-updates.js';

export interface LinkedStationOptions {
  deps: LinkDeps;
  station: LinkStation;
  logger: Logger;
  outbound: AgentOutbound;
  closed: () => boolean;
  /** Runs a step in turn with the agent's messages. */
  inTurn: (step: () => Promise<void>) => void;
  /** Asks for the station's pending jobs again: a printer whose jobs waited can take them now. */
  resync: () => void;
  /** The printers the agent reported in its hello, and their ids by name. */
  printers: PrinterReport[];
  printerIds: Record<string, string>;
  /** The job attempts the agent said in its hello it holds without a result. */
  held: JobAttempt[];
}

/** Why a link ends, as the agent is told: the status and its details. */
export type LinkEnd = readonly [GrpcStatus, string];

/** The ends of a link that the station's news brings, told to the agent. */
export const ENDS = {
  /** Its device token was revoked or replaced, or the station deleted. */
  revoked: [GrpcStatus.UNAUTHENTICATED, 'the device token was revoked, or its station deleted'],
  /** Its home region changed: the agent reconnects and is linked as the new region's. */
  moved: [GrpcStatus.UNAVAILABLE, 'the station moved to another region; reconnect'],
  /** A newer link of the station opened, on any replica. */
  replaced: [GrpcStatus.ABORTED, 'replaced by a newer link'],
} as const satisfies Record<string, LinkEnd>;

export class LinkedStation {
  readonly station: LinkStation;
  readonly offers: LinkOffers;
  readonly #reports: LinkReports;
  readonly #diagnoses: LinkDiagnoses;
  /** What the link needs for its life: not the hello's printers and attempts, used only here. */
  readonly #options: Pick<
    LinkedStationOptions,
    'deps' | 'logger' | 'outbound' | 'resync' | 'closed'
  >;
  readonly #subscriptions: Subscription[] = [];
  /** The link as release offers see it, once its hello's update report is stored. */
  #updatable: UpdatableLink | undefined;

  constructor(options: LinkedStationOptions) {
    this.#options = {
      deps: options.deps,
      logger: options.logger,
      outbound: options.outbound,
      resync: options.resync,
      closed: options.closed,
    };
    this.station = options.station;
    const { deps, station, logger, outbound, closed } = options;
    const common = { deps, station, logger, outbound, closed };
    const reports: LinkReports = new LinkReports({
      ...common,
      inTurn: options.inTurn,
      finished: (key) => offers.finished(key),
    });
    const offers = new LinkOffers({
      ...common,
      report: (report) => reports.report(report),
      held: options.held,
      printers: options.printers,
      printerIds: options.printerIds,
    });
    this.offers = offers;
    this.#reports = reports;
    this.#diagnoses = new LinkDiagnoses({ deps, stationId: station.id, outbound, logger });
  }

  /** Answers the station's diagnosis requests by asking its agent (link-diagnosis.ts). */
  watchDiagnoses(): void {
    this.#diagnoses.watch();
  }

  /**
   * Listens for the news that ends link `linkId` ({@link ENDS}): a newer link of the same station,
   * on any replica, replaces it; a revoked or replaced token, or a move, ends it.
   */
  watchLinks(linkId: string, end: (how: LinkEnd) => void): void {
    const { id } = this.station;
    this.#subscriptions.push(
      this.#options.deps.nc.subscribe(subjects.links(id), {
        callback: (_err, msg) => {
          if (msg.subject === subjects.linkRevoked(id)) end(ENDS.revoked);
          else if (msg.subject === subjects.linkMoved(id)) end(ENDS.moved);
          else if (msg.string() !== linkId) end(ENDS.replaced);
        },
      }),
    );
  }

  /**
   * Says link `linkId` is open: to the station's other links, which end, and to the agent,
   * welcomed with its station and the ids of its printers.
   */
  async welcome(linkId: string): Promise<void> {
    const { deps, logger, outbound } = this.#options;
    const { station } = this;
    deps.nc.publish(subjects.linkOpened(station.id), linkId);
    if (station.region !== deps.region) {
      // Served all the same: every offer and report of this link crosses between regions.
      logger.info(
        { station: station.id, homeRegion: station.region, serverRegion: deps.region },
        'station linked outside its home region',
      );
    }
    await outbound.send({
      welcome: {
        stationId: station.id,
        orgId: station.orgId,
        printerIds: this.offers.printerIds,
        homeRegion: station.region,
        serverRegion: deps.region,
        stationName: station.name,
      },
    });
  }

  /**
   * Stores the hello's update report (its platform went with the link's open), then offers the
   * station its target release when its agent can take it (link-updates.ts).
   */
  async updates(hello: AgentHello): Promise<void> {
    const { deps, outbound, logger } = this.#options;
    const watch = deps.releases;
    if (!watch) return;
    const { station } = this;
    const key = { id: station.id, orgId: station.orgId };
    await watch.releases.recordUpdate(key, hello.update);
    // Ended meanwhile: stop() has run, and would not forget it.
    if (this.#options.closed()) return;
    const link: UpdatableLink = {
      station: key,
      platform: hello.platform,
      agentVersion: hello.agentVersion,
      send: (msg) => outbound.send(msg),
    };
    this.#updatable = link;
    await watch.linked(link).catch((err: unknown) => {
      logger.warn({ err }, 'could not offer the station its target release');
    });
  }

  /** Takes the station's offers and withdrawals from `dispatch.<org>.<station>`. */
  watchDispatch(): void {
    const { station } = this;
    this.#subscriptions.push(
      this.#options.deps.nc.subscribe(
        subjects.dispatch(station.region, station.orgId, station.id),
        {
          callback: (_err, msg) => {
            try {
              this.offers.dispatch(msg.json<DispatchMessage>(), contextOfMessage(msg));
            } catch (err) {
              this.#options.logger.warn({ err }, 'unreadable dispatch message');
            }
          },
        },
      ),
    );
  }

  /** A message of the agent's after its hello: its printers, or a report of a job. */
  async handle(msg: AgentMessage): Promise<void> {
    if (msg.printers) {
      const printers = checkPrinters(msg.printers.printers);
      const ids = await this.#options.deps.store.printersChanged(this.station, printers);
      // Jobs for a printer the agent reports again (or anew), or able to print again, waited
      // here; offer them now.
      if (this.offers.printersReported(printers, ids)) this.#options.resync();
    } else if (msg.received) {
      const body = msg.received;
      checkJobRef('received', body.jobId, body.attempt);
      // A claim waits on the jobs service, not in turn with the agent's other messages.
      if (body.claim) void this.#reports.claim(body);
      else await this.#reports.received(body);
    } else if (msg.result) {
      const { result } = msg;
      checkJobRef('result', result.jobId, result.attempt);
      await this.#reports.result({ ...result, detail: cleanText(result.detail, MAX_DETAIL) });
    } else if (msg.diagnosis) {
      this.#diagnoses.report(msg.diagnosis);
    } else if (msg.update) {
      const { station } = this;
      await this.#options.deps.releases?.releases.recordUpdate(
        { id: station.id, orgId: station.orgId },
        msg.update,
      );
    }
  }

  /** The link ended: nothing more is held or heard. */
  stop(): void {
    this.#reports.stop();
    this.#diagnoses.stop();
    if (this.#updatable) this.#options.deps.releases?.forget(this.#updatable);
    for (const sub of this.#subscriptions) sub.unsubscribe();
  }
}
