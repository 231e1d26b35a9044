/**
 * A delivery worker's attempts on the wire: each claimed delivery is sent as a slot frees (the
 * ledger says which), in a span that joins the trace of the event's cause, counted in the attempts
 * metric, and handed to the worker's next round to record, with the time of the next attempt as
 * the retry policy (policy.ts) says.
 */
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { spoolMetrics } from '../../lib/metrics.js';
import { contextFrom, inSpan, recordError, type Span, SpanKind } from '../../lib/tracing.js';
import type { ClaimedDelivery } from './claims.js';
import type { AttemptResult, Sender } from './delivery.js';
import type { Ledger } from './ledger.js';
import type { Unrecorded } from './outcome-queue.js';
import type { Recorded } from './outcomes.js';
import { type RetryPolicy, retryAt } from './policy.js';

/** What an attempt tells the worker as it goes. */
export interface AttemptHooks {
  /** The answer is in (or the request failed): its slot on the wire is free. */
  onSent(): void;
  /** Its outcome is recorded (or could not be): it no longer counts as unrecorded. */
  release(): void;
}

export interface AttemptDeps {
  sender: Sender;
  clock: Clock;
  logger: Logger;
  policy: Pick<RetryPolicy, 'retryWaitsMs' | 'jitter'>;
  random: () => number;
  /** Counts the attempts sent. */
  stats: { attempts: number };
  /** Records the outcome in the worker's next round. */
  record(outcome: Unrecorded): Promise<Recorded>;
}

/** What the attempts tell their worker. */
export interface AttemptEvents {
  /** An answer is in: a slot on the wire is free. */
  answered(): void;
  /** An attempt's outcome is recorded, or could not be. */
  released(): void;
  /** An attempt is done with. */
  finished(): void;
}

/** The attempts in flight of one worker. */
export class Attempts {
  readonly #sends = new Set<Promise<void>>();
  readonly #ledger: Ledger;
  readonly #deps: AttemptDeps;
  readonly #events: AttemptEvents;

  constructor(ledger: Ledger, deps: AttemptDeps, events: AttemptEvents) {
    this.#ledger = ledger;
    this.#deps = deps;
    this.#events = events;
  }

  /** Sends the attempts waiting, oldest first, as far as the slots free allow. */
  sendReady(): void {
    for (const c of this.#ledger.takeSendable()) this.#send(c);
  }

  /** Resolves once no attempt is in flight; those waiting for a slot go as these finish. */
  async settled(): Promise<void> {
    while (this.#sends.size > 0) await Promise.allSettled([...this.#sends]);
  }

  #send(c: ClaimedDelivery): void {
    let sent = false;
    // The request's slot is free once its answer is in: the next attempt waiting goes at once,
    // and the next round claims while the outcome is recorded (the delivery stays leased until
    // then, so nobody claims it meanwhile).
    const onSent = () => {
      if (sent) return;
      sent = true;
      this.#ledger.answered(c);
      this.sendReady();
      this.#events.answered();
    };
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#events.released();
    };
    const send = sendAttempt(c, this.#deps, { onSent, release }).finally(() => {
      onSent();
      release();
      this.#sends.delete(send);
      this.#events.finished();
    });
    this.#sends.add(send);
  }
}

/** Sends one attempt in a span that joins the trace of the event's cause, and records it. */
export function sendAttempt(
  c: ClaimedDelivery,
  deps: AttemptDeps,
  hooks: AttemptHooks,
): Promise<void> {
  const attributes = {
    'spool.org.id': c.orgId,
    'spool.webhook.endpoint_id': c.endpointId,
    'spool.webhook.delivery_id': c.id,
    'spool.webhook.event_type': c.eventType,
    'spool.webhook.attempt': c.attempt,
  };
  return inSpan(
    'deliver webhook',
    { kind: SpanKind.PRODUCER, parent: contextFrom(c.traceContext), attributes },
    (span) => attemptInSpan(c, span, deps, hooks),
  );
}

async function attemptInSpan(
  c: ClaimedDelivery,
  span: Span,
  deps: AttemptDeps,
  hooks: AttemptHooks,
): Promise<void> {
  const result = await deps.sender.send({
    url: c.url,
    deliveryId: c.id,
    attempt: c.attempt,
    body: c.body,
    secrets: c.secrets,
    at: c.startedAt,
  });
  deps.stats.attempts++;
  hooks.onSent();
  const outcome = attemptOutcome(result);
  spoolMetrics().webhookAttempts.add(1, { 'spool.webhook.outcome': outcome });
  span.setAttributes({ 'spool.webhook.outcome': outcome });
  if (result.statusCode > 0) span.setAttribute('http.response.status_code', result.statusCode);
  if (!result.succeeded) recordError(span, new Error(result.error || outcome));
  const next = retryAt(c.roundAttempt, result, deps.clock.now(), deps.policy, deps.random);
  try {
    const recorded = await deps.record({
      claimed: c,
      result,
      retryAt: next,
      release: hooks.release,
    });
    deps.logger.debug(
      {
        deliveryId: c.id,
        endpointId: c.endpointId,
        attempt: c.attempt,
        status: result.statusCode,
        recorded,
      },
      'webhook attempt',
    );
  } catch (err) {
    // The claim lapses and the attempt is made again; its row says it was abandoned.
    deps.logger.error({ err, deliveryId: c.id }, 'could not record a webhook attempt');
  }
}

/** How an attempt ended, for the attempts metric: succeeded, http_error or unreachable. */
function attemptOutcome(result: AttemptResult): string {
  if (result.succeeded) return 'succeeded';
  return result.statusCode > 0 ? 'http_error' : 'unreachable';
}
