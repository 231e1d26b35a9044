/** The query of `spool.usage(...)` as `GET /v1/orgs/{org}/usage` takes it. */
import type { paths } from './generated/schema.js';
import type { UsageQuery } from './types.js';

type ApiQuery = NonNullable<paths['/v1/orgs/{org}/usage']['get']['parameters']['query']>;

/** `children: true` travels as the text `true`. */
export function usageQuery(query: UsageQuery): ApiQuery {
  const { children, ...range } = query;
  return { ...range, ...(children === undefined ? {} : { children: children ? 'true' : 'false' }) };
}
