/**
 * `--pg-statements FILE`: the private PostgreSQL loads `pg_stat_statements`, and when the run ends
 * the statements that took the most of the server's time (every database: Spool's, the production
 * scenario's and the ceilings') are written to FILE, one table row each. It is how a run's
 * database work is read statement by statement: which ones cost most in all, per call and per row.
 */
import { writeFile } from 'node:fs/promises';
import pg from 'pg';

/** The settings the server needs to count statements. */
export const PG_STATEMENTS_SETTINGS = [
  'shared_preload_libraries=pg_stat_statements',
  'pg_stat_statements.max=1000',
  'pg_stat_statements.track_planning=on',
];

/** Creates the extension in the database the statements are read from. */
export async function enableStatements(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT pg_stat_statements_reset()');
  } finally {
    await client.end();
  }
}

interface Row {
  db: string;
  calls: string;
  total_ms: number;
  plan_ms: number;
  plans: string;
  mean_ms: number;
  rows: string;
  query: string;
}

/** Writes the `top` statements by total execution and planning time to `file`, as Markdown. */
export async function writeStatements(databaseUrl: string, file: string, top = 40): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<Row>(
      `SELECT d.datname AS db, s.calls::text AS calls,
              s.total_exec_time + s.total_plan_time AS total_ms,
              s.total_plan_time AS plan_ms, s.plans::text AS plans,
              (s.total_exec_time + s.total_plan_time) / GREATEST(s.calls, 1) AS mean_ms,
              s.rows::text AS rows, s.query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        ORDER BY total_ms DESC LIMIT $1`,
      [top],
    );
    const all = await client.query<{ total_ms: number }>(
      'SELECT coalesce(sum(total_exec_time + total_plan_time), 0) AS total_ms FROM pg_stat_statements',
    );
    const sum = Number(all.rows[0]?.total_ms ?? 0);
    const cell = (q: string) => q.replace(/\s+/g, ' ').replace(/\|/g, '\\|').slice(0, 240);
    const lines = [
      `Statements by total time (execution and planning), ${sum.toFixed(0)} ms in all`,
      '',
      '| Database | Calls | Total ms | % | Mean ms | Plans | Planning ms | Rows | Statement |',
      '|---|---|---|---|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.db} | ${r.calls} | ${r.total_ms.toFixed(0)} | ${((100 * r.total_ms) / (sum || 1)).toFixed(1)} | ${r.mean_ms.toFixed(3)} | ${r.plans} | ${r.plan_ms.toFixed(0)} | ${r.rows} | ${cell(r.query)} |`,
      ),
    ];
    await writeFile(file, `${lines.join('\n')}\n`);
  } finally {
    await client.end();
  }
}
