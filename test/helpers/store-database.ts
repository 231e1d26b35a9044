/**
 * A fresh database holding the given services' tables, and a pool on it: for tests (and
 * benchmarks) of a service's store against a real PostgreSQL without the rest of Spool.
 */
import { createPool, type Pool } from '../../lib/db.js';
import { type MigrationSet, migrate } from '../../lib/migrate.js';
import { createTestDatabase } from './postgres.js';

export interface StoreDatabase {
  pool: Pool;
  /** Ends the pool and drops the database. */
  close(): Promise<void>;
}

export async function createStoreDatabase(
  sets: MigrationSet[],
  poolSize = 4,
): Promise<StoreDatabase> {
  const db = await createTestDatabase();
  const pool = createPool({ url: db.url, max: poolSize });
  try {
    await migrate(pool, sets);
  } catch (err) {
    await pool.end();
    await db.drop();
    throw err;
  }
  return {
    pool,
    async close() {
      await pool.end();
      await db.drop();
    },
  };
}
