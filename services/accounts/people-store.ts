/**
 * The tables of people behind the people RPCs (people-server.ts): memberships, invitations,
 * sessions and failed sign-ins, each kept by a store of its own role. Queries on an organization's
 * people are scoped by its id; the lookups by hash that authentication needs (the hash is the
 * credential) and by email (sign-in) are the only unscoped ones.
 */
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { createInvitationStore, type InvitationStore } from './invitation-store.js';
import { createMembershipStore, type MembershipStore } from './membership-store.js';
import { createSessionStore, type SessionStore } from './session-store.js';
import { createSignInLimits, type SignInLimits } from './sign-in-limits.js';

export interface PeopleStore extends MembershipStore, InvitationStore, SessionStore, SignInLimits {}

export function createPeopleStore(pool: pg.Pool, clock: Clock): PeopleStore {
  return {
    ...createMembershipStore(pool, clock),
    ...createInvitationStore(pool, clock),
    ...createSessionStore(pool, clock),
    ...createSignInLimits(pool, clock),
  };
}
