/**
 * The accounts service's RPCs for people: invitations, sign-in, sessions and memberships. It checks
 * every request itself (roles included), whatever the gateway checked before.
 */
import type { AccountsServiceServer } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { generateCredential, hashCredential } from '../../lib/credentials.js';
import { invalid, notFound, SpoolError, unauthorized } from '../../lib/errors.js';
import type { AsyncServer } from '../../lib/grpc.js';
import { isUuid } from '../../lib/ids.js';
import { pageLimit } from '../../lib/paging.js';
import { isRole, ROLES, type Role } from '../../lib/roles.js';
import type { Invitee } from './invitation-store.js';
import {
  decoyHash,
  hashPassword,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  verifyPassword,
} from './passwords.js';
import type { PeopleStore } from './people-store.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export interface SessionSettings {
  /** A session unused this long ends (default 12 hours). */
  idleMs: number;
  /** A session ends this long after sign-in, used or not (default 7 days). */
  absoluteMs: number;
  /** How stale `last_seen_at` may get before a use writes it again (default 1 minute). */
  refreshMs: number;
  /** How long an invitation stays valid (default 7 days). */
  invitationMs: number;
  /** Failed sign-ins an account may have inside the window before it must wait (default 10). */
  accountFailures: number;
  /** Failed sign-ins a client address may have inside the window (default 50). */
  ipFailures: number;
  /** The window failures are counted over (default 15 minutes). */
  failureWindowMs: number;
}

export const SESSION_DEFAULTS: SessionSettings = {
  idleMs: 12 * HOUR,
  absoluteMs: 7 * DAY,
  refreshMs: MINUTE,
  invitationMs: 7 * DAY,
  accountFailures: 10,
  ipFailures: 50,
  failureWindowMs: 15 * MINUTE,
};

const MAX_EMAIL_LENGTH = 254;
const MAX_DISPLAY_NAME_LENGTH = 200;
const WRONG = 'wrong email or password';
const INVITATION_NOT_VALID =
  'this invitation is not valid (unknown, used, withdrawn or expired): ask for a new one';

function orgIdOf(orgId: string): string {
  if (!isUuid(orgId)) throw notFound('no such organization');
  return orgId;
}

function personIdOf(personId: string): string {
  if (!isUuid(personId)) throw notFound('no such person in this organization');
  return personId;
}

/** The acting person, or undefined for the operator. */
function actorOf(actorId: string): string | undefined {
  if (actorId === '') return undefined;
  if (!isUuid(actorId)) throw unauthorized('not signed in');
  return actorId;
}

export function normalizeEmail(email: string): string {
  const trimmed = email.trim().toLowerCase();
  if (
    trimmed.length > MAX_EMAIL_LENGTH ||
    !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(trimmed) ||
    trimmed.length === 0
  ) {
    throw invalid('email must be an email address such as ada@example.com', 'email');
  }
  return trimmed;
}

function roleOf(role: string): Role {
  if (!isRole(role)) throw invalid(`role must be one of ${ROLES.join(', ')}`, 'role');
  return role;
}

function checkPassword(password: string): string {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw invalid(
      `password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`,
      'password',
    );
  }
  return password;
}

function hashOf(bytes: Uint8Array, param: string): Buffer {
  if (bytes.length !== 32) throw invalid(`${param} must be a SHA-256`, param);
  return Buffer.from(bytes);
}

export type PeopleRpcs = Pick<
  AsyncServer<AccountsServiceServer>,
  | 'createInvitation'
  | 'getInvitation'
  | 'getOrgInvitation'
  | 'listInvitations'
  | 'revokeInvitation'
  | 'acceptInvitation'
  | 'signIn'
  | 'authenticateSession'
  | 'signOut'
  | 'listMembers'
  | 'changeRole'
  | 'removeMember'
>;

export function createPeopleServer(deps: {
  store: PeopleStore;
  clock: Clock;
  settings?: Partial<SessionSettings>;
  /** Called after a change other processes must hear of commits, so its message leaves at once. */
  onAnnounced?: () => void;
}): PeopleRpcs {
  const { store, clock } = deps;
  const settings = { ...SESSION_DEFAULTS, ...deps.settings };
  const announced = () => deps.onAnnounced?.();

  /**
   * The sign-in limits (docs/console-api.md): the attempt counts against the account and the
   * client address before its password is checked (so that attempts sent at once cannot all pass
   * the limit), and is refused, `429 rate_limited` with the wait, when either is then over its
   * limit. Else it stays counted as a failure unless `succeeded()` takes it back, which also
   * clears the account's failures. `check` checks its password: one that could not be checked
   * (the hashing queue is full: `429`) is taken back, as it was no guess.
   */
  async function startAttempt(
    email: string,
    clientIp: string,
  ): Promise<{
    /** Checks `password` against `hash`, or against a decoy for an unknown account. */
    check(password: string, hash: string | undefined): Promise<boolean>;
    succeeded(): Promise<void>;
  }> {
    const account = `email:${email}`;
    const reserved = await store.reserveAttempt(
      [
        { subject: account, limit: settings.accountFailures },
        ...(clientIp ? [{ subject: `ip:${clientIp}`, limit: settings.ipFailures }] : []),
      ],
      settings.failureWindowMs,
    );
    if ('wait' in reserved) {
      throw new SpoolError(
        'rate_limited',
        `too many failed sign-ins: try again in ${reserved.wait} seconds`,
        { retryAfter: reserved.wait },
      );
    }
    return {
      async check(password, hash) {
        try {
          // An unknown email costs the same time as a wrong password.
          return await verifyPassword(password, hash ?? (await decoyHash()));
        } catch (err) {
          await store.releaseAttempt(reserved.ids);
          throw err;
        }
      },
      async succeeded() {
        await store.releaseAttempt(reserved.ids);
        await store.clearFailures(account);
      },
    };
  }

  return {
    async createInvitation(req) {
      const orgId = orgIdOf(req.orgId);
      const email = normalizeEmail(req.email);
      const role = roleOf(req.role);
      const token = generateCredential('invitation');
      const invitation = await store.createInvitation({
        orgId,
        email,
        role,
        tokenHash: hashCredential(token),
        expiresAt: new Date(clock.now().getTime() + settings.invitationMs),
        actorId: actorOf(req.actorPersonId),
      });
      announced();
      return { invitation, token };
    },

    async getInvitation(req) {
      const invitation = await store.validInvitation(hashOf(req.tokenHash, 'token_hash'));
      if (!invitation) throw notFound(INVITATION_NOT_VALID);
      return { invitation };
    },

    async getOrgInvitation(req) {
      const orgId = orgIdOf(req.orgId);
      if (!isUuid(req.invitationId)) throw notFound('no such invitation in this organization');
      return store.orgInvitation(orgId, req.invitationId);
    },

    async listInvitations(req) {
      return store.listInvitations(
        orgIdOf(req.orgId),
        actorOf(req.actorPersonId),
        pageLimit(req.limit),
        req.cursor,
      );
    },

    async revokeInvitation(req) {
      const orgId = orgIdOf(req.orgId);
      const actorId = actorOf(req.actorPersonId);
      if (!isUuid(req.invitationId)) throw notFound('no such invitation in this organization');
      const revoked = await store.revokeInvitation(orgId, req.invitationId, actorId);
      announced();
      return revoked;
    },

    async acceptInvitation(req) {
      const hash = hashOf(req.tokenHash, 'token_hash');
      const invitation = await store.validInvitation(hash);
      if (!invitation) throw notFound(INVITATION_NOT_VALID);
      const password = checkPassword(req.password);
      const existing = await store.findPersonByEmail(invitation.email);
      let who: Invitee;
      if (existing) {
        // The account's password, guessed here, counts as a sign-in does, in the same limits.
        const attempt = await startAttempt(invitation.email, req.clientIp);
        if (!(await attempt.check(password, existing.password_hash))) {
          throw unauthorized(
            `wrong password: ${invitation.email} has an account, and accepting needs its password`,
          );
        }
        await attempt.succeeded();
        who = { existingId: existing.id };
      } else {
        const displayName = req.displayName.trim();
        if (displayName === '' || displayName.length > MAX_DISPLAY_NAME_LENGTH) {
          throw invalid(
            `display_name must be 1 to ${MAX_DISPLAY_NAME_LENGTH} characters`,
            'display_name',
          );
        }
        who = { displayName, passwordHash: await hashPassword(password) };
      }
      const session = generateCredential('session');
      const done = await store.acceptInvitation(hash, who, hashCredential(session));
      announced();
      return { ...done, session };
    },

    async signIn(req) {
      const email = req.email.trim().toLowerCase().slice(0, MAX_EMAIL_LENGTH);
      const attempt = await startAttempt(email, req.clientIp);
      const person =
        req.password.length <= PASSWORD_MAX_LENGTH
          ? await store.findPersonByEmail(email)
          : undefined;
      const ok = await attempt.check(
        req.password.slice(0, PASSWORD_MAX_LENGTH),
        person?.password_hash,
      );
      if (!person || !ok) throw unauthorized(WRONG);
      await attempt.succeeded();
      const session = generateCredential('session');
      const sessionId = await store.createSession(person.id, hashCredential(session));
      return {
        person: { id: person.id, email: person.email, displayName: person.display_name },
        memberships: await store.membershipsOf(person.id),
        session,
        sessionId,
      };
    },

    async authenticateSession(req) {
      const found = await store.authenticateSession(hashOf(req.sessionHash, 'session_hash'), {
        idleMs: settings.idleMs,
        absoluteMs: settings.absoluteMs,
        refreshMs: settings.refreshMs,
      });
      if (!found)
        throw unauthorized('not signed in: the session is unknown, signed out or expired');
      return {
        sessionId: found.session.id,
        person: found.person,
        memberships: found.memberships,
        createdAt: found.session.created_at,
        lastSeenAt: found.session.last_seen_at,
      };
    },

    async signOut(req) {
      await store.revokeSession(hashOf(req.sessionHash, 'session_hash'));
      announced();
      return {};
    },

    async listMembers(req) {
      return store.listMembers(orgIdOf(req.orgId));
    },

    async changeRole(req) {
      const member = await store.changeRole(
        orgIdOf(req.orgId),
        personIdOf(req.personId),
        roleOf(req.role),
        actorOf(req.actorPersonId),
      );
      announced();
      return { member };
    },

    async removeMember(req) {
      await store.removeMember(
        orgIdOf(req.orgId),
        personIdOf(req.personId),
        actorOf(req.actorPersonId),
      );
      announced();
      return {};
    },
  };
}
