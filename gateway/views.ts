/** The JSON shapes of API resources, made from the gRPC messages. */
import type { ApiKey, Org } from '../gen/spool/v1/accounts.js';
import { rfc3339, rfc3339OrNull } from '../lib/time.js';

export function orgView(org: Org | undefined) {
  if (!org) throw new Error('missing org in response');
  return { id: org.id, name: org.name, created_at: rfc3339OrNull(org.createdAt) };
}

export function keyView(key: ApiKey | undefined) {
  if (!key) throw new Error('missing key in response');
  return {
    id: key.id,
    org_id: key.orgId,
    name: key.name,
    live: key.live,
    scopes: key.scopes,
    hint: key.hint,
    allowed_ips: key.allowedIps,
    expires_at: rfc3339OrNull(key.expiresAt),
    created_at: key.createdAt ? rfc3339(key.createdAt) : null,
    revoked_at: rfc3339OrNull(key.revokedAt),
  };
}
