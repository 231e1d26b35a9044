/**
 * The delivery log as the API reads it (an endpoint's deliveries, each with its attempts), and
 * what adds to it from the API: a test ping, a resend of one delivery or of the failed ones.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { WebhookDelivery } from '../../gen/spool/v1/webhooks.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict } from '../../lib/errors.js';
import { deliveryBody } from '../../lib/events.js';
import { decodeCursor, page } from '../../lib/paging.js';
import { rfc3339 } from '../../lib/time.js';
import {
  attemptsOf,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  type DeliveryState,
  deliveryRow,
  toDelivery,
} from './delivery-rows.js';
import { enabledEndpoint, endpointRow } from './endpoint-rows.js';

/** What the API reads and resends of the deliveries. */
export interface DeliveryLog {
  /** Queues a `ping` to one endpoint, whatever event types it chose. */
  createTestDelivery(orgId: string, endpointId: string): Promise<WebhookDelivery>;
  /** An endpoint's deliveries, newest first, each with its attempts. */
  listDeliveries(
    orgId: string,
    endpointId: string,
    options: { limit: number; cursor: string; state: DeliveryState | undefined },
  ): Promise<{ items: WebhookDelivery[]; nextCursor: string }>;
  getDelivery(orgId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery>;
  /**
   * Sends a delivery again now with a fresh round of attempts and the same delivery id, so a
   * receiver that already has it can tell. A delivery whose attempt is in flight is left alone.
   */
  resendDelivery(orgId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery>;
  /** Resends every failed delivery of the endpoint created at or after `since`. */
  resendFailed(orgId: string, endpointId: string, since: Date): Promise<number>;
}

export function createDeliveryLog(pool: pg.Pool, clock: Clock): DeliveryLog {
  return {
    async createTestDelivery(orgId: string, endpointId: string): Promise<WebhookDelivery> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        await enabledEndpoint(tx, orgId, endpointId);
        const body = deliveryBody({
          type: 'ping',
          created_at: rfc3339(now),
          org_id: orgId,
          data: { endpoint_id: endpointId, sent_at: rfc3339(now) },
        });
        const { rows } = await tx.query<DeliveryRow>(
          `INSERT INTO webhook_deliveries
             (id, org_id, endpoint_id, event_id, event_type, body, state, next_attempt_at,
              created_at)
           VALUES ($1, $2, $3, $4, 'ping', $5, 'pending', $6, $6)
           RETURNING ${DELIVERY_COLUMNS}`,
          [randomUUID(), orgId, endpointId, randomUUID(), body, now],
        );
        return toDelivery(rows[0] as DeliveryRow, []);
      });
    },

    async listDeliveries(
      orgId: string,
      endpointId: string,
      options: { limit: number; cursor: string; state: DeliveryState | undefined },
    ): Promise<{ items: WebhookDelivery[]; nextCursor: string }> {
      const before = decodeCursor(options.cursor);
      // One transaction, so that each delivery's state and its attempts come from one snapshot:
      // never a delivery still pending beside the attempt that finished it.
      return withTx(pool, async (tx) => {
        await endpointRow(tx, orgId, endpointId);
        const { rows } = await tx.query<DeliveryRow>(
          `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
         WHERE org_id = $1 AND endpoint_id = $2 AND ($3::TEXT IS NULL OR state = $3)
           AND ($4::TIMESTAMPTZ IS NULL OR (created_at, id) < ($4, $5::UUID))
         ORDER BY created_at DESC, id DESC LIMIT $6`,
          [
            orgId,
            endpointId,
            options.state ?? null,
            before?.at ?? null,
            before?.id ?? null,
            options.limit + 1,
          ],
        );
        const { items, nextCursor } = page(rows, options.limit, (r) => ({
          at: r.created_at.toISOString(),
          id: r.id,
        }));
        const attempts = await attemptsOf(
          tx,
          orgId,
          items.map((r) => r.id),
        );
        return { items: items.map((r) => toDelivery(r, attempts.get(r.id) ?? [])), nextCursor };
      });
    },

    async getDelivery(
      orgId: string,
      endpointId: string,
      deliveryId: string,
    ): Promise<WebhookDelivery> {
      // One snapshot for the delivery and its attempts, as for a list.
      return withTx(pool, async (tx) => {
        const row = await deliveryRow(tx, orgId, endpointId, deliveryId);
        const { rows } = await tx.query<{ body: Buffer }>(
          'SELECT body FROM webhook_deliveries WHERE org_id = $1 AND id = $2',
          [orgId, deliveryId],
        );
        const attempts = await attemptsOf(tx, orgId, [deliveryId]);
        const body = rows[0]?.body.toString('utf8') ?? '';
        return toDelivery(row, attempts.get(deliveryId) ?? [], body);
      });
    },

    async resendDelivery(
      orgId: string,
      endpointId: string,
      deliveryId: string,
    ): Promise<WebhookDelivery> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        await enabledEndpoint(tx, orgId, endpointId);
        const row = await deliveryRow(tx, orgId, endpointId, deliveryId);
        if (Number(row.body_size) === 0) {
          throw conflict(`this delivery cannot be sent: ${row.notice}`);
        }
        const inFlight =
          row.claim !== null && (row.next_attempt_at?.getTime() ?? 0) > now.getTime();
        const attempts = (await attemptsOf(tx, orgId, [deliveryId])).get(deliveryId) ?? [];
        if (inFlight) return toDelivery(row, attempts);
        const { rows } = await tx.query<DeliveryRow>(
          `UPDATE webhook_deliveries SET state = 'pending', round_attempts = 0,
             next_attempt_at = $3, notice = '', finished_at = NULL
           WHERE org_id = $1 AND id = $2
           RETURNING ${DELIVERY_COLUMNS}`,
          [orgId, deliveryId, now],
        );
        return toDelivery(rows[0] as DeliveryRow, attempts);
      });
    },

    async resendFailed(orgId: string, endpointId: string, since: Date): Promise<number> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        await enabledEndpoint(tx, orgId, endpointId);
        const { rowCount } = await tx.query(
          `UPDATE webhook_deliveries SET state = 'pending', round_attempts = 0,
             next_attempt_at = $4, notice = '', finished_at = NULL
           WHERE org_id = $1 AND endpoint_id = $2 AND state = 'failed' AND created_at >= $3
             AND length(body) > 0`,
          [orgId, endpointId, since, now],
        );
        return rowCount ?? 0;
      });
    },
  };
}
