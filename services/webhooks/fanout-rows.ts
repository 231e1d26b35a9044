/**
 * The fan-out's write: many events' deliveries added in one transaction, some of them claimed at
 * once for the worker that is to send them (its hand-over).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { queryThenCommit, withTx } from '../../lib/db.js';
import { deliveryBody, type SpoolEvent } from '../../lib/events.js';
import { columns } from '../../lib/sql.js';
import type { TraceCarrier } from '../../lib/tracing.js';
import type { ClaimCandidate, ClaimedDelivery } from './claims.js';
import type { SecretBox } from './crypto.js';
import { type SealedSecrets, signingSecrets } from './endpoint-rows.js';

/**
 * A worker's hand-over (handover.ts): the fan-out claims for it, as it adds them, the deliveries
 * its `pick` chooses, so they are sent without a round claiming them.
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

export interface FanoutStore {
  /**
   * Adds one delivery of each event per enabled endpoint of its organization that wants it, for
   * many events in one transaction: one read of the endpoints, one statement. The unique (event,
   * endpoint) index makes a redelivered event add nothing. A body over the size cap is recorded
   * as a failed delivery that says why, and never sent. With a worker's `handover`, the
   * deliveries it picks are added already claimed for it, their first attempts counted, as a
   * round's claim would leave them: the worker sends them without a round claiming them.
   */
  fanOut(
    events: Array<{ event: SpoolEvent; trace: TraceCarrier }>,
    maxPayloadBytes: number,
    handover?: Handover,
  ): Promise<FannedOut>;
}

export function createFanoutStore(pool: pg.Pool, clock: Clock, box: SecretBox): FanoutStore {
  return {
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
            secrets: signingSecrets(box, w.endpoint, w.endpoint.id, now),
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
  };
}
