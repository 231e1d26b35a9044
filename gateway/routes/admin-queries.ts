/**
 * The query parameters of the operator's lists that `/v1` has no twin of (routes/admin-fleet.ts
 * answers them), as the admin OpenAPI document lists them and the routes read them. The lists they
 * share with `/v1` (jobs, printers) take the `/v1` routes' own.
 */
import {
  choiceParam,
  flagParam,
  LIST_QUERY,
  type QuerySpec,
  textParam,
  timeQueryParam,
} from '../query.js';

/** `GET /admin/v1/orgs`: by name, or those part-deleted. The accounts service checks `q`. */
export const ORG_LIST_QUERY = {
  q: textParam('keep organizations whose name contains this, ignoring case', {
    type: 'string',
    maxLength: 200,
  }),
  deleting: flagParam(
    'true: only organizations whose deletion began and did not finish (send their DELETE again)',
  ),
  ...LIST_QUERY,
} as const satisfies QuerySpec;

/** `GET /admin/v1/stations`: every organization's, or those offline now. */
export const STATION_LIST_QUERY = {
  offline: flagParam('true: only stations offline now'),
  ...LIST_QUERY,
} as const satisfies QuerySpec;

/** `GET /admin/v1/webhooks`: every organization's endpoints, or those in trouble. */
export const ENDPOINT_LIST_QUERY = {
  state: choiceParam('failing or disabled; all endpoints without it', ['failing', 'disabled']),
  ...LIST_QUERY,
} as const satisfies QuerySpec;

/** `GET /admin/v1/audit`: the accounts service checks `org` and `actor`. */
export const AUDIT_QUERY = {
  org: textParam('only actions on this organization'),
  actor: textParam('only actions of this actor: operator or person:<id>'),
  since: timeQueryParam('only actions at or after this time (RFC 3339)'),
  until: timeQueryParam('only actions before this time (RFC 3339)'),
  ...LIST_QUERY,
} as const satisfies QuerySpec;
