/**
 * The accounts tables: organizations and API keys. Every query on a key is scoped by its
 * organization, except the lookup by hash that authentication needs (the hash is the credential).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { ApiKey, Org, Settings } from '../../gen/spool/v1/accounts.js';
import { subjects } from '../../lib/bus.js';
import type { Clock } from '../../lib/clock.js';
import { type Queryable, withTx } from '../../lib/db.js';
import { notFound, orgDeleting } from '../../lib/errors.js';
import { enqueue } from '../../lib/outbox.js';
import { listOldestFirst } from '../../lib/paging.js';
import type { SessionRevokedMessage } from './people-store.js';

export const OUTBOX_TABLE = 'accounts_outbox';

interface OrgRow {
  id: string;
  name: string;
  created_at: Date;
  deleting_since: Date | null;
}

const ORG_COLUMNS = 'id, name, created_at, deleting_since';

/**
 * Refuses, inside the caller's transaction, a change to an organization that is unknown or whose
 * deletion began: its keys, invitations and memberships could otherwise come back after the
 * deletion's first step ended them.
 */
export async function requireOpenOrg(tx: Queryable, orgId: string): Promise<void> {
  const { rows } = await tx.query<{ deleting_since: Date | null }>(
    'SELECT deleting_since FROM orgs WHERE id = $1',
    [orgId],
  );
  const row = rows[0];
  if (!row) throw notFound('no such organization');
  if (row.deleting_since) throw orgDeleting(orgId);
}

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

function toOrg(row: OrgRow): Org {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.created_at,
    deletingSince: row.deleting_since ?? undefined,
  };
}

function toKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    orgId: row.org_id,
    hint: row.hint,
    name: row.name,
    live: row.live,
    scopes: row.scopes,
    allowedIps: row.allowed_ips,
    expiresAt: row.expires_at ?? undefined,
    createdAt: row.created_at,
    revokedAt: row.revoked_at ?? undefined,
    lastUsedAt: row.last_used_at ?? undefined,
  };
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

/** A revocation as other processes hear of it. */
export interface KeyRevokedMessage {
  key_id: string;
  org_id: string;
}

/**
 * Defaults of the settings (spec §2: documents 30 days after a job finishes, uploads 7 days; the
 * webhook delivery log 30 days after a delivery finishes).
 */
export const DEFAULT_SETTINGS: Settings = {
  jobDocumentRetentionDays: 30,
  uploadRetentionDays: 7,
  webhookDeliveryRetentionDays: 30,
  statusNotice: '',
  pricingJson: '',
  downloadsJson: '',
};

const SETTING_NAMES: Record<keyof Settings, string> = {
  jobDocumentRetentionDays: 'job_document_retention_days',
  uploadRetentionDays: 'upload_retention_days',
  webhookDeliveryRetentionDays: 'webhook_delivery_retention_days',
  statusNotice: 'status_notice',
  pricingJson: 'pricing',
  downloadsJson: 'downloads',
};

export function createAccountsStore(pool: pg.Pool, clock: Clock) {
  async function readSettings(q: pg.Pool | pg.PoolClient): Promise<Settings> {
    const { rows } = await q.query<{ name: string; value: unknown }>(
      'SELECT name, value FROM settings',
    );
    const stored = new Map(rows.map((r) => [r.name, r.value]));
    const settings: Settings = { ...DEFAULT_SETTINGS };
    for (const [key, name] of Object.entries(SETTING_NAMES) as [keyof Settings, string][]) {
      const value = stored.get(name);
      if (value === undefined) continue;
      if (typeof DEFAULT_SETTINGS[key] === 'number' && typeof value === 'number') {
        (settings as unknown as Record<string, unknown>)[key] = value;
      } else if (typeof DEFAULT_SETTINGS[key] === 'string') {
        // Text settings are kept as JSON text values; objects (pricing, downloads) as JSON.
        (settings as unknown as Record<string, unknown>)[key] =
          typeof value === 'string' ? value : JSON.stringify(value);
      }
    }
    return settings;
  }

  return {
    getSettings: () => readSettings(pool),

    async updateSettings(changes: Partial<Settings>): Promise<Settings> {
      return withTx(pool, async (tx) => {
        for (const [key, value] of Object.entries(changes) as [
          keyof Settings,
          number | string | undefined,
        ][]) {
          if (value === undefined) continue;
          const json =
            (key === 'pricingJson' || key === 'downloadsJson') && value !== ''
              ? String(value)
              : JSON.stringify(value);
          await tx.query(
            `INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
            [SETTING_NAMES[key], json, clock.now()],
          );
        }
        return readSettings(tx);
      });
    },

    async createOrg(name: string): Promise<Org> {
      const { rows } = await pool.query<OrgRow>(
        `INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3) RETURNING ${ORG_COLUMNS}`,
        [randomUUID(), name, clock.now()],
      );
      return toOrg(rows[0] as OrgRow);
    },

    /**
     * Organizations oldest first; a non-empty `query` keeps names containing it, ignoring case,
     * and `deleting` those a deletion left part-deleted.
     */
    async listOrgs(query: string, deleting: boolean, limit: number, cursor: string) {
      const { items, nextCursor } = await listOldestFirst<OrgRow>(
        pool,
        {
          select: `SELECT ${ORG_COLUMNS} FROM orgs`,
          where:
            "($1::TEXT = '' OR strpos(lower(name), lower($1::TEXT)) > 0) AND (NOT $2 OR deleting_since IS NOT NULL)",
          params: [query, deleting],
        },
        limit,
        cursor,
      );
      return { items: items.map(toOrg), nextCursor };
    },

    async getOrg(orgId: string): Promise<Org> {
      const { rows } = await pool.query<OrgRow>(`SELECT ${ORG_COLUMNS} FROM orgs WHERE id = $1`, [
        orgId,
      ]);
      if (!rows[0]) throw notFound('no such organization');
      return toOrg(rows[0]);
    },

    async createKey(key: NewKey): Promise<ApiKey> {
      return withTx(pool, async (tx) => {
        await requireOpenOrg(tx, key.orgId);
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
            clock.now(),
          ],
        );
        return toKey(rows[0] as KeyRow);
      });
    },

    async listKeys(
      orgId: string,
      limit: number,
      cursor: string,
    ): Promise<{ items: ApiKey[]; nextCursor: string }> {
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

    /**
     * Records when keys were last used; a time older than the one kept changes nothing. One
     * statement, which the database retries itself; a gateway keeps what failed for its next flush.
     */
    async recordKeyUses(uses: Array<{ orgId: string; keyId: string; at: Date }>): Promise<void> {
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

    /**
     * Revokes a key and, in the same transaction, queues the message that tells every gateway to
     * forget it. Revoking a revoked key changes nothing and answers the key as it is.
     */
    async revokeKey(orgId: string, keyId: string): Promise<ApiKey> {
      return withTx(pool, async (tx) => {
        const { rows } = await tx.query<KeyRow>(
          `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
           WHERE org_id = $1 AND id = $2 RETURNING ${KEY_COLUMNS}`,
          [orgId, keyId, clock.now()],
        );
        const row = rows[0];
        if (!row) throw notFound('no such API key in this organization');
        const message: KeyRevokedMessage = { key_id: row.id, org_id: row.org_id };
        await enqueue(tx, OUTBOX_TABLE, [
          { subject: subjects.keyRevoked(orgId), payload: message },
        ]);
        return toKey(row);
      });
    },

    /**
     * The first step of deleting an organization: it is marked as being deleted, so that nothing
     * can be added to it any more, and every key revoked, every invitation and membership gone,
     * each announced so gateways drop cached keys and sessions at once. The organization stays,
     * for the other services to delete their share; repeatable (the first time is kept).
     */
    async closeOrg(orgId: string): Promise<void> {
      await withTx(pool, async (tx) => {
        const org = await tx.query(
          'UPDATE orgs SET deleting_since = COALESCE(deleting_since, $2) WHERE id = $1',
          [orgId, clock.now()],
        );
        if (org.rowCount === 0) throw notFound('no such organization');
        const keys = await tx.query<{ id: string }>(
          `UPDATE api_keys SET revoked_at = $2 WHERE org_id = $1 AND revoked_at IS NULL
           RETURNING id`,
          [orgId, clock.now()],
        );
        const members = await tx.query<{ person_id: string }>(
          'DELETE FROM memberships WHERE org_id = $1 RETURNING person_id',
          [orgId],
        );
        await tx.query('DELETE FROM invitations WHERE org_id = $1', [orgId]);
        await enqueue(tx, OUTBOX_TABLE, [
          ...keys.rows.map((k) => {
            const message: KeyRevokedMessage = { key_id: k.id, org_id: orgId };
            return { subject: subjects.keyRevoked(orgId), payload: message };
          }),
          ...members.rows.map((m) => {
            const message: SessionRevokedMessage = { person_id: m.person_id };
            return { subject: subjects.sessionRevoked(m.person_id), payload: message };
          }),
        ]);
      });
    },

    /**
     * The last step of deleting an organization, after {@link closeOrg}: it and its keys go, and
     * its id is kept in `deleted_orgs`, for its audit entries.
     */
    async deleteOrg(orgId: string): Promise<void> {
      await withTx(pool, async (tx) => {
        await tx.query(
          `INSERT INTO deleted_orgs (id, deleted_at) SELECT id, $2 FROM orgs WHERE id = $1
           ON CONFLICT (id) DO NOTHING`,
          [orgId, clock.now()],
        );
        await tx.query('DELETE FROM api_keys WHERE org_id = $1', [orgId]);
        await tx.query('DELETE FROM memberships WHERE org_id = $1', [orgId]);
        await tx.query('DELETE FROM invitations WHERE org_id = $1', [orgId]);
        const org = await tx.query('DELETE FROM orgs WHERE id = $1', [orgId]);
        if (org.rowCount === 0) throw notFound('no such organization');
      });
    },

    /** The key with this hash and its organization's name, whatever its state. */
    async findKeyByHash(hash: Buffer): Promise<{ key: ApiKey; orgName: string } | undefined> {
      const { rows } = await pool.query<KeyRow & { org_name: string }>(
        `SELECT k.id, k.org_id, k.hint, k.name, k.live, k.scopes, k.allowed_ips, k.expires_at,
                k.created_at, k.revoked_at, o.name AS org_name
         FROM api_keys k JOIN orgs o ON o.id = k.org_id
         WHERE k.key_hash = $1`,
        [hash],
      );
      const row = rows[0];
      return row ? { key: toKey(row), orgName: row.org_name } : undefined;
    },
  };
}

export type AccountsStore = ReturnType<typeof createAccountsStore>;
