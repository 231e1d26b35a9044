/**
 * The router: gives pool jobs waiting for a member one as soon as a member can take them, and
 * moves a queued pool job off a member that has not been able to print for the pool's
 * `failover_after` (docs/jobs.md, "Pools and routing"). A job a station has claimed is `sent` and
 * never moved, so a job prints once wherever it goes.
 *
 * Every jobs replica runs one, once a second and whenever it is nudged (a pool job created with no
 * member to take it, a printer or station changing). A round reads the pools that have queued
 * jobs, asks the stations service for their members in one call, records which members cannot
 * take jobs and since when, and routes what it can; each routing is a transition guarded by the
 * printer the round saw, so two replicas' rounds never route a job twice. Time comes from the
 * injected clock.
 */
import type { Printer, StationsServiceClient } from '../../gen/spool/v1/stations.js';
import type { Clock } from '../../lib/clock.js';
import { FailureLog } from '../../lib/failure-log.js';
import type { AsyncClient } from '../../lib/grpc.js';
import { orgKey } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { canTakeJobs, chooseMember, honours, POOL_DELETED, waitingForPool } from './routing.js';
import type { QueuedPoolJob, RoutingPoolState, RoutingStore } from './routing-store.js';
import type { JobTransitions } from './transitions.js';

/** Pools one round looks at, and queued jobs it reads. */
const POOLS_PER_ROUND = 500;
const JOBS_PER_ROUND = 2_000;
/** The stations service answers at most this many printers a call. */
const PRINTERS_PER_CALL = 1_000;

export interface RoundResult {
  routed: number;
  failedOver: number;
}

export interface RouterDeps {
  routing: RoutingStore;
  transitions: Pick<JobTransitions, 'apply'>;
  stations: AsyncClient<StationsServiceClient>;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
}

export class Router {
  readonly #deps: RouterDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<RoundResult> | undefined;
  #again = false;
  readonly #failures: FailureLog;

  constructor(deps: RouterDeps) {
    this.#deps = deps;
    this.#failures = new FailureLog(deps.logger, 'routing pool jobs');
  }

  start(): void {
    this.#timer = setInterval(() => this.nudge(), this.#deps.intervalMs ?? 1_000);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#again = false;
    await this.#running?.catch(() => undefined);
  }

  /** Runs a round soon: now if none is running, else right after the running one. */
  nudge(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.runOnce().then(
      () => this.#failures.succeeded(),
      (err: unknown) => this.#failures.failed(err),
    );
  }

  /** One round; a round asked for while one runs shares it. */
  runOnce(): Promise<RoundResult> {
    if (this.#running) return this.#running;
    this.#running = this.#round().finally(() => {
      this.#running = undefined;
      if (this.#again && this.#timer) {
        this.#again = false;
        this.nudge();
      }
    });
    return this.#running;
  }

  async #round(): Promise<RoundResult> {
    const { routing } = this.#deps;
    await this.#markOrphans();
    const pools = await routing.poolsToWatch(POOLS_PER_ROUND);
    if (pools.length === 0) return { routed: 0, failedOver: 0 };
    const printers = await this.#printersOf(pools);
    const now = this.#deps.clock.now();
    await this.#markMembers(pools, printers, now);
    const jobs = await routing.queuedJobsOf(pools, JOBS_PER_ROUND);
    const queued = await routing.unfinishedCounts([...printers.values()]);
    const byId = new Map(pools.map((p) => [p.id, p]));
    const applied: Array<Promise<{ failover: boolean; changed: boolean }>> = [];
    const waiting: Array<{ orgId: string; id: string; detail: string }> = [];
    for (const job of jobs) {
      const pool = byId.get(job.poolId);
      if (!pool) continue;
      const due = job.printerId === null || this.#failoverDue(pool, job, now);
      if (!due) continue;
      const members = pool.printerIds
        .map((id) => printers.get(orgKey(pool.orgId, id)))
        .filter((p): p is Printer => p !== undefined && honours(p, job));
      const to = chooseMember(pool, members, queued, job.printerId ?? undefined);
      if (!to) {
        const detail = waitingForPool(pool);
        if (job.printerId === null && job.statusDetail !== detail) {
          waiting.push({ orgId: job.orgId, id: job.id, detail });
        }
        continue;
      }
      queued.set(to.id, (queued.get(to.id) ?? 0) + 1);
      if (job.printerId) queued.set(job.printerId, (queued.get(job.printerId) ?? 1) - 1);
      applied.push(this.#route(job, to));
    }
    await routing.setWaiting(waiting);
    const outcomes = await Promise.all(applied);
    const changed = outcomes.filter((o) => o.changed);
    return {
      routed: changed.filter((o) => !o.failover).length,
      failedOver: changed.filter((o) => o.failover).length,
    };
  }

  /**
   * Pool jobs made while their pool was deleted have no member to wait for: they say so, and wait
   * for a move or a cancel (a deletion is refused while the pool has jobs waiting, but a job made
   * at that very moment can slip past it).
   */
  async #markOrphans(): Promise<void> {
    const { routing } = this.#deps;
    const orphans = await routing.orphans(JOBS_PER_ROUND);
    await routing.setWaiting(
      orphans
        .filter((j) => j.statusDetail !== POOL_DELETED)
        .map((j) => ({ orgId: j.orgId, id: j.id, detail: POOL_DELETED })),
    );
  }

  /**
   * Whether a routed job is to move: its printer left the pool, or has been unable to take jobs
   * for the pool's failover_after (0: never).
   */
  #failoverDue(pool: RoutingPoolState, job: QueuedPoolJob, now: Date): boolean {
    const member = pool.members.find((m) => m.printerId === job.printerId);
    if (!member) return true;
    if (pool.failoverAfter === 0 || member.unreadySince === null) return false;
    return now.getTime() - member.unreadySince.getTime() >= pool.failoverAfter * 1000;
  }

  async #route(job: QueuedPoolJob, to: Printer): Promise<{ failover: boolean; changed: boolean }> {
    const failover = job.printerId !== null;
    try {
      const { changed } = await this.#deps.transitions.apply(
        job.orgId,
        job.id,
        failover ? 'failover' : 'route',
        {
          actor: 'system',
          route: {
            printerId: to.id,
            stationId: to.stationId,
            region: to.region,
            from: job.printerId,
          },
        },
      );
      if (changed && failover) {
        this.#deps.logger.info(
          { jobId: job.id, from: job.printerId, to: to.id },
          'pool job moved to another member',
        );
      }
      return { failover, changed };
    } catch (err) {
      this.#deps.logger.warn(
        { err, jobId: job.id },
        'could not route a pool job; the next round tries again',
      );
      return { failover, changed: false };
    }
  }

  /** The members' printers as the stations service has them now, by organization and id. */
  async #printersOf(pools: RoutingPoolState[]): Promise<Map<string, Printer>> {
    const wanted = pools.flatMap((p) =>
      p.printerIds.map((printerId) => ({ orgId: p.orgId, printerId })),
    );
    const found = new Map<string, Printer>();
    for (let i = 0; i < wanted.length; i += PRINTERS_PER_CALL) {
      const { items } = await this.#deps.stations.printersOf({
        printers: wanted.slice(i, i + PRINTERS_PER_CALL),
        stations: [],
      });
      for (const p of items) found.set(orgKey(p.orgId, p.id), p);
    }
    return found;
  }

  /**
   * Records each member that has become unable to take jobs (from now) or able again, in the
   * pools' state as well as the database's.
   */
  async #markMembers(
    pools: RoutingPoolState[],
    printers: Map<string, Printer>,
    now: Date,
  ): Promise<void> {
    const changes: Array<{ poolId: string; printerId: string; since: Date | null }> = [];
    for (const pool of pools) {
      for (const member of pool.members) {
        const printer = printers.get(orgKey(pool.orgId, member.printerId));
        const able = printer !== undefined && canTakeJobs(printer);
        if (able === (member.unreadySince === null)) continue;
        member.unreadySince = able ? null : now;
        changes.push({ poolId: pool.id, printerId: member.printerId, since: member.unreadySince });
      }
    }
    await this.#deps.routing.markMembers(changes);
  }
}
