/**
 * What routing reads and writes of the pools tables and the jobs table: a pool with its members,
 * the pools with queued jobs, those jobs, the unfinished jobs per printer, and when each member
 * last became unable to take jobs. The pools themselves are kept by pool-store.ts.
 */
import DataLoader from 'dataloader';
import type pg from 'pg';
import type { PrintOptions } from '../../gen/spool/v1/stations.js';
import { isUuid, orgKey } from '../../lib/ids.js';
import type { RoutingPool } from './routing.js';

/** A member as the router reads it. */
export interface MemberState {
  printerId: string;
  /** When the router first saw it unable to take jobs, still so; null while it can. */
  unreadySince: Date | null;
}

export interface RoutingPoolState extends RoutingPool {
  members: MemberState[];
}

/** A queued pool job, as the router needs it. */
export interface QueuedPoolJob {
  id: string;
  orgId: string;
  poolId: string;
  /** null while it waits for a member. */
  printerId: string | null;
  options: PrintOptions;
  contentType: string;
  statusDetail: string;
}

/** Printers whose unfinished jobs are counted, each with its organization and station. */
type Counted = Array<{ id: string; orgId: string; stationId: string }>;

export interface RoutingStore {
  /** The organization's pool, with its members in order; undefined if there is none. */
  poolOf(orgId: string, poolId: string): Promise<RoutingPool | undefined>;
  /**
   * The pools, with their members, that have queued jobs or a member marked unable to take jobs
   * (whose recovery must be seen even while the pool has nothing queued), at most `limit`.
   */
  poolsToWatch(limit: number): Promise<RoutingPoolState[]>;
  /** The queued jobs of `pools`, highest priority and oldest first (at most `limit`). */
  queuedJobsOf(pools: RoutingPool[], limit: number): Promise<QueuedPoolJob[]>;
  /**
   * How many queued and sent jobs each printer has, by printer id. Calls in the same turn share
   * one read and one map: a caller that routes a job adds it to its printer's count there, so the
   * jobs of one `CreateJobs` call spread as if each saw the ones before it.
   */
  unfinishedCounts(printers: Counted): Promise<Map<string, number>>;
  /** Records members becoming unable (`since`) or able again (null) to take jobs. */
  markMembers(
    changes: Array<{ poolId: string; printerId: string; since: Date | null }>,
  ): Promise<void>;
  /**
   * Queued pool jobs still waiting for a member whose pool no longer exists (created as it was
   * deleted), at most `limit`, with their detail.
   */
  orphans(limit: number): Promise<Array<{ orgId: string; id: string; statusDetail: string }>>;
  /** Sets the `waiting: ` detail of pool jobs no member can take now. */
  setWaiting(jobs: Array<{ orgId: string; id: string; detail: string }>): Promise<void>;
}

interface PoolMemberRow {
  id: string;
  org_id: string;
  name: string;
  strategy: string;
  failover_after: number;
  printer_id: string | null;
  unready_since: Date | null;
}

/** Folds rows of pools joined with their members (in order) into pools. */
function poolsFrom(rows: PoolMemberRow[]): RoutingPoolState[] {
  const pools = new Map<string, RoutingPoolState>();
  for (const r of rows) {
    let pool = pools.get(r.id);
    if (!pool) {
      pool = {
        id: r.id,
        orgId: r.org_id,
        name: r.name,
        strategy: r.strategy,
        failoverAfter: r.failover_after,
        printerIds: [],
        members: [],
      };
      pools.set(r.id, pool);
    }
    if (r.printer_id) {
      pool.printerIds.push(r.printer_id);
      pool.members.push({ printerId: r.printer_id, unreadySince: r.unready_since });
    }
  }
  return [...pools.values()];
}

const POOL_MEMBERS = `SELECT p.id, p.org_id, p.name, p.strategy, p.failover_after, m.printer_id,
    m.unready_since
  FROM pools p LEFT JOIN pool_members m ON m.pool_id = p.id`;

interface PoolWanted {
  orgId: string;
  poolId: string;
}

export function createRoutingStore(pool: pg.Pool): RoutingStore {
  // The pools and counts asked for in one turn (the creations of one `CreateJobs` call, a round
  // of the router) are read in one query each; nothing is kept past the turn.
  const pools = new DataLoader<PoolWanted, RoutingPool | undefined>(
    async (wanted) => {
      const { rows } = await pool.query<PoolMemberRow>(
        `${POOL_MEMBERS}
         JOIN unnest($1::UUID[], $2::UUID[]) AS k (org_id, id) ON p.org_id = k.org_id AND p.id = k.id
         ORDER BY p.id, m.position`,
        [wanted.map((w) => w.orgId), wanted.map((w) => w.poolId)],
      );
      const found = new Map(poolsFrom(rows).map((p) => [orgKey(p.orgId, p.id), p]));
      return wanted.map((w) => found.get(orgKey(w.orgId, w.poolId)));
    },
    { cache: false },
  );
  const counts = new DataLoader<Counted, Map<string, number>>(
    async (asked) => {
      const printers = asked.flat();
      // Found through the (station_id, status) index every dispatch uses: a station has few
      // printers, so no index of its own is kept up for this.
      const { rows } = await pool.query<{ printer_id: string; n: string }>(
        `SELECT printer_id, count(*) AS n FROM jobs
         WHERE station_id = ANY($1::UUID[]) AND status IN ('queued', 'sent')
           AND printer_id = ANY($2::UUID[]) AND org_id = ANY($3::UUID[])
         GROUP BY printer_id`,
        [
          [...new Set(printers.map((p) => p.stationId))],
          [...new Set(printers.map((p) => p.id))],
          [...new Set(printers.map((p) => p.orgId))],
        ],
      );
      const shared = new Map(rows.map((r) => [r.printer_id, Number(r.n)]));
      return asked.map(() => shared);
    },
    { cache: false },
  );

  return {
    poolOf(orgId, poolId) {
      if (!isUuid(orgId) || !isUuid(poolId)) return Promise.resolve(undefined);
      return pools.load({ orgId, poolId });
    },

    async poolsToWatch(limit) {
      const { rows } = await pool.query<PoolMemberRow>(
        `${POOL_MEMBERS}
         WHERE p.id IN (SELECT DISTINCT pool_id FROM jobs
                          WHERE status = 'queued' AND pool_id IS NOT NULL LIMIT $1)
            OR p.id IN (SELECT pool_id FROM pool_members WHERE unready_since IS NOT NULL LIMIT $1)
         ORDER BY p.id, m.position`,
        [limit],
      );
      return poolsFrom(rows);
    },

    async queuedJobsOf(pools, limit) {
      if (pools.length === 0) return [];
      const { rows } = await pool.query<{
        id: string;
        org_id: string;
        pool_id: string;
        printer_id: string | null;
        options: PrintOptions;
        content_type: string;
        status_detail: string;
      }>(
        `SELECT jobs.id, jobs.org_id, jobs.pool_id, jobs.printer_id, jobs.options,
           jobs.content_type, jobs.status_detail
         FROM unnest($1::UUID[], $2::UUID[]) AS p (org_id, id)
         JOIN jobs ON jobs.pool_id = p.id AND jobs.org_id = p.org_id
         WHERE jobs.status = 'queued'
         ORDER BY jobs.priority DESC, jobs.created_at, jobs.id LIMIT $3`,
        [pools.map((p) => p.orgId), pools.map((p) => p.id), limit],
      );
      return rows.map((r) => ({
        id: r.id,
        orgId: r.org_id,
        poolId: r.pool_id,
        printerId: r.printer_id,
        options: r.options,
        contentType: r.content_type,
        statusDetail: r.status_detail,
      }));
    },

    async unfinishedCounts(printers) {
      if (printers.length === 0) return new Map();
      return counts.load(printers);
    },

    async markMembers(changes) {
      if (changes.length === 0) return;
      await pool.query(
        `UPDATE pool_members SET unready_since = v.since
         FROM unnest($1::UUID[], $2::UUID[], $3::TIMESTAMPTZ[]) AS v (pool_id, printer_id, since)
         WHERE pool_members.pool_id = v.pool_id AND pool_members.printer_id = v.printer_id`,
        [
          changes.map((c) => c.poolId),
          changes.map((c) => c.printerId),
          changes.map((c) => c.since),
        ],
      );
    },

    async orphans(limit) {
      const { rows } = await pool.query<{ id: string; org_id: string; status_detail: string }>(
        `SELECT id, org_id, status_detail FROM jobs
         WHERE status = 'queued' AND pool_id IS NOT NULL AND printer_id IS NULL
           AND NOT EXISTS (SELECT 1 FROM pools WHERE pools.id = jobs.pool_id)
         LIMIT $1`,
        [limit],
      );
      return rows.map((r) => ({ orgId: r.org_id, id: r.id, statusDetail: r.status_detail }));
    },

    async setWaiting(jobs) {
      if (jobs.length === 0) return;
      // Only jobs still waiting for a member, and only a detail routing writes.
      await pool.query(
        `UPDATE jobs SET status_detail = v.detail
         FROM unnest($1::UUID[], $2::UUID[], $3::TEXT[]) AS v (org_id, id, detail)
         WHERE jobs.org_id = v.org_id AND jobs.id = v.id AND jobs.status = 'queued'
           AND jobs.printer_id IS NULL`,
        [jobs.map((j) => j.orgId), jobs.map((j) => j.id), jobs.map((j) => j.detail)],
      );
    },
  };
}
