/**
 * The transactional outbox (DESIGN §2). A state change and the messages it causes are written in one
 * transaction; the relay then publishes each row to JetStream with `Nats-Msg-Id` set to the row id,
 * so a row published twice (after a crash, or by two relays) is stored once, and deletes the row
 * after the publish is acknowledged. Each service has its own outbox table, created by its migrations
 * with the columns (id UUID PRIMARY KEY, subject TEXT, payload BYTEA, headers JSONB, created_at).
 *
 * A writer that keeps the rows it wrote hands them to {@link OutboxRelay.send} once its transaction
 * commits: they are published at once, many in flight, without being read back, and deleted in
 * batches. Rows nobody handed over (their writer died, or their publish failed) are found by the
 * relay's poll.
 */
import { randomUUID } from 'node:crypto';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { type BatchObservableCallback, metrics } from '@opentelemetry/api';
import type pg from 'pg';
import type { NatsConnection } from './bus.js';
import { FailureLog } from './failure-log.js';
import type { Logger } from './logger.js';
import { spoolMetrics } from './metrics.js';
import { columns, WriteBatch } from './sql.js';
import { StreamPublisher } from './stream-publisher.js';
import {
  contextFrom,
  injectHeaders,
  inSpan,
  natsAttributes,
  natsSpanName,
  SpanKind,
  traceCarrier,
  tracing,
} from './tracing.js';

/** How long a DELETE of published rows waits for more to take with it. */
const DELETE_LINGER_MS = 20;

/** How long a metrics collection waits for the outbox backlog read before going on without it. */
const BACKLOG_READ_MS = 1_000;

export interface OutboxMessage {
  subject: string;
  /** Encoded as JSON. */
  payload: unknown;
  headers?: Record<string, string>;
}

function checkTable(table: string): string {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`bad outbox table name ${table}`);
  return table;
}

/**
 * Adds messages to the outbox inside the caller's transaction. Each row keeps the active trace
 * context, so the relay's publish, whenever it happens, continues the trace that caused it.
 */
export async function enqueue(
  tx: pg.PoolClient,
  table: string,
  messages: OutboxMessage[],
): Promise<OutboxRow[]> {
  if (messages.length === 0) return [];
  const batch = new WriteBatch();
  const rows = addToOutbox(batch, table, messages);
  await tx.query(batch.text(), batch.values);
  return rows;
}

/** A row of an outbox table, as written and as published. */
export interface OutboxRow {
  id: string;
  subject: string;
  payload: Buffer;
  headers: Record<string, string>;
}

/**
 * Adds the INSERT of `messages` to a batch of writes, as {@link enqueue} does on its own, and
 * answers the rows it writes, for {@link OutboxRelay.send} once the transaction has committed.
 */
export function addToOutbox(
  batch: WriteBatch,
  table: string,
  messages: OutboxMessage[],
): OutboxRow[] {
  if (messages.length === 0) return [];
  const trace = traceCarrier();
  const rows = messages.map((m) => ({
    id: randomUUID(),
    subject: m.subject,
    payload: Buffer.from(JSON.stringify(m.payload)),
    headers: { ...trace, ...m.headers },
  }));
  const values = columns(rows, (r) => [r.id, r.subject, r.payload, JSON.stringify(r.headers)]);
  batch.add(
    `INSERT INTO ${checkTable(table)} (id, subject, payload, headers)
     ${batch.rows(values, ['UUID', 'TEXT', 'BYTEA', 'JSONB'])}`,
  );
  return rows;
}

export interface RelayOptions {
  pool: pg.Pool;
  nc: NatsConnection;
  table: string;
  logger: Logger;
  /** Rows read and published at once. */
  batchSize?: number;
  /** How often to look for rows nobody kicked the relay for (written by a process that died). */
  pollMs?: number;
  /**
   * How old a row must be for the poll to take it. Rows younger than this may still be on their
   * way through {@link OutboxRelay.send} in the process that wrote them.
   */
  handOffMs?: number;
}

/**
 * Publishes outbox rows. Writers call {@link OutboxRelay.kick} after committing so messages leave at
 * once; the poll picks up whatever a crashed process left behind.
 */
export class OutboxRelay {
  readonly #options: Required<RelayOptions>;
  readonly #publisher: StreamPublisher;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  /** The round asked for while one ran, and the smallest row age any of those asks wanted. */
  #next: Promise<void> | undefined;
  #nextMinAgeMs = Number.POSITIVE_INFINITY;
  #stopped = false;
  /** Rows handed over and being published now. */
  readonly #sending = new Set<Promise<void>>();
  /** Ids published and not yet deleted; one DELETE at a time takes all of them. */
  #published: string[] = [];
  #deleting: Promise<void> | undefined;
  /** Ends the wait before the next DELETE at once (when stopping). */
  #deleteNow: (() => void) | undefined;
  /** Failures logged as outages: NATS away fails every publish, the database every round. */
  readonly #publishing: FailureLog;
  readonly #rounds: FailureLog;
  readonly #deletes: FailureLog;

  constructor(options: RelayOptions) {
    this.#options = { batchSize: 500, pollMs: 1000, handOffMs: 2000, ...options };
    checkTable(options.table);
    this.#publisher = new StreamPublisher(options.nc);
    const { logger, table } = options;
    this.#publishing = new FailureLog(logger, `publishing the ${table} outbox`);
    this.#rounds = new FailureLog(logger, `reading the ${table} outbox`);
    this.#deletes = new FailureLog(logger, `deleting published rows of the ${table} outbox`);
  }

  start(): void {
    const { outboxBacklog, outboxOldestAge } = spoolMetrics();
    metrics
      .getMeter('spool')
      .addBatchObservableCallback(this.#observeBacklog, [outboxBacklog, outboxOldestAge]);
    this.#timer = setInterval(() => void this.poll(), this.#options.pollMs);
    // Rows a stopped process left behind are old enough to take at once.
    this.kick();
  }

  /** Asks for a round now that publishes every row in the table; rounds never overlap. */
  kick(): void {
    void this.#round(0);
  }

  /**
   * Runs the poll's round now: publishes the rows older than `handOffMs`, leaving younger ones to
   * the process that wrote them. Resolves when that round is over.
   */
  poll(): Promise<void> {
    return this.#round(this.#options.handOffMs);
  }

  /**
   * Publishes rows the caller has just committed, without reading them back; deletes them once
   * JetStream has them. A row whose publish fails stays in the table for the poll.
   */
  send(rows: readonly OutboxRow[]): void {
    if (this.#stopped) return;
    for (const row of rows) {
      const sending: Promise<void> = this.#publish(row).then(
        () => {
          this.#publishing.succeeded();
          this.#delete(row.id);
        },
        // The row stays in the table for the poll.
        (err: unknown) => this.#publishing.failed(err, { subject: row.subject }),
      );
      this.#sending.add(sending);
      void sending.finally(() => this.#sending.delete(sending));
    }
  }

  /** Resolves when the round in progress and the rows handed over so far are published and deleted. */
  async idle(): Promise<void> {
    while (this.#running || this.#next) await (this.#running ?? this.#next);
    while (this.#sending.size > 0) await Promise.all(this.#sending);
    await this.#deleting;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const { outboxBacklog, outboxOldestAge } = spoolMetrics();
    metrics
      .getMeter('spool')
      .removeBatchObservableCallback(this.#observeBacklog, [outboxBacklog, outboxOldestAge]);
    this.#deleteNow?.();
    clearInterval(this.#timer);
    // Once stopped, a finishing round starts no other, so this ends.
    while (this.#running || this.#next) await (this.#running ?? this.#next);
    await this.idle();
    this.#publisher.close();
  }

  /**
   * Observes the table's backlog when metrics are collected: every replica reports the same table,
   * so read the figures with max(), not sum(). A database that does not answer within a second
   * leaves that collection without them rather than holding it.
   */
  readonly #observeBacklog: BatchObservableCallback = async (result) => {
    const { pool, table } = this.#options;
    const read = pool.query<{ rows: string; age_s: number | null }>(
      `SELECT count(*) AS rows, EXTRACT(EPOCH FROM now() - min(created_at))::FLOAT8 AS age_s
       FROM ${table}`,
    );
    read.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), BACKLOG_READ_MS);
    });
    const answer = await Promise.race([read, late]).catch(() => undefined);
    clearTimeout(timer);
    const row = answer?.rows[0];
    if (!row) return;
    const attributes = { 'spool.outbox.table': table };
    const { outboxBacklog, outboxOldestAge } = spoolMetrics();
    result.observe(outboxBacklog, Number(row.rows), attributes);
    result.observe(outboxOldestAge, Math.max(0, row.age_s ?? 0), attributes);
  };

  /**
   * Starts a round for rows at least `minAgeMs` old, or, if one is running, folds the ask into the
   * single round that follows it, which takes the youngest rows any ask wanted: a poll that comes
   * while a kick's round runs must not turn into a kick, nor a kick into a poll.
   */
  #round(minAgeMs: number): Promise<void> {
    if (this.#stopped) return this.#running ?? Promise.resolve();
    if (!this.#running) {
      this.#running = this.#drain(minAgeMs).finally(() => {
        this.#running = undefined;
      });
      return this.#running;
    }
    this.#nextMinAgeMs = Math.min(this.#nextMinAgeMs, minAgeMs);
    this.#next ??= this.#running.then(() => {
      const age = this.#nextMinAgeMs;
      this.#next = undefined;
      this.#nextMinAgeMs = Number.POSITIVE_INFINITY;
      return this.#round(age);
    });
    return this.#next;
  }

  /**
   * Deletes published rows, many per statement: a DELETE waits `DELETE_LINGER_MS` for the rows
   * published meanwhile, then takes them all, and one runs at a time. Each DELETE is a commit of
   * its own; the rows wait for it unseen (the poll takes only rows older than `handOffMs`), so a
   * few milliseconds make far fewer commits under load.
   */
  #delete(id: string): void {
    this.#published.push(id);
    if (this.#deleting) return;
    this.#deleting = (async () => {
      while (this.#published.length > 0) {
        if (!this.#stopped) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, DELETE_LINGER_MS);
            this.#deleteNow = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          this.#deleteNow = undefined;
        }
        const ids = this.#published;
        this.#published = [];
        try {
          await this.#options.pool.query(`DELETE FROM ${this.#options.table} WHERE id = ANY($1)`, [
            ids,
          ]);
          this.#deletes.succeeded();
        } catch (err) {
          // Left in the table, the rows are published again by the poll; JetStream drops the
          // duplicates within its window and consumers are idempotent beyond it.
          this.#deletes.failed(err);
        }
      }
    })().finally(() => {
      this.#deleting = undefined;
    });
  }

  /** Publishes one row in a span that continues the trace the row was written in. */
  #publish(row: OutboxRow): Promise<unknown> {
    if (!tracing()) return this.#send(row);
    return inSpan(
      natsSpanName('publish', row.subject),
      {
        kind: SpanKind.PRODUCER,
        parent: contextFrom(row.headers),
        attributes: natsAttributes('publish', row.subject, row.id),
      },
      () => this.#send(row),
    );
  }

  #send(row: OutboxRow): Promise<unknown> {
    const h = natsHeaders();
    for (const [k, v] of Object.entries(row.headers)) h.set(k, v);
    injectHeaders(h);
    return this.#publisher.publish(row.subject, row.payload, { msgID: row.id, headers: h });
  }

  /** Publishes and deletes the rows at least `minAgeMs` old (by the database's clock). */
  async #drain(minAgeMs: number): Promise<void> {
    const { pool, table, batchSize } = this.#options;
    try {
      for (;;) {
        const { rows } = await pool.query<OutboxRow>(
          `SELECT id, subject, payload, headers FROM ${table}
           WHERE created_at <= now() - $2 * INTERVAL '1 millisecond'
           ORDER BY created_at LIMIT $1`,
          [batchSize, minAgeMs],
        );
        if (rows.length === 0) return;
        const published = await Promise.all(
          rows.map(async (row) => {
            try {
              await this.#publish(row);
              this.#publishing.succeeded();
              return row.id;
            } catch (err) {
              this.#publishing.failed(err, { subject: row.subject });
              return undefined;
            }
          }),
        );
        const done = published.filter((id): id is string => id !== undefined);
        if (done.length > 0) await pool.query(`DELETE FROM ${table} WHERE id = ANY($1)`, [done]);
        this.#rounds.succeeded();
        if (done.length < rows.length || rows.length < batchSize) return;
      }
    } catch (err) {
      this.#rounds.failed(err);
    }
  }
}
