/**
 * `Idempotency-Key` records (DESIGN §4). The gateway claims a key before a POST does its work and
 * records the answer after it; a request that creates a job completes its claim in the job's own
 * transaction, so that once the job exists a retry with the same key finds it, whatever happened
 * to the first answer on its way back.
 *
 * Each claim has an id. A claim left unfinished (its gateway or service died mid-request) is stale
 * after {@link STALE_CLAIM_MS}, and a retry then takes it over with a new id; the work of the old
 * claim can no longer complete it, and a job creation that still tries rolls back. So a retry with
 * the same key ends with exactly one job.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import { conflict, SpoolError } from '../../lib/errors.js';
import { sentKey } from '../../lib/idempotency-keys.js';
import { columns, type WriteBatch } from '../../lib/sql.js';

/** How long a key's record is kept and replayed. */
export const KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * After this long an unfinished claim is taken to be abandoned. It is well past the longest a
 * request can run (the gateway's deadline on a service call is seconds), so a live request is
 * never overtaken by its own retry.
 */
export const STALE_CLAIM_MS = 60_000;

/** The claim a request holds: its key and the claim's id. */
export interface Claim {
  key: string;
  claim: string;
}

export type ClaimResult =
  | { state: 'claimed'; status: 0; body: Buffer; claim: string }
  | { state: 'completed'; status: number; body: Buffer; claim: '' }
  | { state: 'in_progress'; status: 0; body: Buffer; claim: '' };

interface KeyRow {
  fingerprint: string;
  status: number;
  body: Buffer | null;
  created_at: Date;
}

/** The Idempotency-Key claims of an organization's requests (spec §4). */
export interface IdempotencyStore {
  /**
   * Claims `key` for a request with this fingerprint. A key seen within 24 hours with another
   * request is a 409 naming it; one whose request finished answers what it answered; one whose
   * request is still running is `in_progress` until its claim goes stale.
   */
  claim(orgId: string, key: string, fingerprint: string): Promise<ClaimResult>;
  /** Records the answer of a claimed request; a no-op once the claim is completed or taken over. */
  complete(orgId: string, claim: Claim, status: number, body: Buffer): Promise<void>;
  /** Frees a claim whose request failed without an answer worth keeping, so a retry does the work. */
  release(orgId: string, claim: Claim): Promise<void>;
}

export function createIdempotencyStore(pool: pg.Pool, clock: Clock): IdempotencyStore {
  return {
    async claim(orgId: string, key: string, fingerprint: string): Promise<ClaimResult> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const { rows } = await tx.query<KeyRow>(
          'SELECT fingerprint, status, body, created_at FROM idempotency_keys WHERE org_id = $1 AND key = $2',
          [orgId, key],
        );
        const row = rows[0];
        const age = row ? now.getTime() - row.created_at.getTime() : Number.POSITIVE_INFINITY;
        if (row && age < KEY_TTL_MS) {
          if (row.fingerprint !== fingerprint) {
            throw conflict(
              `the Idempotency-Key ${JSON.stringify(sentKey(key))} was used with another request`,
              'Idempotency-Key',
            );
          }
          if (row.status !== 0) {
            return {
              state: 'completed',
              status: row.status,
              body: row.body ?? Buffer.alloc(0),
              claim: '',
            };
          }
          if (age < STALE_CLAIM_MS) {
            return { state: 'in_progress', status: 0, body: Buffer.alloc(0), claim: '' };
          }
        }
        const claim = randomUUID();
        await tx.query(
          `INSERT INTO idempotency_keys (org_id, key, fingerprint, status, body, claim, created_at)
           VALUES ($1, $2, $3, 0, NULL, $4, $5)
           ON CONFLICT (org_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
             status = 0, body = NULL, claim = excluded.claim, job_id = NULL,
             created_at = excluded.created_at`,
          [orgId, key, fingerprint, claim, now],
        );
        return { state: 'claimed', status: 0, body: Buffer.alloc(0), claim };
      });
    },

    async complete(orgId: string, c: Claim, status: number, body: Buffer): Promise<void> {
      await withTx(pool, (tx) =>
        tx.query(
          `UPDATE idempotency_keys SET status = $4, body = $5
           WHERE org_id = $1 AND key = $2 AND claim = $3 AND status = 0`,
          [orgId, c.key, c.claim, status, body],
        ),
      );
    },

    async release(orgId: string, c: Claim): Promise<void> {
      await withTx(pool, (tx) =>
        tx.query(
          'DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2 AND claim = $3 AND status = 0',
          [orgId, c.key, c.claim],
        ),
      );
    },
  };
}

/** A claim a creation completes: its job, and the answer the gateway gives (`201 {job}`). */
export interface ClaimCompletion {
  orgId: string;
  claim: Claim;
  jobId: string;
  body: Buffer;
}

/**
 * Adds to a group of creations the completion of their requests' claims, all in one write (its
 * text the same whatever their number). Answers the name of the write, whose rows hold the
 * `job_id` of each claim that was still its request's own.
 */
export function completeClaimsIn(batch: WriteBatch, claims: readonly ClaimCompletion[]): string {
  const values = columns(claims, (c) => [c.orgId, c.claim.key, c.claim.claim, c.jobId, c.body]);
  return batch.add(
    `UPDATE idempotency_keys AS k SET status = 201, body = v.body, job_id = v.job_id
     FROM (${batch.rows(values, ['UUID', 'TEXT', 'UUID', 'UUID', 'BYTEA'])})
       AS v (org_id, key, claim, job_id, body)
     WHERE k.org_id = v.org_id AND k.key = v.key AND k.claim = v.claim AND k.status = 0
     RETURNING k.job_id`,
  );
}

/** The error a creation gets when its claim was taken over by a retry after going stale. */
export function claimLost(key: string): SpoolError {
  return new SpoolError(
    'conflict',
    `the request with the Idempotency-Key ${JSON.stringify(sentKey(key))} took too long and a retry took it over; send the retry again to get its answer`,
    { param: 'Idempotency-Key' },
  );
}
