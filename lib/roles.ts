/**
 * The roles a person holds in an organization (DESIGN §5), each including the ones before it, and
 * the API scopes each role carries when a signed-in session calls the key-based API.
 */
import type { Scope } from './contracts/scopes.js';

export const ROLES = ['viewer', 'developer', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** Whether `role` includes `needed`. */
export function hasRole(role: string, needed: Role): boolean {
  return isRole(role) && ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

const READ_SCOPES: readonly Scope[] = [
  'jobs:read',
  'printers:read',
  'locations:read',
  'webhooks:read',
  'orgs:read',
];
const WRITE_SCOPES: readonly Scope[] = [
  'jobs:write',
  'printers:write',
  'webhooks:write',
  'orgs:write',
  'stations:write',
];

/** The scopes of a member's session on `/v1`. */
export function scopesOfRole(role: string): Scope[] {
  return hasRole(role, 'developer') ? [...READ_SCOPES, ...WRITE_SCOPES] : [...READ_SCOPES];
}

/** The least role whose sessions carry `scope`. */
export function roleForScope(scope: Scope): Role {
  return READ_SCOPES.includes(scope) ? 'viewer' : 'developer';
}

function article(role: string): string {
  return /^[aeiou]/.test(role) ? 'an' : 'a';
}

/** The 403 message of a member whose role falls short: it names the role needed and theirs. */
export function roleMessage(needed: Role, role: string): string {
  return `this needs the ${needed} role; you are ${article(role)} ${role}`;
}
