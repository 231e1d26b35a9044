/**
 * An organization's pools of printers (docs/jobs.md, "Pools and routing"): create, list, read,
 * change and delete them. Routing reads the same tables in routing-store.ts.
 */
import type pg from 'pg';
import type { Pool } from '../../gen/spool/v1/jobs.js';
import type { Clock } from '../../lib/clock.js';

export interface PoolStore {
  createPool(pool: Omit<Pool, 'id' | 'createdAt' | 'updatedAt'>): Promise<Pool>;
  listPools(
    orgId: string,
    limit: number,
    cursor: string,
  ): Promise<{ items: Pool[]; nextCursor: string }>;
  getPool(orgId: string, poolId: string): Promise<Pool | undefined>;
  updatePool(pool: Omit<Pool, 'createdAt' | 'updatedAt'>): Promise<Pool>;
  deletePool(orgId: string, poolId: string): Promise<void>;
}

export function createPoolStore(_pool: pg.Pool, _clock: Clock): PoolStore {
  const todo = (): never => {
    throw new Error('pools are not built yet');
  };
  return {
    createPool: async () => todo(),
    listPools: async () => todo(),
    getPool: async () => todo(),
    updatePool: async () => todo(),
    deletePool: async () => todo(),
  };
}
