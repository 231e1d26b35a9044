/**
 * Organizations: their creation, listing, renaming, and the two steps of their deletion. A
 * platform's children are organizations too (child-org-store.ts); one with children is not
 * deleted before them.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Org } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, notFound } from '../../lib/errors.js';
import { listOldestFirst } from '../../lib/paging.js';
import { camelRow } from '../../lib/rows.js';
import { announce, keyRevoked, requireOpenOrg, sessionsRevoked } from './outbox.js';

export interface OrgRow {
  id: string;
  name: string;
  created_at: Date;
  deleting_since: Date | null;
  parent_id: string | null;
  reference: string;
}

export const ORG_COLUMNS = 'id, name, created_at, deleting_since, parent_id, reference';

export function toOrg(row: OrgRow): Org {
  return {
    ...camelRow(row),
    deletingSince: row.deleting_since ?? undefined,
    parentId: row.parent_id ?? '',
  };
}

/** Children an organization's refused deletion names at most. */
const CHILDREN_NAMED = 5;

/**
 * Refuses, in the caller's transaction, to close an organization that has children: deleting a
 * platform's organization would otherwise take its customers' with it, or leave them orphaned.
 */
async function requireNoChildren(tx: pg.PoolClient, orgId: string): Promise<void> {
  const { rows } = await tx.query<{ id: string; n: string }>(
    `SELECT id, count(*) OVER () AS n FROM orgs WHERE parent_id = $1
     ORDER BY created_at, id LIMIT ${CHILDREN_NAMED}`,
    [orgId],
  );
  if (rows.length === 0) return;
  const total = Number(rows[0]?.n ?? rows.length);
  const more = total > rows.length ? ` and ${total - rows.length} more` : '';
  throw conflict(
    `the organization has ${total} child organization${total === 1 ? '' : 's'} (${rows
      .map((r) => r.id)
      .join(', ')}${more}); delete them first`,
  );
}

export interface OrgStore {
  createOrg(name: string): Promise<Org>;
  /**
   * Organizations oldest first; a non-empty `query` keeps names containing it, ignoring case,
   * and `deleting` those a deletion left part-deleted.
   */
  listOrgs(
    query: string,
    deleting: boolean,
    limit: number,
    cursor: string,
  ): Promise<{ items: Org[]; nextCursor: string }>;
  getOrg(orgId: string): Promise<Org>;
  /** Renames the organization; its members' sessions, which carry the name, are looked up anew. */
  renameOrg(orgId: string, name: string): Promise<Org>;
  /**
   * The first step of deleting an organization: it is marked as being deleted, so that nothing
   * can be added to it any more, and every key revoked, every invitation and membership gone,
   * each announced so gateways drop cached keys and sessions at once. The organization stays,
   * for the other services to delete their share; repeatable (the first time is kept). One that
   * has child organizations is refused (409) and left as it was.
   */
  closeOrg(orgId: string): Promise<void>;
  /**
   * The last step of deleting an organization, after {@link closeOrg}: it and its keys go, and
   * its id is kept in `deleted_orgs`, for its audit entries.
   */
  deleteOrg(orgId: string): Promise<void>;
}

export function createOrgStore(pool: pg.Pool, clock: Clock): OrgStore {
  return {
    async createOrg(name) {
      const { rows } = await pool.query<OrgRow>(
        `INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3) RETURNING ${ORG_COLUMNS}`,
        [randomUUID(), name, clock.now()],
      );
      return toOrg(rows[0] as OrgRow);
    },

    async listOrgs(query, deleting, limit, cursor) {
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

    async getOrg(orgId) {
      const { rows } = await pool.query<OrgRow>(`SELECT ${ORG_COLUMNS} FROM orgs WHERE id = $1`, [
        orgId,
      ]);
      if (!rows[0]) throw notFound('no such organization');
      return toOrg(rows[0]);
    },

    async renameOrg(orgId, name) {
      return withTx(pool, async (tx) => {
        await requireOpenOrg(tx, orgId);
        const { rows } = await tx.query<OrgRow>(
          `UPDATE orgs SET name = $2 WHERE id = $1 RETURNING ${ORG_COLUMNS}`,
          [orgId, name],
        );
        const members = await tx.query<{ person_id: string }>(
          'SELECT person_id FROM memberships WHERE org_id = $1',
          [orgId],
        );
        await announce(
          tx,
          members.rows.map((m) => sessionsRevoked(m.person_id)),
        );
        return toOrg(rows[0] as OrgRow);
      });
    },

    async closeOrg(orgId) {
      await withTx(pool, async (tx) => {
        await requireNoChildren(tx, orgId);
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
        await announce(tx, [
          ...keys.rows.map((k) => keyRevoked(orgId, k.id)),
          ...members.rows.map((m) => sessionsRevoked(m.person_id)),
        ]);
      });
    },

    async deleteOrg(orgId) {
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
  };
}
