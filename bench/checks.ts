/**
 * What the harness asks Spool's database and streams directly: whether Spool has caught up (no
 * outbox rows, consumers drained, no pending deliveries) before a run starts, and whether every
 * job a run made is durable (printed in the database, its events and reports in the streams).
 */
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { epochMs, sleep } from './clock.js';

const OUTBOXES = ['accounts_outbox', 'jobs_outbox', 'stations_outbox', 'webhooks_outbox'];
const CONSUMERS: Array<[string, string]> = [
  ['REPORTS', 'jobs-reports'],
  ['EVENTS', 'webhooks-fanout'],
];

export interface DbCounters {
  commits: number;
  rollbacks: number;
  inserted: number;
  updated: number;
  deleted: number;
  fetched: number;
}

/** Database work per job between two readings of the counters. */
export function perJob(before: DbCounters, after: DbCounters, jobs: number): DbCounters {
  const per = (k: keyof DbCounters) =>
    Math.round(((after[k] - before[k]) / Math.max(1, jobs)) * 100) / 100;
  return {
    commits: per('commits'),
    rollbacks: per('rollbacks'),
    inserted: per('inserted'),
    updated: per('updated'),
    deleted: per('deleted'),
    fetched: per('fetched'),
  };
}

export class Checks {
  readonly pool: pg.Pool;
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;

  readonly #log: (line: string) => void;
  #attemptsSeenUntil = new Date(0);

  private constructor(
    pool: pg.Pool,
    nc: NatsConnection,
    jsm: JetStreamManager,
    log: (line: string) => void,
  ) {
    this.pool = pool;
    this.nc = nc;
    this.jsm = jsm;
    this.#log = log;
  }

  static async open(
    databaseUrl: string,
    natsUrl: string,
    log: (line: string) => void,
  ): Promise<Checks> {
    // The harness only counts what Spool has left to do; such reads need no serializability, and
    // under SERIALIZABLE they could lose a conflict with Spool's own writes and end the run.
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      max: 2,
      options: '-c default_transaction_isolation=read\\ committed',
    });
    // An idle connection the server ended (PostgreSQL stopping under a harness told to stop) is
    // dropped by the pool; unheard, its error would end the harness before it cleans up.
    pool.on('error', () => {});
    const nc = await connect({ servers: natsUrl.split(','), name: 'spool-bench-checks' });
    return new Checks(pool, nc, await jetstreamManager(nc), log);
  }

  /** Work Spool still has to do, by kind: outbox rows, unhandled messages, unsent deliveries. */
  async backlog(): Promise<Record<string, number>> {
    const parts: Record<string, number> = {};
    for (const table of OUTBOXES) {
      const { rows } = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
      parts[table] = Number(rows[0]?.n ?? 0);
    }
    const { rows } = await this.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'pending'",
    );
    parts['pending deliveries'] = Number(rows[0]?.n ?? 0);
    for (const [stream, durable] of CONSUMERS) {
      try {
        const info = await this.jsm.consumers.info(stream, durable);
        parts[durable] = info.num_pending + info.num_ack_pending;
      } catch {
        // not created yet: nothing pending
      }
    }
    return parts;
  }

  /** Rows in one outbox table. */
  async outbox(table: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Waits until Spool has no work left (at most `timeoutMs`), so that a run does not pay for the
   * one before; returns how long that took and what was left.
   */
  async quiesce(timeoutMs = 60_000): Promise<{ ms: number; left: Record<string, number> }> {
    const started = epochMs();
    for (;;) {
      const parts = await this.backlog();
      const left = Object.fromEntries(Object.entries(parts).filter(([, n]) => n > 0));
      const ms = epochMs() - started;
      const done = Object.keys(left).length === 0;
      if (done || ms > timeoutMs) {
        const failed = await this.failedAttempts();
        if (Object.keys(failed).length > 0) {
          this.#log(`webhook attempts that failed meanwhile: ${JSON.stringify(failed)}`);
        }
        if (!done)
          this.#log(`Spool still busy after ${Math.round(ms)} ms: ${JSON.stringify(left)}`);
        else if (ms > 5_000) this.#log(`waited ${(ms / 1000).toFixed(1)} s for Spool to catch up`);
        return { ms, left };
      }
      await sleep(50);
    }
  }

  /** Webhook attempts that did not succeed, by error, since the last call (for the log). */
  async failedAttempts(): Promise<Record<string, number>> {
    const { rows } = await this.pool.query<{ error: string; n: string; at: Date }>(
      `SELECT error, count(*) AS n, max(started_at) AS at FROM webhook_attempts
       WHERE outcome NOT IN ('succeeded', 'in_flight') AND started_at > $1 GROUP BY error`,
      [this.#attemptsSeenUntil],
    );
    for (const row of rows) {
      if (row.at > this.#attemptsSeenUntil) this.#attemptsSeenUntil = row.at;
    }
    return Object.fromEntries(rows.map((r) => [r.error || '(none)', Number(r.n)]));
  }

  /** How many of `ids` are `printed` in the database. */
  async printedInDb(ids: string[]): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'printed'",
      [ids],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Messages stored in `stream` under subjects matching `filter`. */
  async stored(stream: string, filter: string): Promise<number> {
    const info = await this.jsm.streams.info(stream, { subjects_filter: filter });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  }

  /**
   * The database's work counters (pg_stat_database): transactions committed (a statement outside
   * a transaction counts as one) and rows written and read. PostgreSQL publishes them within a
   * second or so, so read them after Spool has gone quiet.
   */
  async dbCounters(): Promise<DbCounters> {
    await this.pool.query('SELECT pg_stat_force_next_flush()').catch(() => undefined);
    const { rows } = await this.pool.query<Record<keyof DbCounters, string>>(
      `SELECT xact_commit AS commits, xact_rollback AS rollbacks, tup_inserted AS inserted,
         tup_updated AS updated, tup_deleted AS deleted, tup_fetched AS fetched
       FROM pg_stat_database WHERE datname = current_database()`,
    );
    const row = rows[0];
    return {
      commits: Number(row?.commits ?? 0),
      rollbacks: Number(row?.rollbacks ?? 0),
      inserted: Number(row?.inserted ?? 0),
      updated: Number(row?.updated ?? 0),
      deleted: Number(row?.deleted ?? 0),
      fetched: Number(row?.fetched ?? 0),
    };
  }

  async serverVersions(): Promise<{ postgres: string; nats: string }> {
    const { rows } = await this.pool.query<{ server_version: string }>('SHOW server_version');
    return { postgres: rows[0]?.server_version ?? '?', nats: this.nc.info?.version ?? '?' };
  }

  async close(): Promise<void> {
    await this.nc.close();
    await this.pool.end();
  }
}
