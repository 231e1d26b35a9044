/**
 * Documents past retention (sweeper.ts): which jobs' documents and which uploads are due to go,
 * and marking them gone once their objects are deleted. The job and upload records stay.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';

export interface RetentionStore {
  /** Jobs finished before `before` whose documents are still kept. */
  documentsToDelete(before: Date, limit: number): Promise<Array<{ id: string; inline: boolean }>>;
  /** Marks the jobs' documents deleted, dropping those kept with the jobs. */
  markDocumentsDeleted(ids: string[]): Promise<void>;
  /** Uploads made before `before` that are still kept. */
  uploadsToDelete(before: Date, limit: number): Promise<string[]>;
  markUploadsDeleted(ids: string[]): Promise<void>;
}

export function createRetentionStore(pool: pg.Pool, clock: Clock): RetentionStore {
  return {
    async documentsToDelete(before, limit) {
      const { rows } = await pool.query<{ id: string; inline: boolean }>(
        `SELECT id, document IS NOT NULL AS inline FROM jobs
         WHERE finished_at <= $1 AND document_deleted_at IS NULL
         ORDER BY finished_at LIMIT $2`,
        [before, limit],
      );
      return rows;
    },

    async markDocumentsDeleted(ids) {
      if (ids.length === 0) return;
      await pool.query(
        'UPDATE jobs SET document_deleted_at = $2, document = NULL WHERE id = ANY($1)',
        [ids, clock.now()],
      );
    },

    async uploadsToDelete(before, limit) {
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM uploads WHERE created_at <= $1 AND deleted_at IS NULL
         ORDER BY created_at LIMIT $2`,
        [before, limit],
      );
      return rows.map((r) => r.id);
    },

    async markUploadsDeleted(ids) {
      if (ids.length === 0) return;
      await pool.query('UPDATE uploads SET deleted_at = $2 WHERE id = ANY($1)', [ids, clock.now()]);
    },
  };
}
