/**
 * A platform's child organizations (DESIGN §5): organizations that name a parent, one level only.
 * A child is an organization like any other (its own keys, stations, jobs); what is kept here is
 * only which parent it has, and the parent's reference for it. Every read is scoped by the parent.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Org } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, notFound, orgDeleting } from '../../lib/errors.js';
import { listOldestFirst } from '../../lib/paging.js';
import { ORG_COLUMNS, type OrgRow, toOrg } from './org-store.js';

export interface NewChildOrg {
  parentId: string;
  name: string;
  /** Empty for none. */
  reference: string;
}

export interface ChildOrgStore {
  /**
   * Creates a child of `parentId`: 404 for an unknown parent, 409 for a parent that is itself a
   * child (one level only) or whose deletion began.
   */
  createChildOrg(child: NewChildOrg): Promise<Org>;
  /** The parent's children oldest first; a non-empty `reference` keeps those with exactly it. */
  listChildOrgs(
    parentId: string,
    reference: string,
    limit: number,
    cursor: string,
  ): Promise<{ items: Org[]; nextCursor: string }>;
  /** One child of the parent; 404 alike for an unknown organization and another's. */
  getChildOrg(parentId: string, childId: string): Promise<Org>;
}

export function createChildOrgStore(pool: pg.Pool, clock: Clock): ChildOrgStore {
  return {
    async createChildOrg({ parentId, name, reference }) {
      return withTx(pool, async (tx) => {
        const { rows } = await tx.query<{ parent_id: string | null; deleting_since: Date | null }>(
          'SELECT parent_id, deleting_since FROM orgs WHERE id = $1',
          [parentId],
        );
        const parent = rows[0];
        if (!parent) throw notFound('no such organization');
        if (parent.deleting_since) throw orgDeleting(parentId);
        if (parent.parent_id !== null) {
          throw conflict(
            'this organization is a child organization, and a child cannot have children of its own: one level only',
          );
        }
        const inserted = await tx.query<OrgRow>(
          `INSERT INTO orgs (id, name, created_at, parent_id, reference)
           VALUES ($1, $2, $3, $4, $5) RETURNING ${ORG_COLUMNS}`,
          [randomUUID(), name, clock.now(), parentId, reference],
        );
        return toOrg(inserted.rows[0] as OrgRow);
      });
    },

    async listChildOrgs(parentId, reference, limit, cursor) {
      const { items, nextCursor } = await listOldestFirst<OrgRow>(
        pool,
        {
          select: `SELECT ${ORG_COLUMNS} FROM orgs`,
          where: "parent_id = $1 AND ($2::TEXT = '' OR reference = $2::TEXT)",
          params: [parentId, reference],
        },
        limit,
        cursor,
      );
      return { items: items.map(toOrg), nextCursor };
    },

    async getChildOrg(parentId, childId) {
      const { rows } = await pool.query<OrgRow>(
        `SELECT ${ORG_COLUMNS} FROM orgs WHERE id = $1 AND parent_id = $2`,
        [childId, parentId],
      );
      if (!rows[0]) throw notFound('no such child organization');
      return toOrg(rows[0]);
    },
  };
}
