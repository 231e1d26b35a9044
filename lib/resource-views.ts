/**
 * The JSON shapes of the resources whose changes the event stream carries (locations, stations,
 * printers, pools, API keys, webhook endpoints, members, invitations), made from the gRPC messages: the gateway
 * answers with them, and the services that make a change publish its event with them, so an
 * event's resource reads as the API's does. None holds a secret: no key, token or signing secret.
 */
import type { ApiKey, Invitation, Member } from '../gen/spool/v1/accounts.js';
import type { Pool } from '../gen/spool/v1/jobs.js';
import type { Location, Printer, Station } from '../gen/spool/v1/stations.js';
import type { WebhookEndpoint } from '../gen/spool/v1/webhooks.js';
import { rfc3339, rfc3339OrNull } from './time.js';

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
    last_used_at: rfc3339OrNull(key.lastUsedAt),
  };
}

export function locationView(location: Location | undefined) {
  if (!location) throw new Error('missing location in response');
  return {
    id: location.id,
    name: location.name,
    address: location.address,
    timezone: location.timezone,
    created_at: rfc3339OrNull(location.createdAt),
  };
}

export function stationView(station: Station | undefined) {
  if (!station) throw new Error('missing station in response');
  return {
    id: station.id,
    org_id: station.orgId,
    name: station.name,
    location_id: station.locationId || null,
    online: station.online,
    last_seen_at: rfc3339OrNull(station.lastSeenAt),
    agent_version: station.agentVersion || null,
    region: station.region,
    token_revoked_at: rfc3339OrNull(station.tokenRevokedAt),
    created_at: rfc3339OrNull(station.createdAt),
  };
}

/**
 * A station as the operator and the console see it: with its agent's platform and where its last
 * update stands (`update_state` as DESIGN "Agent releases" words it: `current`, `downloading`,
 * `failed: <reason>`, `rolled_back`; null when its agent never reported one).
 */
export function adminStationView(station: Station | undefined) {
  const view = stationView(station);
  const s = station as Station;
  return {
    ...view,
    platform: s.platform || null,
    update_state:
      s.updateState === ''
        ? null
        : s.updateState === 'failed' && s.updateDetail !== ''
          ? `failed: ${s.updateDetail}`
          : s.updateState,
    update_version: s.updateVersion || null,
    update_at: rfc3339OrNull(s.updateAt),
  };
}

export function printerView(printer: Printer) {
  return {
    id: printer.id,
    name: printer.name,
    station_id: printer.stationId,
    location_id: printer.locationId || null,
    region: printer.region,
    status: printer.status,
    detail: printer.detail,
    station_online: printer.stationOnline,
    capabilities: {
      paper_sizes: printer.capabilities?.paperSizes ?? [],
      duplex: printer.capabilities?.duplex ?? false,
      color: printer.capabilities?.color ?? false,
      copies: printer.capabilities?.copies ?? false,
      trays: printer.capabilities?.trays ?? [],
      document_formats: printer.capabilities?.documentFormats ?? [],
    },
    updated_at: rfc3339OrNull(printer.updatedAt),
  };
}

export function poolView(pool: Pool | undefined) {
  if (!pool) throw new Error('missing pool in response');
  return {
    id: pool.id,
    name: pool.name,
    printer_ids: pool.printerIds,
    strategy: pool.strategy,
    failover_after: pool.failoverAfter,
    created_at: rfc3339OrNull(pool.createdAt),
    updated_at: rfc3339OrNull(pool.updatedAt),
  };
}

export function webhookView(endpoint: WebhookEndpoint | undefined) {
  if (!endpoint) throw new Error('missing webhook endpoint in response');
  return {
    id: endpoint.id,
    org_id: endpoint.orgId,
    url: endpoint.url,
    events: endpoint.events,
    description: endpoint.description,
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason || null,
    disabled_at: rfc3339OrNull(endpoint.disabledAt),
    failing_since: rfc3339OrNull(endpoint.failingSince),
    secret_rotated_at: rfc3339OrNull(endpoint.secretRotatedAt),
    previous_secret_expires_at: rfc3339OrNull(endpoint.previousSecretExpiresAt),
    created_at: rfc3339OrNull(endpoint.createdAt),
    updated_at: rfc3339OrNull(endpoint.updatedAt),
  };
}

export function invitationView(invitation: Invitation | undefined) {
  if (!invitation) throw new Error('missing invitation in response');
  return {
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    expires_at: rfc3339OrNull(invitation.expiresAt),
  };
}

export function memberView(member: Member | undefined) {
  if (!member?.person) throw new Error('missing member in response');
  return {
    person_id: member.person.id,
    email: member.person.email,
    display_name: member.person.displayName,
    role: member.role,
    joined_at: rfc3339OrNull(member.joinedAt),
  };
}
