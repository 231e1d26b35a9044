/**
 * The recording of attempts' outcomes, within a worker round's transaction (rounds.ts): each
 * outcome's attempt row, and what follows it as the retry policy (policy.ts) decides.
 */
import type pg from 'pg';
import { queryThenCommit } from '../../lib/db.js';
import { columns } from '../../lib/sql.js';
import type { ClaimedDelivery } from './claims.js';
import type { DeliveryState } from './delivery-rows.js';
import {
  disableEndpoint,
  ENDPOINT_COLUMNS,
  type EndpointRow,
  toEndpoint,
} from './endpoint-rows.js';
import { announceEndpoints } from './outbox.js';
import {
  DISABLED_NOTICE,
  type DisabledReason,
  nextStep,
  type RetryPolicy,
  type Step,
} from './policy.js';

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

export interface RecordInput extends Pick<RetryPolicy, 'failingDisableMs'> {
  now: Date;
}

export type Recorded = 'succeeded' | 'retry' | 'failed' | 'lost';

/**
 * What became of a round's outcomes, in their order, the organizations whose endpoints were
 * disabled, and whether endpoints changed (disabled, or a failing streak begun or ended), their
 * `webhook_endpoint.updated` queued in the outbox.
 */
export interface Settled {
  recorded: Recorded[];
  disabledIn: string[];
  announced?: boolean;
}

/** The delivery's state, and its notice (undefined: unchanged), after a step. */
function deliveryEnd(step: Step): { state: DeliveryState; notice: string | undefined } {
  switch (step.kind) {
    case 'succeeded':
      return { state: 'succeeded', notice: undefined };
    case 'retry':
      return { state: 'pending', notice: undefined };
    default:
      return { state: 'failed', notice: step.notice };
  }
}

/**
 * Records the outcomes of many attempts, within a worker round's transaction, in a few
 * statements whatever their number: one for the attempts' rows, one reading their endpoints, one
 * for the deliveries, one for endpoints whose failing streak began or ended (if any), two per
 * endpoint disabled, and two reading and announcing the endpoints changed (if any). Each outcome decides what follows as if recorded alone, in the order given:
 * success ends the delivery; a failure schedules the next attempt, or ends it when the round has
 * none left, when the endpoint answered 410 (the endpoint is disabled), or when the endpoint has
 * failed every attempt for `failingDisableMs` (disabled too); a delivery of an endpoint disabled
 * meanwhile ends with the reason. When a claim lapsed meanwhile, only the attempt's row is
 * written: whoever holds the delivery now decides. Answers what became of each, and the
 * organizations whose endpoints were disabled. A delivery appears at most once in `outcomes`.
 * With `commitWithLast`, its last statement carries the transaction's COMMIT.
 */
export async function recordOutcomes(
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
    const outcome = { succeeded: result.succeeded, statusCode: result.statusCode, retryAt };
    const { step, failingSince } = nextStep(c.startedAt, outcome, endpoint, now, input);
    endpoint.failingSince = failingSince;
    if (step.kind === 'disable') {
      await disableEndpoint(tx, c.orgId, c.endpointId, step.reason, now);
      endpoint.enabled = false;
      endpoint.disabledNow = step.reason;
    }
    decisions.push(deliveryEnd(step));
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
  // The endpoints as they now read, for the event stream; rare (a streak's start or end, a
  // disabling), so the statement is one only rounds that change an endpoint pay.
  const changed = [...endpoints.values()].filter((e) => e.disabledNow || streaks.includes(e));
  if (changed.length > 0) {
    const { rows } = await tx.query<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints
       WHERE (org_id, id) IN (SELECT * FROM unnest($1::UUID[], $2::UUID[]))`,
      columns(changed, (e) => [e.orgId, e.id]),
    );
    await announceEndpoints(
      tx,
      'webhook_endpoint.updated',
      rows.map((r) => toEndpoint(r, now)),
      now,
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
  return { recorded, disabledIn, announced: changed.length > 0 };
}
