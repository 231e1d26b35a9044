/**
 * An organization's pools of printers: create, list, read, change and delete them. Every member
 * must be a printer of the organization, as the stations service knows it when the pool is made
 * or its members are changed; a printer deleted later leaves its pools (handlers/actions.ts).
 */
import type { ServerUnaryCall } from '@grpc/grpc-js';
import {
  DEFAULT_FAILOVER_AFTER_S,
  DEFAULT_POOL_STRATEGY,
  isPoolStrategy,
  MAX_FAILOVER_AFTER_S,
  MAX_POOL_MEMBERS,
  MAX_POOL_NAME_LENGTH,
  POOL_STRATEGIES,
} from '../../../lib/contracts/pools.js';
import { invalid, notFound } from '../../../lib/errors.js';
import { isUuid, requireUuid } from '../../../lib/ids.js';
import { pageLimit } from '../../../lib/paging.js';
import type { JobsHandlers, JobsServerDeps } from './deps.js';

type Call = ServerUnaryCall<unknown, unknown>;

function checkName(name: string): string {
  if (name.length < 1 || name.length > MAX_POOL_NAME_LENGTH) {
    throw invalid(`name must be a string of 1 to ${MAX_POOL_NAME_LENGTH} characters`, 'name');
  }
  return name;
}

function checkStrategy(strategy: string): string {
  if (!isPoolStrategy(strategy)) {
    throw invalid(`strategy must be one of: ${POOL_STRATEGIES.join(', ')}`, 'strategy');
  }
  return strategy;
}

function checkFailoverAfter(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_FAILOVER_AFTER_S) {
    throw invalid(
      `failover_after must be an integer from 0 to ${MAX_FAILOVER_AFTER_S} (seconds; 0 never fails over)`,
      'failover_after',
    );
  }
  return seconds;
}

/**
 * The members, in the order given, once each is known to be a printer of the organization: 1 to
 * 100 distinct ids, each asked of the stations service. Ids are kept in small letters, as the
 * stations service writes them.
 */
async function checkMembers(
  deps: Pick<JobsServerDeps, 'stations'>,
  orgId: string,
  printerIds: string[],
  call: Call,
): Promise<string[]> {
  if (printerIds.length < 1 || printerIds.length > MAX_POOL_MEMBERS) {
    throw invalid(
      `printer_ids must list 1 to ${MAX_POOL_MEMBERS} printers of this organization`,
      'printer_ids',
    );
  }
  const ids = printerIds.map((id) => id.toLowerCase());
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) {
      throw invalid(`printer_ids names printer ${JSON.stringify(id)} twice`, 'printer_ids');
    }
    seen.add(id);
  }
  const valid = ids.filter(isUuid);
  const { items } = valid.length
    ? await deps.stations.printersOf(
        { printers: valid.map((printerId) => ({ orgId, printerId })), stations: [] },
        { parent: call },
      )
    : { items: [] };
  const known = new Set(items.map((p) => p.id.toLowerCase()));
  const unknown = ids.find((id) => !known.has(id));
  if (unknown !== undefined) {
    throw invalid(
      `printer_ids: ${JSON.stringify(unknown)} is not a printer of this organization`,
      'printer_ids',
    );
  }
  return ids;
}

export function poolHandlers(
  deps: Pick<JobsServerDeps, 'store' | 'stations'>,
): JobsHandlers<'createPool' | 'listPools' | 'getPool' | 'updatePool' | 'deletePool'> {
  const { store } = deps;
  return {
    async createPool(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      const name = checkName(req.name);
      const strategy = checkStrategy(req.strategy || DEFAULT_POOL_STRATEGY);
      const failoverAfter = checkFailoverAfter(req.failoverAfter ?? DEFAULT_FAILOVER_AFTER_S);
      const printerIds = await checkMembers(deps, orgId, req.printerIds, call);
      const pool = await store.createPool({ orgId, name, printerIds, strategy, failoverAfter });
      return { pool };
    },

    async listPools(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      return store.listPools(orgId, pageLimit(req.limit), req.cursor);
    },

    async getPool(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      const pool = await store.getPool(orgId, requireUuid(req.poolId, 'pool'));
      if (!pool) throw notFound('no such pool');
      return { pool };
    },

    async updatePool(req, call) {
      const orgId = requireUuid(req.orgId, 'organization');
      const current = await store.getPool(orgId, requireUuid(req.poolId, 'pool'));
      if (!current) throw notFound('no such pool');
      const next = {
        id: current.id,
        orgId,
        name: req.name === undefined ? current.name : checkName(req.name),
        strategy: req.strategy === undefined ? current.strategy : checkStrategy(req.strategy),
        failoverAfter:
          req.failoverAfter === undefined
            ? current.failoverAfter
            : checkFailoverAfter(req.failoverAfter),
        printerIds: req.setPrinterIds
          ? await checkMembers(deps, orgId, req.printerIds, call)
          : current.printerIds,
      };
      return { pool: await store.updatePool(next) };
    },

    async deletePool(req) {
      const orgId = requireUuid(req.orgId, 'organization');
      await store.deletePool(orgId, requireUuid(req.poolId, 'pool'));
      return {};
    },
  };
}
