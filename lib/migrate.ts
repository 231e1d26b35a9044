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

/**
 * What PostgreSQL answers a `CREATE … IF NOT EXISTS` (or `ADD COLUMN IF NOT EXISTS`) racing the
 * same statement of another migration run, as when every region's release migrates one database
 * at once: the loser's catalog insert collides (23505 on pg_type or pg_class, 42P07, 42710,
 * 42701), or, on CockroachDB, its transaction must restart (40001). Run again once the winner has
 * committed, the statement finds the object there and does nothing.
 */
const RACE_CODES = new Set(['23505', '42P07', '42710', '42701', '40001']);

async function runRacing(pool: pg.Pool, statement: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await pool.query(statement);
      return;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (attempt >= 5 || typeof code !== 'string' || !RACE_CODES.has(code)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200 * attempt));
    }
  }
}

export async function migrate(
  pool: pg.Pool,
  sets: MigrationSet[],
  logger?: Logger,
): Promise<string[]> {
  await runRacing(
    pool,
    `CREATE TABLE IF NOT EXISTS schema_migrations (
    service TEXT NOT NULL,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (service, name)
  )`,
  );
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
    for (const file of await migrationFiles(set)) {
      if (done.has(file)) continue;
      const sql = await readFile(join(set.dir, file), 'utf8');
      for (const statement of splitStatements(sql)) await runRacing(pool, statement);
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

/**
 * The migrations of `sets` not applied to the database yet, as `service/file`; every one of them
 * when it has no `schema_migrations` table (it was never migrated).
 */
export async function pendingMigrations(pool: pg.Pool, sets: MigrationSet[]): Promise<string[]> {
  let done: Set<string>;
  try {
    const { rows } = await pool.query<{ service: string; name: string }>(
      'SELECT service, name FROM schema_migrations',
    );
    done = new Set(rows.map((r) => `${r.service}/${r.name}`));
  } catch (err) {
    if ((err as { code?: unknown }).code !== '42P01') throw err;
    done = new Set();
  }
  const pending: string[] = [];
  for (const set of sets) {
    for (const file of await migrationFiles(set)) {
      if (!done.has(`${set.service}/${file}`)) pending.push(`${set.service}/${file}`);
    }
  }
  return pending;
}

/** A set's migration files, in the order they apply. */
async function migrationFiles(set: MigrationSet): Promise<string[]> {
  return (await readdir(set.dir)).filter((f) => f.endsWith('.sql')).sort();
}
