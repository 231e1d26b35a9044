/**
 * Deleting an organization, from the operator API. Each service deletes its own share, in an order
 * that leaves nothing half reachable:
 *
 * 1. accounts closes it: every API key revoked, every invitation withdrawn, every membership
 *    ended, so no key or person reaches it any more (gateways drop them at once);
 * 2. stations deletes its stations (their links close) and printers, then its locations, so no
 *    job can be routed to it;
 * 3. jobs deletes its jobs with their events and stored documents, its uploads, templates and
 *    Idempotency-Keys;
 * 4. webhooks deletes its endpoints, then their deliveries and attempts;
 * 5. accounts deletes the organization itself.
 *
 * The services delete in batches, one call each, until each says it is done, and then each once
 * more: a request already under way when the deletion began (a job whose document was still
 * uploading, say) may have added a row after its service's share was deleted. Every step can be
 * run again: should one fail, deleting again goes on where it stopped (the organization is the
 * last thing to go, so it is still there to be named). The audit log keeps its entries.
 *
 * From the first step on, the organization is marked as being deleted: accounts refuses new keys,
 * invitations and renames, and the operator API whatever would add to it or change it
 * ({@link refuseChangesWhileDeleting}), so that a deletion cut short leaves nothing that grows.
 */
import type { Middleware } from 'koa';
import { orgDeleting, type SpoolError } from '../lib/errors.js';
import type { Backends } from './clients.js';
import type { GatewayState } from './state.js';

/** Purge calls one request makes at most (each deletes up to 500 jobs or stations). */
export const ORG_DELETION_CALLS = 200;
/**
 * Time one request spends at most before answering that more is left, well within an operator
 * client's patience (`spool admin` waits 30 s by default).
 */
export const ORG_DELETION_BUDGET_MS = 10_000;

export interface OrgDeletionOptions {
  /** Called once nothing reaches the organization any more (its keys are revoked). */
  closed?: () => void;
  /** Purge calls to make at most before answering that more is left; the next call goes on. */
  maxCalls?: number;
  /** Milliseconds to spend at most, by `now`, before answering that more is left. */
  budgetMs?: number;
  now?: () => number;
}

/** Deletes what it can of the organization within the budget; `done` once it is gone. */
export async function deleteOrg(
  backends: Pick<Backends, 'accounts' | 'jobs' | 'stations' | 'webhooks'>,
  orgId: string,
  options: OrgDeletionOptions = {},
): Promise<{ done: boolean; deleted: number }> {
  const { accounts, jobs, stations, webhooks } = backends;
  await accounts.closeOrg({ orgId });
  options.closed?.();
  let calls = options.maxCalls ?? ORG_DELETION_CALLS;
  const now = options.now ?? (() => performance.now());
  const until = now() + (options.budgetMs ?? ORG_DELETION_BUDGET_MS);
  let deleted = 0;
  // The second round finds what requests under way at the first step added behind the first.
  for (const service of [stations, jobs, webhooks, stations, jobs, webhooks]) {
    for (let done = false; !done; ) {
      if (calls-- <= 0 || now() > until) return { done: false, deleted };
      const res = await service.purgeOrg({ orgId });
      deleted += res.deleted;
      done = res.done;
    }
  }
  try {
    await accounts.deleteOrg({ orgId });
  } catch (err) {
    // Another DELETE of it, running alongside, deleted it first.
    if ((err as SpoolError).code !== 'not_found') throw err;
  }
  return { done: true, deleted };
}

/**
 * Answers a DELETE of an organization as far as {@link deleteOrg} went: 204 once it is gone, else
 * 202 saying to send the same DELETE again (`what` names it: "the organization", "the child
 * organization").
 */
export function answerDeletion(
  ctx: { status: number; body: unknown },
  result: { done: boolean; deleted: number },
  what: string,
): void {
  if (result.done) {
    ctx.status = 204;
    return;
  }
  ctx.status = 202;
  ctx.body = {
    deleting: true,
    deleted: result.deleted,
    message: `${what}'s keys are revoked and it is partly deleted; send the same DELETE again to go on`,
  };
}

/** What adds to an organization or changes it; a DELETE under one being deleted only helps. */
const CHANGES = new Set(['POST', 'PATCH']);
const ORG_PATH = /^\/admin\/v1\/orgs\/([^/]+)\/./;

/**
 * The operator API's guard for organizations being deleted: what would add to one whose deletion
 * began, or change it, answers 409. Runs after the operator's token is checked, so that nobody
 * else learns of the organization.
 */
export function refuseChangesWhileDeleting(
  accounts: Pick<Backends['accounts'], 'getOrg'>,
): Middleware<GatewayState> {
  return async (ctx, next) => {
    const orgId = CHANGES.has(ctx.method) ? ORG_PATH.exec(ctx.path)?.[1] : undefined;
    if (orgId !== undefined) {
      const { org } = await accounts.getOrg({ orgId });
      if (org?.deletingSince) throw orgDeleting(orgId);
    }
    await next();
  };
}
