/**
 * The claim of due deliveries, within a worker round's transaction (rounds.ts): the one query
 * that serves every organization (it then works by id on the rows it locked).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { queryThenCommit } from '../../lib/db.js';
import { columns } from '../../lib/sql.js';
import type { TraceCarrier } from '../../lib/tracing.js';
import type { SecretBox } from './crypto.js';
import { type SealedSecrets, signingSecrets } from './endpoint-rows.js';
import { claimStep } from './policy.js';
/** A delivery a worker holds: what it needs to send one attempt and to record it. */
export interface ClaimedDelivery {
  id: string;
  orgId: string;
  endpointId: string;
  eventType: string;
  url: string;
  body: Buffer;
  /** Secrets that sign now, current first. */
  secrets: string[];
  /** The attempt's number over every round, and within the current round. */
  attempt: number;
  roundAttempt: number;
  claim: string;
  startedAt: Date;
  /** The trace context of the event's cause. */
  traceContext: TraceCarrier;
}

export interface ClaimCandidate {
  id: string;
  orgId: string;
  endpointId: string;
}

export interface ClaimInput {
  now: Date;
  /** When the claim lapses if its worker never records the attempt. */
  leaseUntil: Date;
  /** Candidates read at most. */
  limit: number;
  /** Endpoints not to claim for (at their concurrency cap in this worker). */
  exclude: string[];
  /** Organizations not to claim for (at their concurrency cap in this worker). */
  excludeOrgs: string[];
  /** Chooses which candidates to claim; must not change anything (a transaction may re-run). */
  pick(candidates: ClaimCandidate[]): string[];
  /** Attempts per round. */
  maxAttempts: number;
  /**
   * The worker has reason to think deliveries are due (it was told of new ones, or its last round
   * filled its room), so the claim skips the read that first checks.
   */
  expectWork?: boolean;
}

/**
 * Claims due deliveries, within a worker round's transaction: one statement locks due rows
 * that no other worker holds (SKIP LOCKED) and reads their endpoints with them; the worker picks
 * among them; rows it may not send (endpoint disabled, no attempts left in the round) are ended
 * in one statement; the picked rows get `next_attempt_at` pushed to the lease's end with the
 * claim's id and their attempt counted, before anything is sent (the claim stands for the
 * attempt in flight; its own row is written with its outcome). A row whose earlier claim lapsed
 * (its worker died) has that attempt written as `abandoned`; it counts as an attempt made. Its
 * last statement carries the transaction's COMMIT.
 */
export async function claimDue(
  tx: pg.PoolClient,
  input: ClaimInput,
  box: SecretBox,
): Promise<ClaimedDelivery[]> {
  const { now } = input;
  const { rows: candidates } = await tx.query<{
    id: string;
    org_id: string;
    endpoint_id: string;
    claim: string | null;
    round_attempts: number;
    url: string | null;
    enabled: boolean | null;
    disabled_reason: string | null;
    secret: Buffer | null;
    previous_secret: Buffer | null;
    previous_secret_expires_at: Date | null;
  }>(
    `SELECT d.id, d.org_id, d.endpoint_id, d.claim, d.round_attempts, e.url, e.enabled,
       e.disabled_reason, e.secret, e.previous_secret, e.previous_secret_expires_at
     FROM webhook_deliveries AS d
     LEFT JOIN webhook_endpoints AS e ON e.org_id = d.org_id AND e.id = d.endpoint_id
     WHERE d.state = 'pending' AND d.next_attempt_at <= $1
       AND NOT (d.endpoint_id = ANY($2::UUID[])) AND NOT (d.org_id = ANY($4::UUID[]))
     ORDER BY d.next_attempt_at LIMIT $3
     FOR UPDATE OF d SKIP LOCKED`,
    [now, input.exclude, input.limit, input.excludeOrgs],
  );
  if (candidates.length === 0) return [];
  const picked = new Set(
    input.pick(candidates.map((c) => ({ id: c.id, orgId: c.org_id, endpointId: c.endpoint_id }))),
  );
  const rows = candidates.filter((c) => picked.has(c.id));
  if (rows.length === 0) return [];

  const lapsed = rows.filter((r) => r.claim !== null);
  if (lapsed.length > 0) {
    // Its number is the delivery's count of attempts; an outcome written meanwhile stays.
    await tx.query(
      `INSERT INTO webhook_attempts (id, org_id, delivery_id, number, started_at, outcome, error)
       SELECT gen_random_uuid(), d.org_id, d.id, d.attempts,
         COALESCE(d.last_attempt_at, d.created_at), 'abandoned',
         'no outcome recorded: the worker sending it stopped; it may have arrived'
       FROM webhook_deliveries AS d
       WHERE d.id = ANY($1::UUID[]) AND d.attempts > 0
       ON CONFLICT (delivery_id, number) DO NOTHING`,
      [lapsed.map((r) => r.id)],
    );
  }

  const ending: Array<{ orgId: string; id: string; notice: string }> = [];
  const sending: typeof rows = [];
  for (const row of rows) {
    const endpoint = { enabled: row.enabled, disabledReason: row.disabled_reason };
    const step = claimStep(row.round_attempts, endpoint, input.maxAttempts);
    if (step.send) sending.push(row);
    else ending.push({ orgId: row.org_id, id: row.id, notice: step.notice });
  }
  // Written in the same round trip as the claim, or alone when nothing is to be sent.
  let ended: Promise<unknown> = Promise.resolve();
  if (ending.length > 0) {
    ended = tx.query(
      `UPDATE webhook_deliveries AS d SET state = 'failed', next_attempt_at = NULL,
         claim = NULL, finished_at = $4, notice = v.notice
       FROM unnest($1::UUID[], $2::UUID[], $3::TEXT[]) AS v (org_id, id, notice)
       WHERE d.org_id = v.org_id AND d.id = v.id`,
      [...columns(ending, (end) => [end.orgId, end.id, end.notice]), now],
    );
  }
  if (sending.length === 0) {
    await ended;
    return [];
  }

  // The claim, sent with the COMMIT.
  const claim = randomUUID();
  const [{ rows: claimed }] = await Promise.all([
    queryThenCommit<{
      id: string;
      org_id: string;
      endpoint_id: string;
      event_type: string;
      body: Buffer;
      attempts: number;
      round_attempts: number;
      trace_context: TraceCarrier;
    }>(
      tx,
      `UPDATE webhook_deliveries SET attempts = attempts + 1,
         round_attempts = round_attempts + 1, claim = $2, next_attempt_at = $3,
         last_attempt_at = $4
       WHERE id = ANY($1::UUID[])
       RETURNING id, org_id, endpoint_id, event_type, body, attempts, round_attempts,
         trace_context`,
      [sending.map((r) => r.id), claim, input.leaseUntil, now],
    ),
    ended,
  ]);
  const endpointOf = new Map(sending.map((r) => [r.id, r]));
  const out: ClaimedDelivery[] = [];
  for (const row of claimed) {
    const endpoint = endpointOf.get(row.id) as (typeof sending)[number];
    const secrets = signingSecrets(box, endpoint as SealedSecrets, row.endpoint_id, now);
    out.push({
      id: row.id,
      orgId: row.org_id,
      endpointId: row.endpoint_id,
      eventType: row.event_type,
      url: endpoint.url as string,
      body: row.body,
      secrets,
      attempt: row.attempts,
      roundAttempt: row.round_attempts,
      claim,
      startedAt: now,
      traceContext: row.trace_context,
    });
  }
  return out;
}
