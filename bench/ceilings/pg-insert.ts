/**
 * Ceiling: a SERIALIZABLE transaction holding one INSERT of a job-sized row, on the PostgreSQL
 * Spool uses, opened and committed the way `withTx` (lib/db.ts) does: take a pooled connection,
 * `BEGIN ISOLATION LEVEL SERIALIZABLE`, `INSERT`, `COMMIT`, release. Creating a job costs at least
 * this, so the ingest rate is judged against it.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { epochMs } from '../clock.js';

export interface RateResult {
  ops: number;
  errors: number;
  elapsedMs: number;
  /** Operations a second. */
  rate: number;
  latencies: number[];
}

/** The result of a run that made `latencies.length` operations in `elapsedMs`. */
export function rateResult(latencies: number[], errors: number, elapsedMs: number): RateResult {
  return {
    ops: latencies.length,
    errors,
    elapsedMs,
    rate: latencies.length / (elapsedMs / 1000),
    latencies,
  };
}

const ROW = JSON.stringify({
  copies: 1,
  duplex: 'one_sided',
  title: 'bench',
  reference: 'bench-0000',
  content_type: 'text/plain',
  sha256: '0'.repeat(64),
});

export async function pgInsertRate(p: {
  databaseUrl: string;
  concurrency: number;
  durationMs: number;
}): Promise<RateResult> {
  const pool = new pg.Pool({ connectionString: p.databaseUrl, max: p.concurrency });
  await pool.query(
    `CREATE TABLE IF NOT EXISTS bench_insert (
       id UUID PRIMARY KEY, org_id UUID NOT NULL, payload JSONB NOT NULL,
       created_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
  );
  const org = randomUUID();
  const latencies: number[] = [];
  let errors = 0;
  // Open the connections before the clock starts, as Spool's pool is warm under load.
  await Promise.all(
    Array.from({ length: p.concurrency }, async () => (await pool.connect()).release()),
  );
  const started = epochMs();
  const end = started + p.durationMs;
  await Promise.all(
    Array.from({ length: p.concurrency }, async () => {
      while (epochMs() < end) {
        const t0 = epochMs();
        const client = await pool.connect();
        try {
          await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
          await client.query('INSERT INTO bench_insert (id, org_id, payload) VALUES ($1, $2, $3)', [
            randomUUID(),
            org,
            ROW,
          ]);
          await client.query('COMMIT');
          latencies.push(epochMs() - t0);
        } catch {
          errors++;
          await client.query('ROLLBACK').catch(() => undefined);
        } finally {
          client.release();
        }
      }
    }),
  );
  const elapsedMs = epochMs() - started;
  await pool.end();
  return rateResult(latencies, errors, elapsedMs);
}
