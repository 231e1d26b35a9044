/**
 * The migration runner. Each service owns an ordered folder of plain SQL files; `spool migrate`
 * applies the ones not yet recorded. Statements run one at a time outside explicit transactions,
 * as CockroachDB requires for schema changes, and every statement is idempotent (`IF NOT EXISTS`),
 * so a run that stopped half way is simply run again.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import type { Logger } from './logger.js';

export interface MigrationSet {
  /** The owning service; migrations are recorded per service. */
  service: string;
  /** Folder of `NNN_name.sql` files, applied in name order. */
  dir: string;
}

/**
 * Splits a migration file into statements. Statements end with `;` at the end of a line, which our
 * files keep to; this is not a general SQL parser.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  for (const line of sql.split('\n')) {
    if (/^\s*--/.test(line)) continue;
    current.push(line);
    if (/;\s*$/.test(line)) {
      const statement = current.join('\n').trim().replace(/;$/, '');
      if (statement) statements.push(statement);
      current = [];
    }
  }
  const rest = current.join('\n').trim();
  if (rest) statements.push(rest);
  return statements;
}

export async function migrate(
  pool: pg.Pool,
  sets: MigrationSet[],
  logger?: Logger,
): Promise<string[]> {
  await pool.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    service TEXT NOT NULL,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (service, name)
  )`);
  const applied: string[] = [];
  for (const set of sets) {
    const done = new Set(
      (
        await pool.query<{ name: string }>(
          'SELECT name FROM schema_migrations WHERE service = $1',
          [set.service],
        )
      ).rows.map((r) => r.name),
    );
    const files = (await readdir(set.dir)).filter((f) => f.endsWith('.sql')).sort();
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(join(set.dir, file), 'utf8');
      for (const statement of splitStatements(sql)) await pool.query(statement);
      await pool.query(
        'INSERT INTO schema_migrations (service, name) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [set.service, file],
      );
      logger?.info({ service: set.service, migration: file }, 'applied migration');
      applied.push(`${set.service}/${file}`);
    }
  }
  return applied;
}
