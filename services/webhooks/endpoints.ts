/**
 * Webhook endpoints: their creation (at most {@link MAX_ENDPOINTS_PER_ORG} per organization),
 * listing, changes, secret rotation and deletion, and what the fan-out and the worker read of
 * them. Secrets are sealed before they are written. Each change queues its `webhook_endpoint.*`
 * event for the event stream in its own transaction (outbox.ts).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { WebhookEndpoint } from '../../gen/spool/v1/webhooks.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict } from '../../lib/errors.js';
import { KeyedTurns } from '../../lib/keyed-turns.js';
import { listOldestFirst } from '../../lib/paging.js';
import type { SecretBox } from './crypto.js';
import {
  disableEndpoint,
  ENDPOINT_COLUMNS,
  type EndpointRow,
  endpointRow,
  toEndpoint,
} from './endpoint-rows.js';
import { announceEndpoints } from './outbox.js';

/** Spec §8: at most 20 endpoints per organization. */
export const MAX_ENDPOINTS_PER_ORG = 20;

/** Event types an endpoint subscribes to; `*` is every type, including ones added later. */
export const ALL_EVENTS = '*';

export interface EndpointChanges {
  url?: string | undefined;
  events?: string[] | undefined;
  enabled?: boolean | undefined;
  description?: string | undefined;
}

/** A page of endpoints. */
export interface EndpointPage {
  items: WebhookEndpoint[];
  nextCursor: string;
}

/** What the webhooks service keeps of its endpoints. */
export interface EndpointStore {
  createEndpoint(input: {
    orgId: string;
    url: string;
    events: string[];
    description: string;
    secret: string;
  }): Promise<WebhookEndpoint>;
  listEndpoints(orgId: string, limit: number, cursor: string): Promise<EndpointPage>;
  /**
   * Every organization's endpoints, oldest first; `failing`: those enabled whose attempts all
   * fail (failing_since is set), `disabled`: those disabled, by whoever or whatever.
   */
  listAllEndpoints(
    state: '' | 'failing' | 'disabled',
    limit: number,
    cursor: string,
  ): Promise<EndpointPage>;
  getEndpoint(orgId: string, endpointId: string): Promise<WebhookEndpoint>;
  updateEndpoint(
    orgId: string,
    endpointId: string,
    changes: EndpointChanges,
  ): Promise<WebhookEndpoint>;
  /** Deletes the endpoint with its deliveries and attempts. */
  deleteEndpoint(orgId: string, endpointId: string): Promise<void>;
  /**
   * Replaces the secret. The old one keeps signing alongside the new for `graceMs` (nothing
   * when 0); only the most recent old secret is kept.
   */
  rotateSecret(
    orgId: string,
    endpointId: string,
    secret: string,
    graceMs: number,
  ): Promise<WebhookEndpoint>;
  /** The ids of the organization's endpoints, enabled or not. */
  endpointIds(orgId: string): Promise<Set<string>>;
  /** The event types each enabled endpoint of the organization chose: the fan-out's index. */
  enabledEndpointEvents(orgId: string): Promise<string[][]>;
}

export function createEndpointStore(pool: pg.Pool, clock: Clock, box: SecretBox): EndpointStore {
  const creations = new KeyedTurns();
  /** A page of endpoints matching `where`, oldest first. */
  async function endpointsWhere(
    where: string,
    params: unknown[],
    limit: number,
    cursor: string,
  ): Promise<{ items: WebhookEndpoint[]; nextCursor: string }> {
    const { items, nextCursor } = await listOldestFirst<EndpointRow>(
      pool,
      { select: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints`, where, params },
      limit,
      cursor,
    );
    const now = clock.now();
    return { items: items.map((r) => toEndpoint(r, now)), nextCursor };
  }

  return {
    async createEndpoint(input: {
      orgId: string;
      url: string;
      events: string[];
      description: string;
      secret: string;
    }): Promise<WebhookEndpoint> {
      const id = randomUUID();
      const sealed = box.seal(input.secret, id);
      // One organization's creations take turns here, and SERIALIZABLE keeps the limit between
      // replicas: a burst of them at once would otherwise conflict until their deadlines passed.
      return creations.run(input.orgId, () =>
        withTx(pool, async (tx) => {
          const now = clock.now();
          const { rows: count } = await tx.query<{ n: string }>(
            'SELECT count(*) AS n FROM webhook_endpoints WHERE org_id = $1',
            [input.orgId],
          );
          if (Number(count[0]?.n ?? 0) >= MAX_ENDPOINTS_PER_ORG) {
            throw conflict(
              `an organization may have at most ${MAX_ENDPOINTS_PER_ORG} webhook endpoints; delete one first`,
            );
          }
          const { rows } = await tx.query<EndpointRow>(
            `INSERT INTO webhook_endpoints
             (id, org_id, url, events, description, enabled, secret, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, true, $6, $7, $7)
           RETURNING ${ENDPOINT_COLUMNS}`,
            [id, input.orgId, input.url, input.events, input.description, sealed, now],
          );
          const created = toEndpoint(rows[0] as EndpointRow, now);
          await announceEndpoints(tx, 'webhook_endpoint.created', [created], now);
          return created;
        }),
      );
    },

    async listEndpoints(
      orgId: string,
      limit: number,
      cursor: string,
    ): Promise<{ items: WebhookEndpoint[]; nextCursor: string }> {
      return endpointsWhere('org_id = $1', [orgId], limit, cursor);
    },

    async listAllEndpoints(
      state: '' | 'failing' | 'disabled',
      limit: number,
      cursor: string,
    ): Promise<{ items: WebhookEndpoint[]; nextCursor: string }> {
      return endpointsWhere(
        `($1::TEXT = ''
           OR ($1 = 'failing' AND enabled AND failing_since IS NOT NULL)
           OR ($1 = 'disabled' AND NOT enabled))`,
        [state],
        limit,
        cursor,
      );
    },

    async getEndpoint(orgId: string, endpointId: string): Promise<WebhookEndpoint> {
      return toEndpoint(await endpointRow(pool, orgId, endpointId), clock.now());
    },

    async updateEndpoint(
      orgId: string,
      endpointId: string,
      changes: EndpointChanges,
    ): Promise<WebhookEndpoint> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const row = await endpointRow(tx, orgId, endpointId, true);
        if (changes.enabled === false && row.enabled) {
          await disableEndpoint(tx, orgId, endpointId, 'operator', now);
        }
        const { rows } = await tx.query<EndpointRow>(
          `UPDATE webhook_endpoints SET
             url = COALESCE($3, url),
             events = COALESCE($4, events),
             description = COALESCE($5, description),
             enabled = CASE WHEN $6::BOOL THEN true ELSE enabled END,
             disabled_reason = CASE WHEN $6::BOOL THEN '' ELSE disabled_reason END,
             disabled_at = CASE WHEN $6::BOOL THEN NULL ELSE disabled_at END,
             failing_since = CASE WHEN $6::BOOL THEN NULL ELSE failing_since END,
             updated_at = $7
           WHERE org_id = $1 AND id = $2
           RETURNING ${ENDPOINT_COLUMNS}`,
          [
            orgId,
            endpointId,
            changes.url ?? null,
            changes.events ?? null,
            changes.description ?? null,
            changes.enabled === true && !row.enabled,
            now,
          ],
        );
        const updated = toEndpoint(rows[0] as EndpointRow, now);
        await announceEndpoints(tx, 'webhook_endpoint.updated', [updated], now);
        return updated;
      });
    },

    async deleteEndpoint(orgId: string, endpointId: string): Promise<void> {
      await withTx(pool, async (tx) => {
        const now = clock.now();
        const deleted = toEndpoint(await endpointRow(tx, orgId, endpointId, true), now);
        await tx.query(
          `DELETE FROM webhook_attempts WHERE org_id = $1 AND delivery_id IN
             (SELECT id FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2)`,
          [orgId, endpointId],
        );
        await tx.query('DELETE FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2', [
          orgId,
          endpointId,
        ]);
        await tx.query('DELETE FROM webhook_endpoints WHERE org_id = $1 AND id = $2', [
          orgId,
          endpointId,
        ]);
        await announceEndpoints(tx, 'webhook_endpoint.deleted', [deleted], now);
      });
    },

    async rotateSecret(
      orgId: string,
      endpointId: string,
      secret: string,
      graceMs: number,
    ): Promise<WebhookEndpoint> {
      const sealed = box.seal(secret, endpointId);
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const row = await endpointRow(tx, orgId, endpointId, true);
        const keep = graceMs > 0;
        const { rows } = await tx.query<EndpointRow>(
          `UPDATE webhook_endpoints SET secret = $3, previous_secret = $4,
             previous_secret_expires_at = $5, secret_rotated_at = $6, updated_at = $6
           WHERE org_id = $1 AND id = $2
           RETURNING ${ENDPOINT_COLUMNS}`,
          [
            orgId,
            endpointId,
            sealed,
            keep ? row.secret : null,
            keep ? new Date(now.getTime() + graceMs) : null,
            now,
          ],
        );
        const rotated = toEndpoint(rows[0] as EndpointRow, now);
        await announceEndpoints(tx, 'webhook_endpoint.updated', [rotated], now);
        return rotated;
      });
    },

    async endpointIds(orgId: string): Promise<Set<string>> {
      const { rows } = await pool.query<{ id: string }>(
        'SELECT id FROM webhook_endpoints WHERE org_id = $1',
        [orgId],
      );
      return new Set(rows.map((r) => r.id));
    },

    async enabledEndpointEvents(orgId: string): Promise<string[][]> {
      const { rows } = await pool.query<{ events: string[] }>(
        'SELECT events FROM webhook_endpoints WHERE org_id = $1 AND enabled',
        [orgId],
      );
      return rows.map((r) => r.events);
    },
  };
}
