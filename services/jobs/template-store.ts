/**
 * An organization's templates: documents with fields filled in at print time (content.ts renders
 * them).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { ListTemplatesResponse, Template, TemplateField } from '../../gen/spool/v1/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { notFound } from '../../lib/errors.js';
import { listOldestFirst } from '../../lib/paging.js';
import { camelRow } from '../../lib/rows.js';

// Columns are named rather than `*`: statements are prepared (lib/db.ts), and a prepared `*` fails
// once a migration adds a column.
const TEMPLATE_COLUMNS = 'id, org_id, name, kind, body, fields, created_at';

interface TemplateRow {
  id: string;
  org_id: string;
  name: string;
  kind: string;
  body: string;
  fields: TemplateField[];
  created_at: Date;
}

/** Every column of a template is a rename of its field. */
const toTemplate = (row: TemplateRow): Template => camelRow(row);

export interface TemplateStore {
  createTemplate(t: Omit<Template, 'id' | 'createdAt'>): Promise<Template>;
  /** The organization's template, or `undefined` when it has none of that id. */
  getTemplate(orgId: string, id: string): Promise<Template | undefined>;
  /** A page of the organization's templates, oldest first. */
  listTemplates(orgId: string, limit: number, cursor: string): Promise<ListTemplatesResponse>;
  updateTemplate(t: Omit<Template, 'createdAt'>): Promise<Template>;
  deleteTemplate(orgId: string, id: string): Promise<void>;
}

export function createTemplateStore(pool: pg.Pool, clock: Clock): TemplateStore {
  return {
    async createTemplate(t) {
      const { rows } = await pool.query<TemplateRow>(
        `INSERT INTO templates (id, org_id, name, kind, body, fields, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${TEMPLATE_COLUMNS}`,
        [randomUUID(), t.orgId, t.name, t.kind, t.body, JSON.stringify(t.fields), clock.now()],
      );
      return toTemplate(rows[0] as TemplateRow);
    },

    async getTemplate(orgId, id) {
      const { rows } = await pool.query<TemplateRow>(
        `SELECT ${TEMPLATE_COLUMNS} FROM templates WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      return rows[0] ? toTemplate(rows[0]) : undefined;
    },

    async listTemplates(orgId, limit, cursor) {
      const { items, nextCursor } = await listOldestFirst<TemplateRow>(
        pool,
        {
          select: `SELECT ${TEMPLATE_COLUMNS} FROM templates`,
          where: 'org_id = $1',
          params: [orgId],
        },
        limit,
        cursor,
      );
      return { items: items.map(toTemplate), nextCursor };
    },

    async updateTemplate(t) {
      const { rows } = await pool.query<TemplateRow>(
        `UPDATE templates SET name = $3, kind = $4, body = $5, fields = $6
         WHERE org_id = $1 AND id = $2 RETURNING ${TEMPLATE_COLUMNS}`,
        [t.orgId, t.id, t.name, t.kind, t.body, JSON.stringify(t.fields)],
      );
      if (!rows[0]) throw notFound('no such template');
      return toTemplate(rows[0]);
    },

    async deleteTemplate(orgId, id) {
      const res = await pool.query('DELETE FROM templates WHERE org_id = $1 AND id = $2', [
        orgId,
        id,
      ]);
      if (res.rowCount === 0) throw notFound('no such template');
    },
  };
}
