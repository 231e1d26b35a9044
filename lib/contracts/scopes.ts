/**
 * The scopes of spec §5, then Spool's own: `printers:write` lets integrators manage pools of
 * printers, and `webhooks:read` and `webhooks:write` their webhook endpoints, by key
 * (docs/api.md). Plain data with no imports, so the console offers the same list the gateway
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
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
