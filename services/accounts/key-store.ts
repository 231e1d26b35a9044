/**
 * API keys (hash only). Every query on a key is scoped by its organization, except the lookup by
 * hash that authentication needs (the hash is the credential).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { ApiKey } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { notFound } from '../../lib/errors.js';
import { eventMessage } from '../../lib/events.js';
import { listOldestFirst } from '../../lib/paging.js';
import { keyView } from '../../lib/resource-views.js';
import { camelRow } from '../../lib/rows.js';
import { announce, keyRevoked, requireOpenOrg } from './outbox.js';

interface KeyRow {
  id: string;
  org_id: string;
  hint: string;
  name: string;
  live: boolean;
  scopes: string[];
  allowed_ips: string[];
  expires_at: Date | null;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const KEY_COLUMNS =
  'id, org_id, hint, name, live, scopes, allowed_ips, expires_at, created_at, revoked_at, last_used_at';

function toKey(row: KeyRow): ApiKey {
  return {
    ...camelRow(row),
    expiresAt: row.expires_at ?? undefined,
    revokedAt: row.revoked_at ?? undefined,
    lastUsedAt: row.last_used_at ?? undefined,
  };
}

/** A key made or revoked, for the event stream: `{key}` as the API shows it, never its secret. */
function keyEvent(type: 'api_key.created' | 'api_key.revoked', key: ApiKey, at: Date) {
  return eventMessage(key.orgId, type, { key: keyView(key) }, at);
}

export interface NewKey {
  orgId: string;
  live: boolean;
  scopes: string[];
  allowedIps: string[];
  expiresAt: Date | undefined;
  name: string;
  hint: string;
  hash: Buffer;
}

export interface KeyStore {
  /** Inserts a key and queues `api_key.created` in the same transaction. */
  createKey(key: NewKey): Promise<ApiKey>;
  listKeys(
    orgId: string,
    limit: number,
    cursor: string,
  ): Promise<{ items: ApiKey[]; nextCursor: string }>;
  /**
   * Records when keys were last used; a time older than the one kept changes nothing. One
   * statement, which the database retries itself; a gateway keeps what failed for its next flush.
   */
  recordKeyUses(uses: Array<{ orgId: string; keyId: string; at: Date }>): Promise<void>;
  /**
   * Revokes a key and, in the same transaction, queues the message that tells every gateway to
   * forget it, and `api_key.revoked`. Revoking a revoked key changes nothing (no event) and
   * answers the key as it is.
   */
  revokeKey(orgId: string, keyId: string): Promise<ApiKey>;
  /** The key with this hash and its organization's name, whatever its state. */
  findKeyByHash(hash: Buffer): Promise<{ key: ApiKey; orgName: string } | undefined>;
}

export function createKeyStore(pool: pg.Pool, clock: Clock): KeyStore {
  return {
    async createKey(key) {
      return withTx(pool, async (tx) => {
        await requireOpenOrg(tx, key.orgId);
        const now = clock.now();
        const { rows } = await tx.query<KeyRow>(
          `INSERT INTO api_keys
             (id, org_id, key_hash, hint, name, live, scopes, allowed_ips, expires_at, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           RETURNING ${KEY_COLUMNS}`,
          [
            randomUUID(),
            key.orgId,
            key.hash,
            key.hint,
            key.name,
            key.live,
            key.scopes,
            key.allowedIps,
            key.expiresAt ?? null,
            now,
          ],
        );
        const created = toKey(rows[0] as KeyRow);
        await announce(tx, [keyEvent('api_key.created', created, now)]);
        return created;
      });
    },

    async listKeys(orgId, limit, cursor) {
      const { items, nextCursor } = await listOldestFirst<KeyRow>(
        pool,
        { select: `SELECT ${KEY_COLUMNS} FROM api_keys`, where: 'org_id = $1', params: [orgId] },
        limit,
        cursor,
      );
      // An organization without keys and one that does not exist read alike; only the second is
      // an error (a mistyped id must not read as "this organization has no keys").
      if (items.length === 0 && cursor === '') {
        const org = await pool.query('SELECT 1 FROM orgs WHERE id = $1', [orgId]);
        if (org.rowCount === 0) throw notFound('no such organization');
      }
      return { items: items.map(toKey), nextCursor };
    },

    async recordKeyUses(uses) {
      if (uses.length === 0) return;
      await pool.query(
        // No later than now by this service's clock: a gateway whose clock runs ahead cannot set
        // a time that later, true uses would never move past.
        `UPDATE api_keys AS k SET last_used_at = LEAST(v.at, $4::TIMESTAMPTZ)
         FROM unnest($1::UUID[], $2::UUID[], $3::TIMESTAMPTZ[]) AS v (org_id, id, at)
         WHERE k.org_id = v.org_id AND k.id = v.id
           AND (k.last_used_at IS NULL OR k.last_used_at < LEAST(v.at, $4::TIMESTAMPTZ))`,
        [uses.map((u) => u.orgId), uses.map((u) => u.keyId), uses.map((u) => u.at), clock.now()],
      );
    },

    async revokeKey(orgId, keyId) {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const { rows } = await tx.query<KeyRow>(
          `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
           WHERE org_id = $1 AND id = $2 RETURNING ${KEY_COLUMNS}`,
          [orgId, keyId, now],
        );
        const row = rows[0];
        if (!row) throw notFound('no such API key in this organization');
        const key = toKey(row);
        const revokedNow = row.revoked_at?.getTime() === now.getTime();
        await announce(tx, [
          keyRevoked(orgId, row.id),
          ...(revokedNow ? [keyEvent('api_key.revoked', key, now)] : []),
        ]);
        return key;
      });
    },

    async findKeyByHash(hash) {
      const { rows } = await pool.query<KeyRow & { org_name: string }>(
        `SELECT k.id, k.org_id, k.hint, k.name, k.live, k.scopes, k.allowed_ips, k.expires_at,
                k.created_at, k.revoked_at, o.name AS org_name
         FROM api_keys k JOIN orgs o ON o.id = k.org_id
         WHERE k.key_hash = $1`,
        [hash],
      );
      const found = rows[0];
      if (!found) return undefined;
      const { org_name: orgName, ...row } = found;
      return { key: toKey(row), orgName };
    },
  };
}
