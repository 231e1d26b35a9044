/**
 * The webhooks tables: endpoints, deliveries (with the retry schedule in `next_attempt_at`) and
 * attempts. Every query on an organization's data is scoped by `org_id`; the worker's claim, which
 * serves every organization, is the one query that is not (it then works by id on the rows it
 * locked); the recording of outcomes names each row by organization and id. Secrets are sealed
 * before they are written and opened only to sign an attempt.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type {
  WebhookAttempt,
  WebhookDelivery,
  WebhookEndpoint,
} from '../../gen/spool/v1/webhooks.js';
import type { Clock } from '../../lib/clock.js';
import { queryThenCommit, withTx } from '../../lib/db.js';
import { conflict, notFound } from '../../lib/errors.js';
import { deliveryBody, type SpoolEvent } from '../../lib/events.js';
import { decodeCursor, listOldestFirst, page } from '../../lib/paging.js';
import { columns } from '../../lib/sql.js';
import { rfc3339 } from '../../lib/time.js';
import type { TraceCarrier } from '../../lib/tracing.js';
import type { SecretBox } from './crypto.js';

/** Spec §8: at most 20 endpoints per organization. */
export const MAX_ENDPOINTS_PER_ORG = 20;

/** Event types an endpoint subscribes to; `*` is every type, including ones added later. */
export const ALL_EVENTS = '*';

export type DeliveryState = 'pending' | 'succeeded' | 'failed';
export type AttemptOutcome = 'in_flight' | 'succeeded' | 'failed' | 'abandoned';
export type DisabledReason = 'operator' | 'gone' | 'failing';

interface EndpointRow {
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

const ENDPOINT_COLUMNS = `id, org_id, url, events, description, enabled, disabled_reason, disabled_at,
  secret, previous_secret, previous_secret_expires_at, secret_rotated_at, failing_since,
  created_at, updated_at`;

interface DeliveryRow {
  id: string;
  org_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  state: DeliveryState;
  attempts: number;
  round_attempts: number;
  next_attempt_at: Date | null;
  claim: string | null;
  last_attempt_at: Date | null;
  last_status_code: number;
  notice: string;
  created_at: Date;
  finished_at: Date | null;
  /** 0 for a delivery that was never sendable (its body was over the size cap). */
  body_size: number;
}

const DELIVERY_COLUMNS = `id, org_id, endpoint_id, event_id, event_type, state, attempts,
  round_attempts, next_attempt_at, claim, last_attempt_at, last_status_code, notice, created_at,
  finished_at, length(body) AS body_size`;

/** An endpoint's sealed secrets, as read with it. */
interface SealedSecrets {
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_expires_at: Date | null;
}

interface AttemptRow {
  delivery_id: string;
  number: number;
  started_at: Date;
  outcome: AttemptOutcome;
  status_code: number;
  error: string;
  duration_ms: number;
  response_body: string;
}

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
 * A worker's hand-over (worker.ts `handover`): the fan-out claims for it, as it adds them, the
 * deliveries its `pick` chooses, so they are sent without a round claiming them.
 */
export interface Handover {
  now: Date;
  leaseUntil: Date;
  claim: string;
  /** Chooses, oldest first, which new deliveries to claim; may be called again if the tx re-runs. */
  pick(candidates: ClaimCandidate[]): string[];
}

/** What a fan-out added: per event, its deliveries to send; and those it claimed. */
export interface FannedOut {
  added: number[];
  /** Deliveries claimed for the hand-over's worker, to send now. */
  claimed: ClaimedDelivery[];
  /** The endpoint of each delivery added due and not claimed, for rounds to claim. */
  queued: Array<{ endpointId: string; orgId: string }>;
}

export interface AttemptRecord {
  succeeded: boolean;
  statusCode: number;
  error: string;
  durationMs: number;
  responseBody: string;
}

/** One attempt's outcome, to record. */
export interface AttemptOutcomeInput {
  claimed: ClaimedDelivery;
  result: AttemptRecord;
  /** When to try again after a failure; undefined when the round has no attempts left. */
  retryAt: Date | undefined;
}

export interface RecordInput {
  now: Date;
  /** How long an endpoint may fail every attempt before it is disabled. */
  failingDisableMs: number;
}

export type Recorded = 'succeeded' | 'retry' | 'failed' | 'lost';

/** What became of a round's outcomes, in their order, and the organizations whose endpoints were disabled. */
export interface Settled {
  recorded: Recorded[];
  disabledIn: string[];
}

/** A worker round: its outcomes settled, and the deliveries it claimed. */
export interface Round extends Settled {
  claimed: ClaimedDelivery[];
}

export interface EndpointChanges {
  url?: string | undefined;
  events?: string[] | undefined;
  enabled?: boolean | undefined;
  description?: string | undefined;
}

function toEndpoint(row: EndpointRow, now: Date): WebhookEndpoint {
  const graceOpen =
    row.previous_secret !== null &&
    row.previous_secret_expires_at !== null &&
    row.previous_secret_expires_at.getTime() > now.getTime();
  return {
    id: row.id,
    orgId: row.org_id,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at ?? undefined,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    secretRotatedAt: row.secret_rotated_at ?? undefined,
    previousSecretExpiresAt: graceOpen ? (row.previous_secret_expires_at ?? undefined) : undefined,
    failingSince: row.failing_since ?? undefined,
  };
}

function toAttempt(row: AttemptRow): WebhookAttempt {
  return {
    number: row.number,
    at: row.started_at,
    outcome: row.outcome,
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    responseBody: row.response_body,
  };
}

/**
 * A delivery's attempts as its log shows them. An attempt in flight has no row of its own: the
 * claim on the delivery stands for it (its number is the delivery's `attempts`, its start
 * `last_attempt_at`) until its outcome is written, or until a later claim finds the claim lapsed
 * and writes it `abandoned`.
 */
function withAttemptInFlight(row: DeliveryRow, attempts: AttemptRow[]): AttemptRow[] {
  if (row.claim === null || row.attempts === 0) return attempts;
  if (attempts.some((a) => a.number === row.attempts)) return attempts;
  const inFlight: AttemptRow = {
    delivery_id: row.id,
    number: row.attempts,
    started_at: row.last_attempt_at ?? row.created_at,
    outcome: 'in_flight',
    status_code: 0,
    error: '',
    duration_ms: 0,
    response_body: '',
  };
  return [...attempts, inFlight];
}

function toDelivery(row: DeliveryRow, attempts: AttemptRow[], payload = ''): WebhookDelivery {
  return {
    id: row.id,
    orgId: row.org_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    state: row.state,
    attemptCount: row.attempts,
    // While an attempt is in flight the column holds the claim's lease, not a schedule.
    nextAttemptAt: row.claim === null ? (row.next_attempt_at ?? undefined) : undefined,
    lastAttemptAt: row.last_attempt_at ?? undefined,
    lastStatusCode: row.last_status_code,
    notice: row.notice,
    createdAt: row.created_at,
    finishedAt: row.finished_at ?? undefined,
    payload,
    attempts: withAttemptInFlight(row, attempts).map(toAttempt),
  };
}

const DISABLED_NOTICE: Record<DisabledReason, string> = {
  operator: 'not sent again: the endpoint was disabled',
  gone: 'not sent again: the endpoint answered 410 Gone and was disabled',
  failing: 'not sent again: the endpoint was disabled after failing every attempt for 5 days',
};

const LAST_ATTEMPT_ABANDONED =
  'no attempts left: the outcome of the last one is unknown, as the worker sending it stopped';

/**
 * Disables an endpoint and ends its pending deliveries as failed, except one whose attempt is in
 * flight: its worker ends it when it records the outcome.
 */
async function disable(
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

async function attemptsOf(
  q: pg.Pool | pg.PoolClient,
  orgId: string,
  deliveryIds: string[],
): Promise<Map<string, AttemptRow[]>> {
  const byDelivery = new Map<string, AttemptRow[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const { rows } = await q.query<AttemptRow>(
    `SELECT delivery_id, number, started_at, outcome, status_code, error, duration_ms, response_body
     FROM webhook_attempts WHERE org_id = $1 AND delivery_id = ANY($2::UUID[])
     ORDER BY delivery_id, number`,
    [orgId, deliveryIds],
  );
  for (const row of rows) {
    const list = byDelivery.get(row.delivery_id) ?? [];
    list.push(row);
    byDelivery.set(row.delivery_id, list);
  }
  return byDelivery;
}

export function createWebhookStore(pool: pg.Pool, clock: Clock, box: SecretBox) {
  async function endpointRow(
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

  async function enabledEndpoint(
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

  async function deliveryRow(
    q: pg.Pool | pg.PoolClient,
    orgId: string,
    endpointId: string,
    deliveryId: string,
  ): Promise<DeliveryRow> {
    const { rows } = await q.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
       WHERE org_id = $1 AND endpoint_id = $2 AND id = $3`,
      [orgId, endpointId, deliveryId],
    );
    if (!rows[0]) throw notFound('no such delivery for this webhook endpoint');
    return rows[0];
  }

  /**
   * The secrets that sign an attempt of the endpoint now, current first. Opened through the box's
   * cache: a claim decrypts only a secret it has not seen.
   */
  function signingSecrets(sealed: SealedSecrets, endpointId: string, now: Date): string[] {
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
  async function claimIn(tx: pg.PoolClient, input: ClaimInput): Promise<ClaimedDelivery[]> {
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
      if (!row.enabled) {
        const reason = (row.disabled_reason || 'operator') as DisabledReason;
        ending.push({ orgId: row.org_id, id: row.id, notice: DISABLED_NOTICE[reason] });
      } else if (row.round_attempts >= input.maxAttempts) {
        ending.push({ orgId: row.org_id, id: row.id, notice: LAST_ATTEMPT_ABANDONED });
      } else {
        sending.push(row);
      }
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
      const secrets = signingSecrets(endpoint as SealedSecrets, row.endpoint_id, now);
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

  /** A page of endpoints matching `where`, oldest first. */
  async function endpointsWhere(
    where: string,
    params: unknown[],
    limit: number,
    cursor: string,
  ): Promise<{ items: WebhookEndpoint[]; nextCursor: string }> {
    const { items, nextCursor } = await listOldestFirst<EndpointRow>(
      pool,
      { select: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints`, where, params },
      limit,
      cursor,
    );
    const now = clock.now();
    return { items: items.map((r) => toEndpoint(r, now)), nextCursor };
  }

  /**
   * Records the outcomes of many attempts, within a worker round's transaction, in a few
   * statements whatever their number: one for the attempts' rows, one reading their endpoints, one
   * for the deliveries, one for endpoints whose failing streak began or ended (if any), and two per
   * endpoint disabled. Each outcome decides what follows as if recorded alone, in the order given:
   * success ends the delivery; a failure schedules the next attempt, or ends it when the round has
   * none left, when the endpoint answered 410 (the endpoint is disabled), or when the endpoint has
   * failed every attempt for `failingDisableMs` (disabled too); a delivery of an endpoint disabled
   * meanwhile ends with the reason. When a claim lapsed meanwhile, only the attempt's row is
   * written: whoever holds the delivery now decides. Answers what became of each, and the
   * organizations whose endpoints were disabled. A delivery appears at most once in `outcomes`.
   * With `commitWithLast`, its last statement carries the transaction's COMMIT.
   */
  async function recordIn(
    tx: pg.PoolClient,
    outcomes: readonly AttemptOutcomeInput[],
    input: RecordInput,
    commitWithLast: boolean,
  ): Promise<Settled> {
    const { now } = input;
    // The outcomes' writes and the read of their endpoints go out together, in one round trip. An
    // attempt's row is written once, with its outcome; a later claim may have found the claim
    // lapsed and written it `abandoned`, which the outcome, now known, replaces. A delivery
    // deleted meanwhile (with its endpoint, or its organization) gets no row.
    const attemptsWritten = tx.query(
      `INSERT INTO webhook_attempts
         (id, org_id, delivery_id, number, started_at, outcome, status_code, error, duration_ms,
          response_body)
       SELECT gen_random_uuid(), v.* FROM unnest($1::UUID[], $2::UUID[], $3::INT[],
           $4::TIMESTAMPTZ[], $5::TEXT[], $6::INT[], $7::TEXT[], $8::INT[], $9::TEXT[])
         AS v (org_id, delivery_id, number, started_at, outcome, status_code, error, duration_ms,
           response_body)
       WHERE EXISTS (SELECT 1 FROM webhook_deliveries AS d
         WHERE d.org_id = v.org_id AND d.id = v.delivery_id)
       ON CONFLICT (delivery_id, number) DO UPDATE SET outcome = excluded.outcome,
         status_code = excluded.status_code, error = excluded.error,
         duration_ms = excluded.duration_ms, response_body = excluded.response_body`,
      columns(outcomes, ({ claimed: c, result }) => [
        c.orgId,
        c.id,
        c.attempt,
        c.startedAt,
        result.succeeded ? 'succeeded' : 'failed',
        result.statusCode,
        result.error,
        result.durationMs,
        result.responseBody,
      ]),
    );

    const keyOf = (orgId: string, endpointId: string) => `${orgId}/${endpointId}`;
    const wanted = new Map<string, { orgId: string; endpointId: string }>();
    for (const { claimed: c } of outcomes) {
      wanted.set(keyOf(c.orgId, c.endpointId), { orgId: c.orgId, endpointId: c.endpointId });
    }
    const endpoints = new Map<
      string,
      {
        orgId: string;
        id: string;
        enabled: boolean;
        failingSince: Date | null;
        /** What `failing_since` was when read, to write only what changed. */
        readFailingSince: Date | null;
        disabledNow: DisabledReason | undefined;
      }
    >();
    {
      const [, { rows }] = await Promise.all([
        attemptsWritten,
        tx.query<{
          org_id: string;
          id: string;
          enabled: boolean;
          failing_since: Date | null;
        }>(
          `SELECT e.org_id, e.id, e.enabled, e.failing_since
           FROM webhook_endpoints AS e
           JOIN unnest($1::UUID[], $2::UUID[]) AS v (org_id, id)
             ON e.org_id = v.org_id AND e.id = v.id`,
          columns([...wanted.values()], (e) => [e.orgId, e.endpointId]),
        ),
      ]);
      for (const row of rows) {
        endpoints.set(keyOf(row.org_id, row.id), {
          orgId: row.org_id,
          id: row.id,
          enabled: row.enabled,
          failingSince: row.failing_since,
          readFailingSince: row.failing_since,
          disabledNow: undefined,
        });
      }
    }

    type Decision = { state: DeliveryState; notice: string | undefined } | undefined;
    const decisions: Decision[] = [];
    for (const { claimed: c, result, retryAt } of outcomes) {
      const endpoint = endpoints.get(keyOf(c.orgId, c.endpointId));
      if (!endpoint) {
        decisions.push(undefined);
        continue;
      }
      if (result.succeeded) {
        endpoint.failingSince = null;
        decisions.push({ state: 'succeeded', notice: undefined });
        continue;
      }
      const failingSince = endpoint.failingSince ?? c.startedAt;
      endpoint.failingSince = failingSince;
      let notice: string | undefined;
      if (endpoint.enabled && result.statusCode === 410) {
        await disable(tx, c.orgId, c.endpointId, 'gone', now);
        endpoint.enabled = false;
        endpoint.disabledNow = 'gone';
        notice = 'the endpoint answered 410 Gone, so it was disabled';
      } else if (
        endpoint.enabled &&
        now.getTime() - failingSince.getTime() >= input.failingDisableMs
      ) {
        await disable(tx, c.orgId, c.endpointId, 'failing', now);
        endpoint.enabled = false;
        endpoint.disabledNow = 'failing';
        notice = `every attempt to the endpoint since ${rfc3339(failingSince)} failed, so it was disabled`;
      } else if (!endpoint.enabled) {
        notice = DISABLED_NOTICE.operator;
      }
      decisions.push(
        notice === undefined && retryAt
          ? { state: 'pending', notice: undefined }
          : { state: 'failed', notice },
      );
    }
    // A retry scheduled before a later outcome of the batch disabled its endpoint ends as
    // disabling ends every pending delivery.
    outcomes.forEach(({ claimed: c }, i) => {
      const reason = endpoints.get(keyOf(c.orgId, c.endpointId))?.disabledNow;
      if (reason && decisions[i]?.state === 'pending') {
        decisions[i] = { state: 'failed', notice: DISABLED_NOTICE[reason] };
      }
    });

    const streaks = [...endpoints.values()].filter(
      (e) => e.failingSince?.getTime() !== e.readFailingSince?.getTime(),
    );
    if (streaks.length > 0) {
      await tx.query(
        `UPDATE webhook_endpoints AS e SET failing_since = v.failing_since
         FROM unnest($1::UUID[], $2::UUID[], $3::TIMESTAMPTZ[]) AS v (org_id, id, failing_since)
         WHERE e.org_id = v.org_id AND e.id = v.id`,
        columns(streaks, (e) => [e.orgId, e.id, e.failingSince]),
      );
    }

    const finished = new Set<string>();
    const decided = outcomes.flatMap((outcome, i) => {
      const decision = decisions[i];
      return decision ? [{ ...outcome, decision }] : [];
    });
    if (decided.length > 0) {
      const sql = `UPDATE webhook_deliveries AS d SET state = v.state,
           next_attempt_at = v.next_attempt_at, claim = NULL,
           last_status_code = v.status_code, finished_at = v.finished_at,
           notice = COALESCE(v.notice, d.notice)
         FROM unnest($1::UUID[], $2::UUID[], $3::UUID[], $4::TEXT[], $5::TIMESTAMPTZ[], $6::INT[],
             $7::TIMESTAMPTZ[], $8::TEXT[])
           AS v (org_id, id, claim, state, next_attempt_at, status_code, finished_at, notice)
         WHERE d.org_id = v.org_id AND d.id = v.id AND d.claim = v.claim
         RETURNING d.id`;
      const values = columns(decided, ({ claimed: c, result, retryAt, decision }) => [
        c.orgId,
        c.id,
        c.claim,
        decision.state,
        decision.state === 'pending' ? retryAt : null,
        result.statusCode,
        decision.state === 'pending' ? null : now,
        decision.notice ?? null,
      ]);
      const { rows } = commitWithLast
        ? await queryThenCommit<{ id: string }>(tx, sql, values)
        : await tx.query<{ id: string }>(sql, values);
      for (const row of rows) finished.add(row.id);
    }
    const recorded = outcomes.map(({ claimed: c }, i): Recorded => {
      const decision = decisions[i];
      if (!decision || !finished.has(c.id)) return 'lost';
      if (decision.state === 'pending') return 'retry';
      return decision.state;
    });
    const disabledIn = [
      ...new Set([...endpoints.values()].filter((e) => e.disabledNow).map((e) => e.orgId)),
    ];
    return { recorded, disabledIn };
  }

  return {
    /**
     * A delivery worker's round, in one SERIALIZABLE transaction: records the outcomes of the
     * attempts that finished since its last round, then claims due deliveries when given `claim`.
     * Recording and claiming in one transaction means a worker's two never fail each other's
     * serializable reads, and an attempt costs a share of one transaction rather than of two. With
     * no outcomes and no `expectWork`, an indexed read first checks that anything is due, so an
     * idle poll costs no transaction.
     */
    async recordAndClaim(
      outcomes: readonly AttemptOutcomeInput[],
      record: RecordInput,
      claim: ClaimInput | undefined,
    ): Promise<Round> {
      if (outcomes.length === 0) {
        if (!claim) return { recorded: [], disabledIn: [], claimed: [] };
        if (!claim.expectWork) {
          const { rows: due } = await pool.query(
            `SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= $1 LIMIT 1`,
            [claim.now],
          );
          if (due.length === 0) return { recorded: [], disabledIn: [], claimed: [] };
        }
      }
      return withTx(pool, async (tx) => {
        const settled =
          outcomes.length > 0
            ? await recordIn(tx, outcomes, record, claim === undefined)
            : { recorded: [], disabledIn: [] };
        const claimed = claim ? await claimIn(tx, claim) : [];
        return { ...settled, claimed };
      });
    },

    async createEndpoint(input: {
      orgId: string;
      url: string;
      events: string[];
      description: string;
      secret: string;
    }): Promise<WebhookEndpoint> {
      const id = randomUUID();
      const sealed = box.seal(input.secret, id);
      return withTx(pool, async (tx) => {
        const now = clock.now();
        // SERIALIZABLE makes two concurrent creations conflict, so the limit holds under races.
        const { rows: count } = await tx.query<{ n: string }>(
          'SELECT count(*) AS n FROM webhook_endpoints WHERE org_id = $1',
          [input.orgId],
        );
        if (Number(count[0]?.n ?? 0) >= MAX_ENDPOINTS_PER_ORG) {
          throw conflict(
            `an organization may have at most ${MAX_ENDPOINTS_PER_ORG} webhook endpoints; delete one first`,
          );
        }
        const { rows } = await tx.query<EndpointRow>(
          `INSERT INTO webhook_endpoints
             (id, org_id, url, events, description, enabled, secret, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, true, $6, $7, $7)
           RETURNING ${ENDPOINT_COLUMNS}`,
          [id, input.orgId, input.url, input.events, input.description, sealed, now],
        );
        return toEndpoint(rows[0] as EndpointRow, now);
      });
    },

    async listEndpoints(
      orgId: string,
      limit: number,
      cursor: string,
    ): Promise<{ items: WebhookEndpoint[]; nextCursor: string }> {
      return endpointsWhere('org_id = $1', [orgId], limit, cursor);
    },

    /**
     * Every organization's endpoints, oldest first; `failing`: those enabled whose attempts all
     * fail (failing_since is set), `disabled`: those disabled, by whoever or whatever.
     */
    async listAllEndpoints(
      state: '' | 'failing' | 'disabled',
      limit: number,
      cursor: string,
    ): Promise<{ items: WebhookEndpoint[]; nextCursor: string }> {
      return endpointsWhere(
        `($1::TEXT = ''
           OR ($1 = 'failing' AND enabled AND failing_since IS NOT NULL)
           OR ($1 = 'disabled' AND NOT enabled))`,
        [state],
        limit,
        cursor,
      );
    },

    async getEndpoint(orgId: string, endpointId: string): Promise<WebhookEndpoint> {
      return toEndpoint(await endpointRow(pool, orgId, endpointId), clock.now());
    },

    async updateEndpoint(
      orgId: string,
      endpointId: string,
      changes: EndpointChanges,
    ): Promise<WebhookEndpoint> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const row = await endpointRow(tx, orgId, endpointId, true);
        if (changes.enabled === false && row.enabled) {
          await disable(tx, orgId, endpointId, 'operator', now);
        }
        const { rows } = await tx.query<EndpointRow>(
          `UPDATE webhook_endpoints SET
             url = COALESCE($3, url),
             events = COALESCE($4, events),
             description = COALESCE($5, description),
             enabled = CASE WHEN $6::BOOL THEN true ELSE enabled END,
             disabled_reason = CASE WHEN $6::BOOL THEN '' ELSE disabled_reason END,
             disabled_at = CASE WHEN $6::BOOL THEN NULL ELSE disabled_at END,
             failing_since = CASE WHEN $6::BOOL THEN NULL ELSE failing_since END,
             updated_at = $7
           WHERE org_id = $1 AND id = $2
           RETURNING ${ENDPOINT_COLUMNS}`,
          [
            orgId,
            endpointId,
            changes.url ?? null,
            changes.events ?? null,
            changes.description ?? null,
            changes.enabled === true && !row.enabled,
            now,
          ],
        );
        return toEndpoint(rows[0] as EndpointRow, now);
      });
    },

    /**
     * For the deletion of the organization: its endpoints disabled (so the fan-out adds nothing
     * more for it), a batch of their deliveries deleted with their attempts, and once none is left
     * the endpoints (`done`). Deliveries are found by endpoint, as their indexes go.
     */
    async purgeOrg(
      orgId: string,
      limit: number,
    ): Promise<{ deleted: number; endpointsChanged: boolean; done: boolean }> {
      return withTx(pool, async (tx) => {
        const endpoints = await tx.query<{ id: string }>(
          'SELECT id FROM webhook_endpoints WHERE org_id = $1',
          [orgId],
        );
        const endpointIds = endpoints.rows.map((r) => r.id);
        const disabled = await tx.query(
          'UPDATE webhook_endpoints SET enabled = false WHERE org_id = $1 AND enabled',
          [orgId],
        );
        const deliveries = await tx.query<{ id: string }>(
          `DELETE FROM webhook_deliveries WHERE org_id = $1 AND id IN
             (SELECT id FROM webhook_deliveries WHERE endpoint_id = ANY($2::UUID[]) LIMIT $3)
           RETURNING id`,
          [orgId, endpointIds, limit],
        );
        const ids = deliveries.rows.map((r) => r.id);
        const attempts = await tx.query(
          'DELETE FROM webhook_attempts WHERE org_id = $1 AND delivery_id = ANY($2::UUID[])',
          [orgId, ids],
        );
        const done = ids.length < limit;
        if (done) await tx.query('DELETE FROM webhook_endpoints WHERE org_id = $1', [orgId]);
        return {
          deleted: ids.length + (attempts.rowCount ?? 0) + (done ? endpointIds.length : 0),
          endpointsChanged: (disabled.rowCount ?? 0) > 0 || (done && endpointIds.length > 0),
          done,
        };
      });
    },

    /** Deletes the endpoint with its deliveries and attempts. */
    async deleteEndpoint(orgId: string, endpointId: string): Promise<void> {
      await withTx(pool, async (tx) => {
        await endpointRow(tx, orgId, endpointId, true);
        await tx.query(
          `DELETE FROM webhook_attempts WHERE org_id = $1 AND delivery_id IN
             (SELECT id FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2)`,
          [orgId, endpointId],
        );
        await tx.query('DELETE FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2', [
          orgId,
          endpointId,
        ]);
        await tx.query('DELETE FROM webhook_endpoints WHERE org_id = $1 AND id = $2', [
          orgId,
          endpointId,
        ]);
      });
    },

    /**
     * Replaces the secret. The old one keeps signing alongside the new for `graceMs` (nothing
     * when 0); only the most recent old secret is kept.
     */
    async rotateSecret(
      orgId: string,
      endpointId: string,
      secret: string,
      graceMs: number,
    ): Promise<WebhookEndpoint> {
      const sealed = box.seal(secret, endpointId);
      return withTx(pool, async (tx) => {
        const now = clock.now();
        const row = await endpointRow(tx, orgId, endpointId, true);
        const keep = graceMs > 0;
        const { rows } = await tx.query<EndpointRow>(
          `UPDATE webhook_endpoints SET secret = $3, previous_secret = $4,
             previous_secret_expires_at = $5, secret_rotated_at = $6, updated_at = $6
           WHERE org_id = $1 AND id = $2
           RETURNING ${ENDPOINT_COLUMNS}`,
          [
            orgId,
            endpointId,
            sealed,
            keep ? row.secret : null,
            keep ? new Date(now.getTime() + graceMs) : null,
            now,
          ],
        );
        return toEndpoint(rows[0] as EndpointRow, now);
      });
    },

    /** Queues a `ping` to one endpoint, whatever event types it chose. */
    async createTestDelivery(orgId: string, endpointId: string): Promise<WebhookDelivery> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        await enabledEndpoint(tx, orgId, endpointId);
        const body = deliveryBody({
          type: 'ping',
          created_at: rfc3339(now),
          org_id: orgId,
          data: { endpoint_id: endpointId, sent_at: rfc3339(now) },
        });
        const { rows } = await tx.query<DeliveryRow>(
          `INSERT INTO webhook_deliveries
             (id, org_id, endpoint_id, event_id, event_type, body, state, next_attempt_at,
              created_at)
           VALUES ($1, $2, $3, $4, 'ping', $5, 'pending', $6, $6)
           RETURNING ${DELIVERY_COLUMNS}`,
          [randomUUID(), orgId, endpointId, randomUUID(), body, now],
        );
        return toDelivery(rows[0] as DeliveryRow, []);
      });
    },

    /** The ids of the organization's endpoints, enabled or not. */
    async endpointIds(orgId: string): Promise<Set<string>> {
      const { rows } = await pool.query<{ id: string }>(
        'SELECT id FROM webhook_endpoints WHERE org_id = $1',
        [orgId],
      );
      return new Set(rows.map((r) => r.id));
    },

    /** The event types each enabled endpoint of the organization chose: the fan-out's index. */
    async enabledEndpointEvents(orgId: string): Promise<string[][]> {
      const { rows } = await pool.query<{ events: string[] }>(
        'SELECT events FROM webhook_endpoints WHERE org_id = $1 AND enabled',
        [orgId],
      );
      return rows.map((r) => r.events);
    },

    /**
     * Adds one delivery of each event per enabled endpoint of its organization that wants it, for
     * many events in one transaction: one read of the endpoints, one statement. The unique (event,
     * endpoint) index makes a redelivered event add nothing. A body over the size cap is recorded
     * as a failed delivery that says why, and never sent. With a worker's `handover`, the
     * deliveries it picks are added already claimed for it, their first attempts counted, as a
     * round's claim would leave them: the worker sends them without a round claiming them.
     */
    async fanOut(
      events: Array<{ event: SpoolEvent; trace: TraceCarrier }>,
      maxPayloadBytes: number,
      handover?: Handover,
    ): Promise<FannedOut> {
      const bodies = events.map(({ event }) => deliveryBody(event));
      const tooLarge = bodies.map((body) => body.length > maxPayloadBytes);
      return withTx(pool, async (tx) => {
        const now = handover?.now ?? clock.now();
        const { rows: endpoints } = await tx.query<
          { id: string; org_id: string; events: string[]; url: string } & SealedSecrets
        >(
          `SELECT id, org_id, events, url, secret, previous_secret, previous_secret_expires_at
           FROM webhook_endpoints WHERE org_id = ANY($1::UUID[]) AND enabled`,
          [[...new Set(events.map((e) => e.event.org_id))]],
        );
        // Each event's columns go once, and each delivery names its event and endpoint.
        const wanted: Array<{ event: number; id: string; endpoint: (typeof endpoints)[number] }> =
          [];
        events.forEach(({ event }, i) => {
          for (const endpoint of endpoints) {
            if (endpoint.org_id !== event.org_id) continue;
            if (!endpoint.events.includes(event.type) && !endpoint.events.includes('*')) continue;
            wanted.push({ event: i, id: randomUUID(), endpoint });
          }
        });
        if (wanted.length === 0) return { added: events.map(() => 0), claimed: [], queued: [] };
        const picked = new Set(
          handover?.pick(
            wanted
              .filter((w) => !tooLarge[w.event])
              .map((w) => ({ id: w.id, orgId: w.endpoint.org_id, endpointId: w.endpoint.id })),
          ),
        );
        const { rows } = await queryThenCommit<{
          id: string;
          event_id: string;
          state: string;
          claim: string | null;
        }>(
          tx,
          `INSERT INTO webhook_deliveries
             (id, org_id, endpoint_id, event_id, event_type, body, state, next_attempt_at,
              created_at, notice, finished_at, trace_context, attempts, round_attempts, claim,
              last_attempt_at)
           SELECT d.id, e.org_id, d.endpoint_id, e.event_id, e.event_type, e.body, e.state,
             CASE WHEN d.claimed THEN $14::TIMESTAMPTZ ELSE e.next_attempt_at END, $12::TIMESTAMPTZ,
             e.notice,
             e.finished_at, e.trace_context::JSONB, d.claimed::INT, d.claimed::INT,
             CASE WHEN d.claimed THEN $13::UUID END, CASE WHEN d.claimed THEN $12::TIMESTAMPTZ END
           FROM unnest($1::INT[], $2::UUID[], $3::UUID[], $15::BOOL[])
             AS d (event, endpoint_id, id, claimed)
           JOIN unnest($4::UUID[], $5::UUID[], $6::TEXT[], $7::BYTEA[], $8::TEXT[],
               $9::TIMESTAMPTZ[], $10::TEXT[], $11::TIMESTAMPTZ[], $16::TEXT[])
             WITH ORDINALITY
             AS e (org_id, event_id, event_type, body, state, next_attempt_at, notice,
               finished_at, trace_context, n)
             ON e.n = d.event
           ON CONFLICT (event_id, endpoint_id) DO NOTHING
           RETURNING id, event_id, state, claim`,
          [
            ...columns(wanted, (w) => [w.event + 1, w.endpoint.id, w.id]),
            ...columns(events, ({ event }, i) => {
              const body = bodies[i] as Buffer;
              return [
                event.org_id,
                event.id,
                event.type,
                tooLarge[i] ? Buffer.alloc(0) : body,
                tooLarge[i] ? 'failed' : 'pending',
                tooLarge[i] ? null : now,
                tooLarge[i]
                  ? `not sent: the body is ${body.length} bytes, more than the limit of ${maxPayloadBytes}`
                  : '',
                tooLarge[i] ? now : null,
              ];
            }),
            now,
            handover?.claim ?? null,
            handover?.leaseUntil ?? null,
            wanted.map((w) => picked.has(w.id)),
            // Each attempt continues the trace of whatever caused the event.
            events.map(({ trace }) => JSON.stringify(trace)),
          ],
        );
        const added = new Map<string, number>();
        const inserted = new Set<string>();
        const claimedNow = new Set<string>();
        for (const r of rows) {
          inserted.add(r.id);
          if (r.state === 'pending') added.set(r.event_id, (added.get(r.event_id) ?? 0) + 1);
          if (r.claim !== null) claimedNow.add(r.id);
        }
        const claimed: ClaimedDelivery[] = [];
        const queued: FannedOut['queued'] = [];
        for (const w of wanted) {
          if (!claimedNow.has(w.id) || !handover) {
            if (!tooLarge[w.event] && inserted.has(w.id))
              queued.push({ endpointId: w.endpoint.id, orgId: w.endpoint.org_id });
            continue;
          }
          const { event, trace } = events[w.event] as (typeof events)[number];
          claimed.push({
            id: w.id,
            orgId: event.org_id,
            endpointId: w.endpoint.id,
            eventType: event.type,
            url: w.endpoint.url,
            body: bodies[w.event] as Buffer,
            secrets: signingSecrets(w.endpoint, w.endpoint.id, now),
            attempt: 1,
            roundAttempt: 1,
            claim: handover.claim,
            startedAt: now,
            traceContext: trace,
          });
        }
        return { added: events.map(({ event }) => added.get(event.id) ?? 0), claimed, queued };
      });
    },

    /** An endpoint's deliveries, newest first, each with its attempts. */
    async listDeliveries(
      orgId: string,
      endpointId: string,
      options: { limit: number; cursor: string; state: DeliveryState | undefined },
    ): Promise<{ items: WebhookDelivery[]; nextCursor: string }> {
      await endpointRow(pool, orgId, endpointId);
      const before = decodeCursor(options.cursor);
      const { rows } = await pool.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
         WHERE org_id = $1 AND endpoint_id = $2 AND ($3::TEXT IS NULL OR state = $3)
           AND ($4::TIMESTAMPTZ IS NULL OR (created_at, id) < ($4, $5::UUID))
         ORDER BY created_at DESC, id DESC LIMIT $6`,
        [
          orgId,
          endpointId,
          options.state ?? null,
          before?.at ?? null,
          before?.id ?? null,
          options.limit + 1,
        ],
      );
      const { items, nextCursor } = page(rows, options.limit, (r) => ({
        at: r.created_at.toISOString(),
        id: r.id,
      }));
      const attempts = await attemptsOf(
        pool,
        orgId,
        items.map((r) => r.id),
      );
      return { items: items.map((r) => toDelivery(r, attempts.get(r.id) ?? [])), nextCursor };
    },

    async getDelivery(
      orgId: string,
      endpointId: string,
      deliveryId: string,
    ): Promise<WebhookDelivery> {
      const row = await deliveryRow(pool, orgId, endpointId, deliveryId);
      const { rows } = await pool.query<{ body: Buffer }>(
        'SELECT body FROM webhook_deliveries WHERE org_id = $1 AND id = $2',
        [orgId, deliveryId],
      );
      const attempts = await attemptsOf(pool, orgId, [deliveryId]);
      return toDelivery(row, attempts.get(deliveryId) ?? [], rows[0]?.body.toString('utf8') ?? '');
    },

    /**
     * Sends a delivery again now with a fresh round of attempts and the same delivery id, so a
     * receiver that already has it can tell. A delivery whose attempt is in flight is left alone.
     */
    async resendDelivery(
      orgId: string,
      endpointId: string,
      deliveryId: string,
    ): Promise<WebhookDelivery> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        await enabledEndpoint(tx, orgId, endpointId);
        const row = await deliveryRow(tx, orgId, endpointId, deliveryId);
        if (Number(row.body_size) === 0) {
          throw conflict(`this delivery cannot be sent: ${row.notice}`);
        }
        const inFlight =
          row.claim !== null && (row.next_attempt_at?.getTime() ?? 0) > now.getTime();
        const attempts = (await attemptsOf(tx, orgId, [deliveryId])).get(deliveryId) ?? [];
        if (inFlight) return toDelivery(row, attempts);
        const { rows } = await tx.query<DeliveryRow>(
          `UPDATE webhook_deliveries SET state = 'pending', round_attempts = 0,
             next_attempt_at = $3, notice = '', finished_at = NULL
           WHERE org_id = $1 AND id = $2
           RETURNING ${DELIVERY_COLUMNS}`,
          [orgId, deliveryId, now],
        );
        return toDelivery(rows[0] as DeliveryRow, attempts);
      });
    },

    /** Resends every failed delivery of the endpoint created at or after `since`. */
    async resendFailed(orgId: string, endpointId: string, since: Date): Promise<number> {
      return withTx(pool, async (tx) => {
        const now = clock.now();
        await enabledEndpoint(tx, orgId, endpointId);
        const { rowCount } = await tx.query(
          `UPDATE webhook_deliveries SET state = 'pending', round_attempts = 0,
             next_attempt_at = $4, notice = '', finished_at = NULL
           WHERE org_id = $1 AND endpoint_id = $2 AND state = 'failed' AND created_at >= $3
             AND length(body) > 0`,
          [orgId, endpointId, since, now],
        );
        return rowCount ?? 0;
      });
    },

    /**
     * Deletes up to `limit` deliveries of any organization that finished before `cutoff`, with
     * their attempts, for the delivery log's retention; answers how many went. A pending delivery
     * (a resent one included) is never deleted.
     */
    async deleteFinishedBefore(cutoff: Date, limit: number): Promise<number> {
      return withTx(pool, async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `SELECT id FROM webhook_deliveries
           WHERE state <> 'pending' AND finished_at < $1
           ORDER BY finished_at LIMIT $2`,
          [cutoff, limit],
        );
        const ids = rows.map((r) => r.id);
        if (ids.length === 0) return 0;
        await tx.query('DELETE FROM webhook_attempts WHERE delivery_id = ANY($1)', [ids]);
        await tx.query('DELETE FROM webhook_deliveries WHERE id = ANY($1)', [ids]);
        return ids.length;
      });
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;
