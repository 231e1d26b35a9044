/**
 * The stations deployable: the stations gRPC service and the station link (with the enrollment
 * of stations beside it), built from the connections they are given (used by `spool serve stations` and `spool dev`).
 */
import { fileURLToPath } from 'node:url';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type pg from 'pg';
import type { JobsServiceClient } from '../../gen/spool/v1/jobs.js';
import {
  type StationEnrollmentServer,
  StationEnrollmentService,
  StationLinkService,
  StationsServiceService,
} from '../../gen/spool/v1/stations.js';
import { type BusLayout, type NatsConnection, SINGLE_REGION, subjects } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { ENROLL_ATTEMPTS_PER_MINUTE } from '../../lib/contracts/enrollments.js';
import { openDocuments } from '../../lib/documents.js';
import { SpoolError } from '../../lib/errors.js';
import {
  type AsyncClient,
  type AsyncServer,
  adaptServer,
  type GrpcServerHandle,
  type GrpcService,
  startGrpcServer,
} from '../../lib/grpc.js';
import type { Logger } from '../../lib/logger.js';
import type { MigrationSet } from '../../lib/migrate.js';
import { OutboxRelay } from '../../lib/outbox.js';
import { StreamPublisher } from '../../lib/stream-publisher.js';
import { attemptLimit, peerAddress } from './enroll-limit.js';
import { createFleetServer } from './fleet-server.js';
import { createLinkRegistry, type LinkRegistry } from './link.js';
import { ReleaseWatch } from './link-updates.js';
import { fillRolloutBuckets, Releases } from './releases.js';
import { ReplicaWatch, ReportsHealth } from './replicas.js';
import { createStationsServer, redeemCode } from './server.js';
import { OUTBOX_TABLE } from './station-outbox.js';
import { createStationStore } from './store.js';

export const migrations: MigrationSet = {
  service: 'stations',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

/**
 * Serves the station link, and the enrollment of stations beside it, on `host:port` (port 0: any
 * free port). A link's end means something
 * (the station goes offline, and `station.offline` is sent), so unlike the service API's servers,
 * which end connections after `MAX_CONNECTION_AGE_MS` for callers to spread over new replicas,
 * this one keeps each connection for as long as its agent holds it. It pings each agent every
 * {@link LINK_PING_MS} and ends a link whose agent does not answer within
 * {@link LINK_PING_TIMEOUT_MS}: an agent that hangs (or whose machine froze) is offline within
 * about 12 s, and the jobs of its pools' members move on (docs/jobs.md).
 */
export function startLinkServer(
  part: Pick<StationsPart, 'link'> & Partial<Pick<StationsPart, 'enrollment'>>,
  host: string,
  port: number,
): Promise<GrpcServerHandle> {
  return startGrpcServer({
    host,
    port,
    services: [part.link, ...(part.enrollment ? [part.enrollment] : [])],
    maxConnectionAgeMs: null,
    keepalive: { timeMs: LINK_PING_MS, timeoutMs: LINK_PING_TIMEOUT_MS },
  });
}

/** How often the link server pings each agent, and how long an answer may take. */
export const LINK_PING_MS = 8_000;
export const LINK_PING_TIMEOUT_MS = 4_000;

export interface StationsDeps {
  pool: pg.Pool;
  nc: NatsConnection;
  /** This process's region, and every region a station may be homed in. */
  layout?: BusLayout;
  logger: Logger;
  clock: Clock;
  jobs: AsyncClient<JobsServiceClient>;
  /** How long a link holds a `received` for its `result` (default `RECEIVED_HOLD_MS`). */
  receivedHoldMs?: number;
  /** How often the replica says it is alive (default `REPLICA_BEAT_MS`). */
  replicaBeatMs?: number;
  /** How long a link tries a report NATS refuses before it asks about other replicas. */
  reportRetryMs?: number;
  /** How long a diagnosis waits for the agent's report (default `DIAGNOSE_WAIT_MS`). */
  diagnoseWaitMs?: number;
  /**
   * Where agents download release tarballs: the gateway's `/agent/v1/releases` address (setting
   * `agent_download_url`). Offers name `<it>/<version>/` as their download base.
   */
  agentDownloadUrl?: string | (() => string);
}

export interface StationsPart {
  /** The API the gateway and the jobs service call. */
  grpc: GrpcService;
  /** The link agents hold open; served on its own port. */
  link: GrpcService;
  /** `StationEnrollment`: enrollment codes exchanged for tokens, served beside the link. */
  enrollment: GrpcService;
  links: LinkRegistry;
  /** This replica's beat, which also records offline the stations of replicas lost. */
  replica: ReplicaWatch;
  relay: OutboxRelay;
  stop(): Promise<void>;
}

export async function createStations(deps: StationsDeps): Promise<StationsPart> {
  const logger = deps.logger.child({ service: 'stations' });
  const layout = deps.layout ?? SINGLE_REGION;
  const relay = new OutboxRelay({ pool: deps.pool, nc: deps.nc, table: OUTBOX_TABLE, logger });
  const store = createStationStore(deps.pool, deps.clock, (rows) => relay.send(rows));
  const publisher = new StreamPublisher(deps.nc);
  const reports = new ReportsHealth(deps.nc);
  const replica = new ReplicaWatch({
    store,
    clock: deps.clock,
    logger,
    takesReports: () => reports.ok,
    ...(deps.replicaBeatMs === undefined ? {} : { beatMs: deps.replicaBeatMs }),
  });
  const releases = new Releases({ pool: deps.pool, nc: deps.nc, clock: deps.clock });
  const releaseWatch = new ReleaseWatch({
    releases,
    nc: deps.nc,
    logger,
    downloadUrl: deps.agentDownloadUrl ?? 'http://127.0.0.1:8080/agent/v1/releases',
  });
  releaseWatch.start();
  // Stations made before their bucket was stored get it now; rollouts hash them meanwhile.
  void fillRolloutBuckets(deps.pool).then(
    (n) => {
      if (n > 0) logger.info({ stations: n }, 'stored the rollout bucket of older stations');
    },
    (err: unknown) => {
      logger.warn(
        { err },
        'could not store the rollout bucket of older stations; trying at next start',
      );
    },
  );
  const links = createLinkRegistry({
    releases: releaseWatch,
    store,
    nc: deps.nc,
    publisher,
    documents: await openDocuments(deps.nc, layout),
    region: layout.region,
    newLinkId: () => replica.linkId(),
    jobs: deps.jobs,
    logger,
    ...(deps.receivedHoldMs === undefined ? {} : { receivedHoldMs: deps.receivedHoldMs }),
    reports: {
      stored: () => reports.stored(),
      refused: () => reports.refused(),
      elsewhere: () => replica.anotherTakesReports(),
    },
    ...(deps.reportRetryMs === undefined ? {} : { reportRetryMs: deps.reportRetryMs }),
    ...(deps.diagnoseWaitMs === undefined ? {} : { diagnoseWaitMs: deps.diagnoseWaitMs }),
  });
  relay.start();
  replica.start();
  const attempts = attemptLimit(deps.clock, ENROLL_ATTEMPTS_PER_MINUTE);
  const enrollment: AsyncServer<StationEnrollmentServer> = {
    async enroll(req, call) {
      const verdict = attempts.take(peerAddress(call.getPeer()));
      if (!verdict.allowed) {
        throw new SpoolError(
          'rate_limited',
          `too many enrollment attempts from this address: at most ${ENROLL_ATTEMPTS_PER_MINUTE} a minute; try again in ${verdict.retryAfter} s`,
          { retryAfter: verdict.retryAfter },
        );
      }
      return redeemCode(store, req.code, layout.region);
    },
  };
  return {
    grpc: {
      name: 'spool.v1.StationsService',
      definition: StationsServiceService,
      implementation: adaptServer(
        {
          ...createStationsServer({
            store,
            cutLinks: (stationId) => deps.nc.publish(subjects.linkRevoked(stationId)),
            moveLinks: (stationId) => deps.nc.publish(subjects.linkMoved(stationId)),
            printersChanged: (orgId, which) =>
              deps.nc.publish(
                subjects.printersChanged(orgId),
                JSON.stringify({ org_id: orgId, data: which }),
              ),
            layout,
          }),
          ...createFleetServer({
            releases,
            diagnose: { stations: store, nc: deps.nc, waitMs: deps.diagnoseWaitMs },
          }),
        },
        logger,
      ),
    },
    link: {
      name: 'spool.v1.StationLink',
      definition: StationLinkService,
      implementation: { connect: links.handler } as UntypedServiceImplementation,
    },
    enrollment: {
      name: 'spool.v1.StationEnrollment',
      definition: StationEnrollmentService,
      implementation: adaptServer(enrollment, logger),
    },
    links,
    replica,
    relay,
    async stop() {
      releaseWatch.stop();
      replica.stop();
      reports.stop();
      links.closeAll();
      await relay.stop();
      publisher.close();
    },
  };
}
