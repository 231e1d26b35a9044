/**
 * The `webhook_endpoints` row: its columns, its mapping to the API's {@link WebhookEndpoint}, the
 * look-ups the stores share, the disabling of an endpoint, and the secrets that sign its attempts.
 * Every query is scoped by `org_id`.
 */
import type pg from 'pg';
import type { WebhookEndpoint } from '../../gen/spool/v1/webhooks.js';
import { conflict, notFound } from '../../lib/errors.js';
import { camelRow } from '../../lib/rows.js';
import type { SecretBox } from './crypto.js';
import { DISABLED_NOTICE, type DisabledReason } from './policy.js';

export interface EndpointRow {
  id: string;
  org_id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: string;
  disabled_at: Date | null;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const ENDPOINT_COLUMNS = `id, org_id, url, events, description, enabled, disabled_reason, disabled_at,
  secret, previous_secret, previous_secret_expires_at, secret_rotated_at, failing_since,
  created_at, updated_at`;

/** An endpoint's sealed secrets, as read with it. */
export interface SealedSecrets {
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_expires_at: Date | null;
}

/**
 * The row as the API shows it at `now`: its secrets never, the previous secret's expiry only
 * while it still signs.
 */
export function toEndpoint(row: EndpointRow, now: Date): WebhookEndpoint {
  const {
    secret: _secret,
    previousSecret,
    previousSecretExpiresAt: expiresAt,
    disabledAt,
    secretRotatedAt,
    failingSince,
    ...renamed
  } = camelRow(row);
  const graceOpen =
    previousSecret !== null && expiresAt !== null && expiresAt.getTime() > now.getTime();
  return {
    ...renamed,
    disabledAt: disabledAt ?? undefined,
    secretRotatedAt: secretRotatedAt ?? undefined,
    previousSecretExpiresAt: graceOpen ? (expiresAt ?? undefined) : undefined,
    failingSince: failingSince ?? undefined,
  };
}

export async function endpointRow(
  q: pg.Pool | pg.PoolClient,
  orgId: string,
  endpointId: string,
  lock = false,
): Promise<EndpointRow> {
  const { rows } = await q.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND id = $2${
      lock ? ' FOR UPDATE' : ''
    }`,
    [orgId, endpointId],
  );
  if (!rows[0]) throw notFound('no such webhook endpoint in this organization');
  return rows[0];
}

/** The endpoint's row; 409 when it is disabled, for actions that send to it. */
export async function enabledEndpoint(
  tx: pg.PoolClient,
  orgId: string,
  endpointId: string,
): Promise<EndpointRow> {
  const row = await endpointRow(tx, orgId, endpointId);
  if (!row.enabled) {
    throw conflict('the webhook endpoint is disabled; enable it first');
  }
  return row;
}

/**
 * Disables an endpoint and ends its pending deliveries as failed, except one whose attempt is in
 * flight: its worker ends it when it records the outcome.
 */
export async function disableEndpoint(
  tx: pg.PoolClient,
  orgId: string,
  endpointId: string,
  reason: DisabledReason,
  now: Date,
): Promise<void> {
  await tx.query(
    `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $3, disabled_at = $4,
       updated_at = $4
     WHERE org_id = $1 AND id = $2`,
    [orgId, endpointId, reason, now],
  );
  await tx.query(
    `UPDATE webhook_deliveries
     SET state = 'failed', next_attempt_at = NULL, claim = NULL, finished_at = $3, notice = $4
     WHERE org_id = $1 AND endpoint_id = $2 AND state = 'pending'
       AND (claim IS NULL OR next_attempt_at <= $3)`,
    [orgId, endpointId, now, DISABLED_NOTICE[reason]],
  );
}

/**
 * The secrets that sign an attempt of the endpoint now, current first. Opened through the box's
 * cache: a claim decrypts only a secret it has not seen.
 */
export function signingSecrets(
  box: SecretBox,
  sealed: SealedSecrets,
  endpointId: string,
  now: Date,
): string[] {
  const secrets = [box.open(sealed.secret, endpointId)];
  if (
    sealed.previous_secret &&
    sealed.previous_secret_expires_at &&
    sealed.previous_secret_expires_at.getTime() > now.getTime()
  ) {
    secrets.push(box.open(sealed.previous_secret, endpointId));
  }
  return secrets;
}
