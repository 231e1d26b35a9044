/**
 * An organization's pools of printers (docs/jobs.md, "Pools and routing"): create, list, read,
 * change and delete them, and take deleted printers out of them. A pool is a row of `pools` and
 * its members, in order, rows of `pool_members` (`position` is the place in `printer_ids`).
 * Routing reads the same tables in routing-store.ts and alone writes `unready_since`. Each change
 * queues its event for the event stream (`pool.created`, `pool.updated`, `pool.deleted`) in its own
 * transaction.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Pool } from '../../gen/spool/v1/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, notFound } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { enqueue, type OutboxRow } from '../../lib/outbox.js';
import { listOldestFirst } from '../../lib/paging.js';
import { poolView } from '../../lib/resource-views.js';
import { OUTBOX_TABLE } from './job-rows.js';

// Named, not `*`: statements are prepared (lib/db.ts), and a prepared `*` fails once a migration
// adds a column.
const POOL_COLUMNS = 'id, org_id, name, strategy, failover_after, created_at, updated_at';

interface PoolRow {
  id: string;
  org_id: string;
  name: string;
  strategy: string;
  failover_after: number;
  created_at: Date;
  updated_at: Date;
}

/** What a pool is made of; its id and times are the store's. */
export type PoolFields = Pick<Pool, 'orgId' | 'name' | 'printerIds' | 'strategy' | 'failoverAfter'>;

/** The statuses of a job not yet sent: a pool job in one of them may still wait for a member. */
const UNSENT_STATUSES = ['queued', 'scheduled', 'held'];

export interface PoolStore {
  createPool(pool: PoolFields): Promise<Pool>;
  /** The organization's pool with its members in order, or `undefined` when it has none of that id. */
  getPool(orgId: string, poolId: string): Promise<Pool | undefined>;
  /** A page of the organization's pools, oldest first. */
  listPools(
    orgId: string,
    limit: number,
    cursor: string,
  ): Promise<{ items: Pool[]; nextCursor: string }>;
  /** Sets every field of the pool; members that stay keep what routing knows of them. */
  updatePool(pool: PoolFields & { id: string }): Promise<Pool>;
  /**
   * Deletes the pool and its members. Refused (409) while jobs of the pool wait for a member;
   * jobs already routed keep their printer.
   */
  deletePool(orgId: string, poolId: string): Promise<void>;
  /**
   * Takes the printers out of every pool of the organization, and queues `pool.updated` for each
   * pool that had one; answers the memberships ended.
   */
  leavePools(orgId: string, printerIds: string[]): Promise<number>;
}

function toPool(row: PoolRow, printerIds: string[]): Pool {
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    printerIds,
    strategy: row.strategy,
    failoverAfter: row.failover_after,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * A change to a pool, for the event stream: `pool.created`, `pool.updated` or `pool.deleted` with
 * `{pool}` as the API shows it.
 */
export function poolEvent(
  type: 'pool.created' | 'pool.updated' | 'pool.deleted',
  pool: Pool,
  at: Date,
) {
  return eventMessage(pool.orgId, type, { pool: poolView(pool) }, at);
}

/** The members of the organization's pools `poolIds`, each pool's in order. */
async function membersOf(
  db: Pick<pg.Pool, 'query'>,
  orgId: string,
  poolIds: string[],
): Promise<Map<string, string[]>> {
  const members = new Map<string, string[]>(poolIds.map((id) => [id, []]));
  if (poolIds.length === 0) return members;
  const { rows } = await db.query<{ pool_id: string; printer_id: string }>(
    `SELECT pool_id, printer_id FROM pool_members
     WHERE org_id = $1 AND pool_id = ANY($2::UUID[]) ORDER BY pool_id, position`,
    [orgId, poolIds],
  );
  for (const r of rows) members.get(r.pool_id)?.push(r.printer_id);
  return members;
}

/** Makes the pool's members `printerIds`, in that order; those that stay keep `unready_since`. */
async function setMembers(
  tx: pg.PoolClient,
  orgId: string,
  poolId: string,
  printerIds: string[],
): Promise<void> {
  await tx.query(
    `DELETE FROM pool_members
     WHERE org_id = $1 AND pool_id = $2 AND NOT (printer_id = ANY($3::UUID[]))`,
    [orgId, poolId, printerIds],
  );
  await tx.query(
    `INSERT INTO pool_members (pool_id, org_id, printer_id, position)
     SELECT $1, $2, m.printer_id, (m.n - 1)::INT4
       FROM unnest($3::UUID[]) WITH ORDINALITY AS m (printer_id, n)
     ON CONFLICT (pool_id, printer_id) DO UPDATE SET position = excluded.position`,
    [poolId, orgId, printerIds],
  );
}

/** @param committed takes the outbox rows of each change once committed. */
export function createPoolStore(
  pool: pg.Pool,
  clock: Clock,
  committed: (rows: OutboxRow[]) => void,
): PoolStore {
  /** Runs a change of pools and hands on the events it queued once it has committed. */
  async function change<T>(
    fn: (tx: pg.PoolClient) => Promise<{ result: T; outbox: OutboxRow[] }>,
  ): Promise<T> {
    const { result, outbox } = await withTx(pool, fn);
    committed(outbox);
    return result;
  }

  return {
    async createPool(p) {
      return change(async (tx) => {
        const now = clock.now();
        const { rows } = await tx.query<PoolRow>(
          `INSERT INTO pools (id, org_id, name, strategy, failover_after, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${POOL_COLUMNS}`,
          [randomUUID(), p.orgId, p.name, p.strategy, p.failoverAfter, now],
        );
        const row = rows[0] as PoolRow;
        await setMembers(tx, p.orgId, row.id, p.printerIds);
        const created = toPool(row, p.printerIds);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [poolEvent('pool.created', created, now)]);
        return { result: created, outbox };
      });
    },

    async getPool(orgId, poolId) {
      const { rows } = await pool.query<PoolRow>(
        `SELECT ${POOL_COLUMNS} FROM pools WHERE org_id = $1 AND id = $2`,
        [orgId, poolId],
      );
      const row = rows[0];
      if (!row) return undefined;
      const members = await membersOf(pool, orgId, [row.id]);
      return toPool(row, members.get(row.id) ?? []);
    },

    async listPools(orgId, limit, cursor) {
      const { items, nextCursor } = await listOldestFirst<PoolRow>(
        pool,
        { select: `SELECT ${POOL_COLUMNS} FROM pools`, where: 'org_id = $1', params: [orgId] },
        limit,
        cursor,
      );
      const members = await membersOf(
        pool,
        orgId,
        items.map((r) => r.id),
      );
      return { items: items.map((r) => toPool(r, members.get(r.id) ?? [])), nextCursor };
    },

    async updatePool(p) {
      return change(async (tx) => {
        const now = clock.now();
        const { rows } = await tx.query<PoolRow>(
          `UPDATE pools SET name = $3, strategy = $4, failover_after = $5, updated_at = $6
           WHERE org_id = $1 AND id = $2 RETURNING ${POOL_COLUMNS}`,
          [p.orgId, p.id, p.name, p.strategy, p.failoverAfter, now],
        );
        const row = rows[0];
        if (!row) throw notFound('no such pool');
        await setMembers(tx, p.orgId, row.id, p.printerIds);
        const updated = toPool(row, p.printerIds);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [poolEvent('pool.updated', updated, now)]);
        return { result: updated, outbox };
      });
    },

    async deletePool(orgId, poolId) {
      await change(async (tx) => {
        const found = await tx.query<PoolRow>(
          `SELECT ${POOL_COLUMNS} FROM pools WHERE org_id = $1 AND id = $2`,
          [orgId, poolId],
        );
        const row = found.rows[0];
        if (!row) throw notFound('no such pool');
        const { rows } = await tx.query<{ n: string }>(
          `SELECT count(*) AS n FROM jobs
           WHERE org_id = $1 AND pool_id = $2 AND status = ANY($3) AND printer_id IS NULL`,
          [orgId, poolId, UNSENT_STATUSES],
        );
        const waiting = Number(rows[0]?.n ?? 0);
        if (waiting > 0) {
          throw conflict(
            `${waiting === 1 ? '1 job of this pool waits' : `${waiting} jobs of this pool wait`} for a member: cancel ${waiting === 1 ? 'it' : 'them'} or move ${waiting === 1 ? 'it' : 'them'} to a printer first`,
          );
        }
        const members = await membersOf(tx, orgId, [poolId]);
        await tx.query('DELETE FROM pool_members WHERE org_id = $1 AND pool_id = $2', [
          orgId,
          poolId,
        ]);
        await tx.query('DELETE FROM pools WHERE org_id = $1 AND id = $2', [orgId, poolId]);
        const deleted = toPool(row, members.get(poolId) ?? []);
        const outbox = await enqueue(tx, OUTBOX_TABLE, [
          poolEvent('pool.deleted', deleted, clock.now()),
        ]);
        return { result: undefined, outbox };
      });
    },

    async leavePools(orgId, printerIds) {
      if (printerIds.length === 0) return 0;
      return change(async (tx) => {
        const left = await tx.query<{ pool_id: string }>(
          `DELETE FROM pool_members WHERE org_id = $1 AND printer_id = ANY($2::UUID[])
           RETURNING pool_id`,
          [orgId, printerIds],
        );
        const poolIds = [...new Set(left.rows.map((r) => r.pool_id))];
        if (poolIds.length === 0) return { result: 0, outbox: [] };
        // Their members changed, so they were updated: the pools as they are now, without the
        // printers, for their `pool.updated`, oldest first.
        const now = clock.now();
        const { rows } = await tx.query<PoolRow>(
          `UPDATE pools SET updated_at = $3 WHERE org_id = $1 AND id = ANY($2::UUID[])
           RETURNING ${POOL_COLUMNS}`,
          [orgId, poolIds, now],
        );
        rows.sort(
          (a, b) =>
            a.created_at.getTime() - b.created_at.getTime() ||
            (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
        );
        const members = await membersOf(tx, orgId, poolIds);
        const outbox = await enqueue(
          tx,
          OUTBOX_TABLE,
          rows.map((r) => poolEvent('pool.updated', toPool(r, members.get(r.id) ?? []), now)),
        );
        return { result: left.rowCount ?? 0, outbox };
      });
    },
  };
}
