/**
 * The scopes of spec §5, then Spool's own: `printers:write` lets integrators manage pools of
 * printers, `webhooks:read` and `webhooks:write` their webhook endpoints, and `orgs:read`,
 * `orgs:write` and `stations:write` a platform its customers' organizations and their stations'
 * enrollment, by key (docs/api.md, docs/platforms.md). Plain data with no imports, so the console offers the same list the gateway
 * checks.
 */
export const SCOPES = [
  'jobs:write',
  'jobs:read',
  'printers:read',
  'printers:write',
  'locations:read',
  'webhooks:read',
  'webhooks:write',
  'orgs:read',
  'orgs:write',
  'stations:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
