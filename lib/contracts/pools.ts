/**
 * What a pool of printers may be (DESIGN §5, "Pools and routing"): the jobs service keeps pools by
 * these rules, and the gateway's schemas and OpenAPI documents state them. Plain data with no
 * imports, so the console reads the same.
 */

/**
 * How a pool chooses among its members: `least_queued`, the member with the fewest unfinished
 * jobs; `ordered`, the first in the pool's order that can print the job.
 */
export const POOL_STRATEGIES = ['least_queued', 'ordered'] as const;
export type PoolStrategy = (typeof POOL_STRATEGIES)[number];

/** The strategy of a pool created without one. */
export const DEFAULT_POOL_STRATEGY: PoolStrategy = 'least_queued';

/** The longest name of a pool, in characters. */
export const MAX_POOL_NAME_LENGTH = 200;

/** The most printers one pool has. */
export const MAX_POOL_MEMBERS = 100;

/** The seconds a chosen member may stay unable to print before its jobs move; 0 is never. */
export const DEFAULT_FAILOVER_AFTER_S = 30;
export const MAX_FAILOVER_AFTER_S = 24 * 60 * 60;

export function isPoolStrategy(value: string): value is PoolStrategy {
  return (POOL_STRATEGIES as readonly string[]).includes(value);
}
