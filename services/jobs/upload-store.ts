/**
 * Uploads: documents sent on their own (`POST /v1/uploads`) for jobs to print later. Their bytes
 * are in the object store; a row here records them, within the organization's quota.
 */
import type pg from 'pg';
import type { Upload } from '../../gen/spool/v1/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { SpoolError } from '../../lib/errors.js';

const UPLOAD_COLUMNS = 'id, org_id, content_type, size, sha256, created_at, deleted_at';

interface UploadRow {
  id: string;
  org_id: string;
  content_type: string;
  size: string;
  sha256: string;
  created_at: Date;
  deleted_at: Date | null;
}

function toUpload(row: UploadRow): Upload {
  return {
    id: row.id,
    orgId: row.org_id,
    contentType: row.content_type,
    size: Number(row.size),
    sha256: row.sha256,
    createdAt: row.created_at,
  };
}

export interface UploadStore {
  /**
   * Records an upload, if the organization's uploads not yet past retention leave room for it in
   * `quotaBytes`; else `413 payload_too_large` saying how much they hold. Uploads recorded at
   * the same moment may each see the other's room.
   */
  createUpload(upload: Omit<Upload, 'createdAt'>, quotaBytes: number): Promise<Upload>;
  /** Removes the row of an upload whose bytes could not be stored. */
  dropUpload(orgId: string, id: string): Promise<void>;
  /** An upload of the organization; 410 once it is past retention. */
  getUpload(orgId: string, id: string): Promise<Upload>;
}

export function createUploadStore(pool: pg.Pool, clock: Clock): UploadStore {
  return {
    async createUpload(upload, quotaBytes) {
      const { rows } = await pool.query<UploadRow & { held: string }>(
        `WITH held AS (
           SELECT COALESCE(sum(size), 0) AS bytes FROM uploads
           WHERE org_id = $2::UUID AND deleted_at IS NULL
         ), added AS (
           INSERT INTO uploads (id, org_id, content_type, size, sha256, created_at)
           SELECT $1::UUID, $2::UUID, $3::TEXT, $4::INT8, $5::TEXT, $6::TIMESTAMPTZ
           FROM held WHERE held.bytes + $4::INT8 <= $7::INT8
           RETURNING ${UPLOAD_COLUMNS}
         )
         SELECT added.*, held.bytes AS held FROM held LEFT JOIN added ON true`,
        [
          upload.id,
          upload.orgId,
          upload.contentType,
          upload.size,
          upload.sha256,
          clock.now(),
          quotaBytes,
        ],
      );
      const row = rows[0] as UploadRow & { held: string };
      if (!row.id) {
        throw new SpoolError(
          'payload_too_large',
          `the organization's uploads hold ${row.held} bytes, and this one (${upload.size}) would pass its ${quotaBytes}: use them in jobs and let them pass retention, or send the document with the job`,
        );
      }
      return toUpload(row);
    },

    async dropUpload(orgId, id) {
      await pool.query('DELETE FROM uploads WHERE org_id = $1 AND id = $2', [orgId, id]);
    },

    async getUpload(orgId, id) {
      const { rows } = await pool.query<UploadRow>(
        `SELECT ${UPLOAD_COLUMNS} FROM uploads WHERE org_id = $1 AND id = $2`,
        [orgId, id],
      );
      const row = rows[0];
      if (!row)
        throw new SpoolError('invalid', 'upload_id names no upload of this organization', {
          param: 'content.upload_id',
        });
      if (row.deleted_at)
        throw new SpoolError('content_deleted', 'the upload is past retention and was deleted');
      return toUpload(row);
    },
  };
}
