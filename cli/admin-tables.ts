/**
 * The columns `spool admin … list --format table` prints for each kind of resource: what an
 * operator scans a list for. The JSON (the default) has every field.
 */
import type { Columns } from './table.js';

/** A resource as the admin API answers it. */
export type Row = Record<string, unknown>;

const field = (header: string, name = header) => ({ header, value: (r: Row) => r[name] });
const yesNo = (header: string, name: string) => ({
  header,
  value: (r: Row) => (r[name] === true ? 'yes' : r[name] === false ? 'no' : null),
});

export const ORG_COLUMNS: Columns<Row> = [
  field('id'),
  field('name'),
  field('created', 'created_at'),
  field('deleting since', 'deleting_since'),
];

export const KEY_COLUMNS: Columns<Row> = [
  field('id'),
  field('name'),
  { header: 'mode', value: (r) => (r.live ? 'live' : 'test') },
  field('hint'),
  field('scopes'),
  field('expires', 'expires_at'),
  field('last used', 'last_used_at'),
  field('revoked', 'revoked_at'),
];

export const INVITATION_COLUMNS: Columns<Row> = [
  field('id'),
  field('email'),
  field('role'),
  {
    header: 'invited by',
    value: (r) =>
      (r.invited_by as Row | null)?.email ?? (r.invited_by === null ? 'operator' : null),
  },
  field('created', 'created_at'),
  field('expires', 'expires_at'),
];

export const PERSON_COLUMNS: Columns<Row> = [
  field('id', 'person_id'),
  field('name', 'display_name'),
  field('email'),
  field('role'),
  field('joined', 'joined_at'),
];

export const STATION_COLUMNS: Columns<Row> = [
  field('id'),
  field('name'),
  yesNo('online', 'online'),
  field('last seen', 'last_seen_at'),
  field('agent', 'agent_version'),
  field('update', 'update_state'),
  field('region'),
  field('location', 'location_id'),
  field('token revoked', 'token_revoked_at'),
];

export const PRINTER_COLUMNS: Columns<Row> = [
  field('id'),
  field('name'),
  field('status'),
  yesNo('station online', 'station_online'),
  field('station', 'station_id'),
  field('detail'),
];

export const LOCATION_COLUMNS: Columns<Row> = [
  field('id'),
  field('name'),
  field('timezone'),
  field('address'),
];

export const TEMPLATE_COLUMNS: Columns<Row> = [
  field('id'),
  field('name'),
  field('kind'),
  {
    header: 'fields',
    value: (r) => (Array.isArray(r.fields) ? r.fields.map((f: Row) => f.name) : null),
  },
];

export const POOL_COLUMNS: Columns<Row> = [
  field('id'),
  field('name'),
  field('strategy'),
  field('failover after', 'failover_after'),
  field('printers', 'printer_ids'),
];

export const WEBHOOK_COLUMNS: Columns<Row> = [
  field('id'),
  field('url'),
  field('events'),
  yesNo('enabled', 'enabled'),
  field('failing since', 'failing_since'),
  field('disabled because', 'disabled_reason'),
];

export const DELIVERY_COLUMNS: Columns<Row> = [
  field('id'),
  field('event', 'event_type'),
  field('state'),
  field('attempts', 'attempt_count'),
  field('last status', 'last_status_code'),
  field('last attempt', 'last_attempt_at'),
  field('next attempt', 'next_attempt_at'),
];

export const JOB_COLUMNS: Columns<Row> = [
  field('id'),
  field('status'),
  field('title'),
  field('reference'),
  field('printer', 'printer_id'),
  field('created', 'created_at'),
  field('detail', 'status_detail'),
];

export const AUDIT_COLUMNS: Columns<Row> = [
  field('at'),
  field('actor'),
  field('method'),
  field('route'),
  { header: 'status', value: (r) => r.status ?? 'not recorded' },
  field('org', 'org_id'),
  field('ip'),
  // What it acted on: the ids in its path, what it created, the fields a change set.
  {
    header: 'target',
    value: (r) =>
      Object.entries((r.target ?? {}) as Record<string, unknown>)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(' ') || null,
  },
];
