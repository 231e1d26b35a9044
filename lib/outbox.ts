/**
 * The transactional outbox (DESIGN §2). A state change and the messages it causes are written in one
 * transaction; the relay then publishes each row to JetStream with `Nats-Msg-Id` set to the row id,
 * so a row published twice (after a crash, or by two relays) is stored once, and deletes the row
 * after the publish is acknowledged. Each service has its own outbox table, created by its migrations
 * with the columns (id UUID PRIMARY KEY, subject TEXT, payload BYTEA, headers JSONB, created_at).
 */
import { randomUUID } from 'node:crypto';
import { type JetStreamClient, jetstream } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type pg from 'pg';
import type { NatsConnection } from './bus.js';
import type { Logger } from './logger.js';
import { WriteBatch } from './sql.js';
import {
  contextFrom,
  injectHeaders,
  inSpan,
  natsAttributes,
  natsSpanName,
  SpanKind,
  traceCarrier,
} from './tracing.js';

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
): Promise<void> {
  if (messages.length === 0) return;
  const batch = new WriteBatch();
  addToOutbox(batch, table, messages);
  await tx.query(batch.text(), batch.values);
}

/** Adds the INSERT of `messages` to a batch of writes, as {@link enqueue} does on its own. */
export function addToOutbox(batch: WriteBatch, table: string, messages: OutboxMessage[]): void {
  if (messages.length === 0) return;
  const trace = traceCarrier();
  const rows = messages.map((m) =>
    batch.row([
      randomUUID(),
      m.subject,
      Buffer.from(JSON.stringify(m.payload)),
      JSON.stringify({ ...trace, ...m.headers }),
    ]),
  );
  batch.add(
    `INSERT INTO ${checkTable(table)} (id, subject, payload, headers) VALUES ${rows.join(', ')}`,
  );
}

interface OutboxRow {
  id: string;
  subject: string;
  payload: Buffer;
  headers: Record<string, string>;
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
}

/**
 * Publishes outbox rows. Writers call {@link OutboxRelay.kick} after committing so messages leave at
 * once; the poll picks up whatever a crashed process left behind.
 */
export class OutboxRelay {
  readonly #options: Required<RelayOptions>;
  readonly #js: JetStreamClient;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: RelayOptions) {
    this.#options = { batchSize: 500, pollMs: 1000, ...options };
    checkTable(options.table);
    this.#js = jetstream(options.nc);
  }

  start(): void {
    this.#timer = setInterval(() => this.kick(), this.#options.pollMs);
    this.kick();
  }

  /** Asks for a publish round now; rounds never overlap. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.kick();
      }
    });
  }

  /** Resolves when the round in progress, if any, has finished. */
  async idle(): Promise<void> {
    await this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    // Once stopped, a finishing round starts no other, so this ends.
    while (this.#running) await this.#running;
  }

  /** Publishes one row in a span that continues the trace the row was written in. */
  #publish(row: OutboxRow): Promise<unknown> {
    const parent = contextFrom(row.headers);
    return inSpan(
      natsSpanName('publish', row.subject),
      {
        kind: SpanKind.PRODUCER,
        parent,
        attributes: natsAttributes('publish', row.subject, row.id),
      },
      () => {
        const h = natsHeaders();
        for (const [k, v] of Object.entries(row.headers)) h.set(k, v);
        injectHeaders(h);
        return this.#js.publish(row.subject, row.payload, { msgID: row.id, headers: h });
      },
    );
  }

  async #drain(): Promise<void> {
    const { pool, table, batchSize, logger } = this.#options;
    try {
      for (;;) {
        const { rows } = await pool.query<OutboxRow>(
          `SELECT id, subject, payload, headers FROM ${table} ORDER BY created_at LIMIT $1`,
          [batchSize],
        );
        if (rows.length === 0) return;
        const published = await Promise.all(
          rows.map(async (row) => {
            try {
              await this.#publish(row);
              return row.id;
            } catch (err) {
              logger.warn({ err, subject: row.subject }, 'outbox publish failed; will retry');
              return undefined;
            }
          }),
        );
        const done = published.filter((id): id is string => id !== undefined);
        if (done.length > 0) await pool.query(`DELETE FROM ${table} WHERE id = ANY($1)`, [done]);
        if (done.length < rows.length || rows.length < batchSize) return;
      }
    } catch (err) {
      logger.warn({ err }, 'outbox relay round failed; will retry');
    }
  }
}
