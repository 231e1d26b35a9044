/**
 * The `webhook_deliveries` and `webhook_attempts` rows: their columns, their mapping to the API's
 * {@link WebhookDelivery}, and the look-ups the stores share. Every query is scoped by `org_id`.
 */
import type pg from 'pg';
import type { WebhookAttempt, WebhookDelivery } from '../../gen/spool/v1/webhooks.js';
import { notFound } from '../../lib/errors.js';

export type DeliveryState = 'pending' | 'succeeded' | 'failed';
export type AttemptOutcome = 'in_flight' | 'succeeded' | 'failed' | 'abandoned';

export interface DeliveryRow {
  id: string;
  org_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  state: DeliveryState;
  attempts: number;
  round_attempts: number;
  next_attempt_at: Date | null;
  claim: string | null;
  last_attempt_at: Date | null;
  last_status_code: number;
  notice: string;
  created_at: Date;
  finished_at: Date | null;
  /** 0 for a delivery that was never sendable (its body was over the size cap). */
  body_size: number;
}

export const DELIVERY_COLUMNS = `id, org_id, endpoint_id, event_id, event_type, state, attempts,
  round_attempts, next_attempt_at, claim, last_attempt_at, last_status_code, notice, created_at,
  finished_at, length(body) AS body_size`;

export interface AttemptRow {
  delivery_id: string;
  number: number;
  started_at: Date;
  outcome: AttemptOutcome;
  status_code: number;
  error: string;
  duration_ms: number;
  response_body: string;
}

function toAttempt(row: AttemptRow): WebhookAttempt {
  return {
    number: row.number,
    at: row.started_at,
    outcome: row.outcome,
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    responseBody: row.response_body,
  };
}

/**
 * A delivery's attempts as its log shows them. An attempt in flight has no row of its own: the
 * claim on the delivery stands for it (its number is the delivery's `attempts`, its start
 * `last_attempt_at`) until its outcome is written, or until a later claim finds the claim lapsed
 * and writes it `abandoned`.
 */
function withAttemptInFlight(row: DeliveryRow, attempts: AttemptRow[]): AttemptRow[] {
  if (row.claim === null || row.attempts === 0) return attempts;
  if (attempts.some((a) => a.number === row.attempts)) return attempts;
  const inFlight: AttemptRow = {
    delivery_id: row.id,
    number: row.attempts,
    started_at: row.last_attempt_at ?? row.created_at,
    outcome: 'in_flight',
    status_code: 0,
    error: '',
    duration_ms: 0,
    response_body: '',
  };
  return [...attempts, inFlight];
}

export function toDelivery(
  row: DeliveryRow,
  attempts: AttemptRow[],
  payload = '',
): WebhookDelivery {
  return {
    id: row.id,
    orgId: row.org_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    state: row.state,
    attemptCount: row.attempts,
    // While an attempt is in flight the column holds the claim's lease, not a schedule.
    nextAttemptAt: row.claim === null ? (row.next_attempt_at ?? undefined) : undefined,
    lastAttemptAt: row.last_attempt_at ?? undefined,
    lastStatusCode: row.last_status_code,
    notice: row.notice,
    createdAt: row.created_at,
    finishedAt: row.finished_at ?? undefined,
    payload,
    attempts: withAttemptInFlight(row, attempts).map(toAttempt),
  };
}

export async function deliveryRow(
  q: pg.Pool | pg.PoolClient,
  orgId: string,
  endpointId: string,
  deliveryId: string,
): Promise<DeliveryRow> {
  const { rows } = await q.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
     WHERE org_id = $1 AND endpoint_id = $2 AND id = $3`,
    [orgId, endpointId, deliveryId],
  );
  if (!rows[0]) throw notFound('no such delivery for this webhook endpoint');
  return rows[0];
}

/** The attempts' rows of the deliveries, by delivery, in number order. */
export async function attemptsOf(
  q: pg.Pool | pg.PoolClient,
  orgId: string,
  deliveryIds: string[],
): Promise<Map<string, AttemptRow[]>> {
  const byDelivery = new Map<string, AttemptRow[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const { rows } = await q.query<AttemptRow>(
    `SELECT delivery_id, number, started_at, outcome, status_code, error, duration_ms, response_body
     FROM webhook_attempts WHERE org_id = $1 AND delivery_id = ANY($2::UUID[])
     ORDER BY delivery_id, number`,
    [orgId, deliveryIds],
  );
  for (const row of rows) {
    const list = byDelivery.get(row.delivery_id) ?? [];
    list.push(row);
    byDelivery.set(row.delivery_id, list);
  }
  return byDelivery;
}
