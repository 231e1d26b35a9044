/**
 * The accounts gRPC service: validates requests, applies the rules of keys (DESIGN §4) and leaves
 * storage to the store.
 */
import type { AccountsServiceServer, Settings } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import {
  MAX_CHILD_NAME_LENGTH,
  MAX_CHILD_REFERENCE_LENGTH,
} from '../../lib/contracts/child-orgs.js';
import {
  credentialHint,
  generateCredential,
  hashCredential,
  isScope,
  parseAllowedIps,
  SCOPES,
} from '../../lib/credentials.js';
import { invalid, notFound, trimmedText, unauthorized } from '../../lib/errors.js';
import type { AsyncServer } from '../../lib/grpc.js';
import { isUuid } from '../../lib/ids.js';
import { pageLimit } from '../../lib/paging.js';
import type { AuditRpcs } from './audit.js';
import type { PeopleRpcs } from './people-server.js';
import type { AccountsStore } from './store.js';

export const MAX_NAME_LENGTH = 200;
export const MAX_ALLOWED_IPS = 50;
export const MAX_RETENTION_DAYS = 3650;

function requireOrgId(orgId: string): string {
  // A malformed id cannot name an organization; answer as for any unknown one.
  if (!isUuid(orgId)) throw notFound('no such organization');
  return orgId;
}

function checkName(name: string, param: string, required: boolean): string {
  const trimmed = name.trim();
  if (required && trimmed === '') throw invalid(`${param} is required`, param);
  if (trimmed.length > MAX_NAME_LENGTH) {
    throw invalid(`${param} must be at most ${MAX_NAME_LENGTH} characters`, param);
  }
  return trimmed;
}

/** A child's reference: trimmed, at most {@link MAX_CHILD_REFERENCE_LENGTH} characters. */
function checkReference(reference: string): string {
  return trimmedText(reference, MAX_CHILD_REFERENCE_LENGTH, 'reference');
}

export function createAccountsServer(deps: {
  store: AccountsStore;
  clock: Clock;
  /** Called after a change other processes must hear of commits, so its message leaves at once. */
  onAnnounced?: () => void;
  /** The RPCs of people, invitations, sessions and sign-in (people-server.ts). */
  people: PeopleRpcs;
  /** The RPCs of the audit log (audit.ts). */
  audit: AuditRpcs;
}): AsyncServer<AccountsServiceServer> {
  const { store, clock } = deps;
  return {
    ...deps.people,
    ...deps.audit,

    async closeOrg(req) {
      await store.closeOrg(requireOrgId(req.orgId));
      deps.onAnnounced?.();
      return {};
    },

    async deleteOrg(req) {
      await store.deleteOrg(requireOrgId(req.orgId));
      return {};
    },

    async listOrgs(req) {
      const query = req.query.trim();
      if (query.length > MAX_NAME_LENGTH)
        throw invalid(`q must be at most ${MAX_NAME_LENGTH} characters`, 'q');
      return store.listOrgs(query, req.deleting, pageLimit(req.limit), req.cursor);
    },

    async createOrg(req) {
      return { org: await store.createOrg(checkName(req.name, 'name', true)) };
    },

    async getOrg(req) {
      return { org: await store.getOrg(requireOrgId(req.orgId)) };
    },

    async createChildOrg(req) {
      const name = req.name.trim();
      if (name === '' || name.length > MAX_CHILD_NAME_LENGTH) {
        throw invalid(`name must be 1 to ${MAX_CHILD_NAME_LENGTH} characters`, 'name');
      }
      const org = await store.createChildOrg({
        parentId: requireOrgId(req.orgId),
        name,
        reference: checkReference(req.reference),
      });
      return { org };
    },

    async listChildOrgs(req) {
      return store.listChildOrgs(
        requireOrgId(req.orgId),
        checkReference(req.reference),
        pageLimit(req.limit),
        req.cursor,
      );
    },

    async getChildOrg(req) {
      if (!isUuid(req.childId)) throw notFound('no such child organization');
      return { org: await store.getChildOrg(requireOrgId(req.orgId), req.childId) };
    },

    async renameOrg(req) {
      const name = req.name.trim();
      if (name === '' || name.length > MAX_NAME_LENGTH) {
        throw invalid(`name must be 1 to ${MAX_NAME_LENGTH} characters`, 'name');
      }
      const org = await store.renameOrg(requireOrgId(req.orgId), name);
      deps.onAnnounced?.();
      return { org };
    },

    async createApiKey(req) {
      const orgId = requireOrgId(req.orgId);
      const scopes = [...new Set(req.scopes)];
      for (const scope of scopes) {
        if (!isScope(scope)) {
          throw invalid(
            `unknown scope ${JSON.stringify(scope)}; scopes are ${SCOPES.join(', ')}`,
            'scopes',
          );
        }
      }
      if (req.expiresAt && req.expiresAt.getTime() <= clock.now().getTime()) {
        throw invalid('expires_at must be in the future', 'expires_at');
      }
      if (req.allowedIps.length > MAX_ALLOWED_IPS) {
        throw invalid(`allowed_ips may hold at most ${MAX_ALLOWED_IPS} ranges`, 'allowed_ips');
      }
      let allowedIps: string[];
      try {
        allowedIps = parseAllowedIps(req.allowedIps);
      } catch (err) {
        throw invalid((err as Error).message, 'allowed_ips');
      }
      const secret = generateCredential(req.live ? 'live' : 'test');
      const key = await store.createKey({
        orgId,
        live: req.live,
        scopes,
        allowedIps,
        expiresAt: req.expiresAt,
        name: checkName(req.name, 'name', false),
        hint: credentialHint(secret),
        hash: hashCredential(secret),
      });
      deps.onAnnounced?.();
      return { key, secret };
    },

    async listApiKeys(req) {
      const orgId = requireOrgId(req.orgId);
      return store.listKeys(orgId, pageLimit(req.limit), req.cursor);
    },

    async recordKeyUses(req) {
      if (req.uses.length > 10_000) throw invalid('at most 10000 uses a call', 'uses');
      const uses = req.uses.flatMap((u) =>
        isUuid(u.orgId) && isUuid(u.keyId) && u.at
          ? [{ orgId: u.orgId, keyId: u.keyId, at: u.at }]
          : [],
      );
      await store.recordKeyUses(uses);
      return {};
    },

    async revokeApiKey(req) {
      const orgId = requireOrgId(req.orgId);
      if (!isUuid(req.keyId)) throw notFound('no such API key in this organization');
      const key = await store.revokeKey(orgId, req.keyId);
      deps.onAnnounced?.();
      return { key };
    },

    async getSettings() {
      return { settings: await store.getSettings() };
    },

    async updateSettings(req) {
      for (const [param, value] of [
        ['job_document_retention_days', req.jobDocumentRetentionDays],
        ['upload_retention_days', req.uploadRetentionDays],
        ['webhook_delivery_retention_days', req.webhookDeliveryRetentionDays],
        ['audit_retention_days', req.auditRetentionDays],
      ] as const) {
        if (value !== undefined && (value < 1 || value > MAX_RETENTION_DAYS)) {
          throw invalid(`${param} must be from 1 to ${MAX_RETENTION_DAYS} days`, param);
        }
      }
      if (req.statusNotice !== undefined && req.statusNotice.length > 1000) {
        throw invalid('notice must be at most 1000 characters', 'notice');
      }
      for (const [param, value] of [
        ['pricing', req.pricingJson],
        ['downloads', req.downloadsJson],
      ] as const) {
        if (value === undefined || value === '') continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(value);
        } catch {
          throw invalid(`${param} must be a JSON object`, param);
        }
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          throw invalid(`${param} must be a JSON object, or null to withdraw it`, param);
        }
      }
      const changes: Partial<Settings> = {};
      if (req.jobDocumentRetentionDays !== undefined)
        changes.jobDocumentRetentionDays = req.jobDocumentRetentionDays;
      if (req.uploadRetentionDays !== undefined)
        changes.uploadRetentionDays = req.uploadRetentionDays;
      if (req.webhookDeliveryRetentionDays !== undefined)
        changes.webhookDeliveryRetentionDays = req.webhookDeliveryRetentionDays;
      if (req.auditRetentionDays !== undefined) changes.auditRetentionDays = req.auditRetentionDays;
      if (req.statusNotice !== undefined) changes.statusNotice = req.statusNotice;
      if (req.pricingJson !== undefined) changes.pricingJson = req.pricingJson;
      if (req.downloadsJson !== undefined) changes.downloadsJson = req.downloadsJson;
      return { settings: await store.updateSettings(changes) };
    },

    async authenticateApiKey(req) {
      if (req.keyHash.length !== 32) throw invalid('key_hash must be a SHA-256', 'key_hash');
      const found = await store.findKeyByHash(Buffer.from(req.keyHash));
      const now = clock.now().getTime();
      if (
        !found ||
        found.key.revokedAt ||
        (found.key.expiresAt && found.key.expiresAt.getTime() <= now)
      ) {
        throw unauthorized('the API key is not valid: unknown, revoked or expired');
      }
      return found;
    },
  };
}
