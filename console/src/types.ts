/**
 * The shapes of the API's answers. Those of `/v1` are the generated ones of the OpenAPI document
 * (the client's names for them, types only), so that the console breaks at build time when the
 * API changes. `/console/v1` is not in that document: its shapes are declared here, as
 * docs/console-api.md describes them.
 */
import type { Location, paths } from '../../client/types.js';
import type { Role } from '../../lib/roles.js';

export type {
  ChildOrg,
  ChildOrgPage,
  CreateChildOrgRequest,
  Job,
  JobEvent,
  /** A page of jobs; `JobPage` is the console's page of one job. */
  JobPage as JobList,
  JobStatus,
  JobWithEvents,
  Location,
  LocationPage,
  Pool,
  PoolPage,
  Printer,
  PrinterPage,
  /** One organization's figures on one UTC day; days without activity are zeros. */
  UsageDay,
} from '../../client/types.js';
export { ROLES, type Role } from '../../lib/roles.js';

/** A location as the console's list answers it: as `/v1` shows it, with its number of stations. */
export type ConsoleLocation = Location & { station_count: number };

/** The JSON answer of `method` on `path` with status `status`. */
type Answer<
  P extends keyof paths,
  M extends keyof paths[P],
  S extends number,
> = paths[P][M] extends { responses: Record<S, { content: { 'application/json': infer B } }> }
  ? B
  : never;

type EndpointPath = '/v1/orgs/{org}/webhooks/{id}';
type DeliveriesPath = '/v1/orgs/{org}/webhooks/{id}/deliveries';

/** A webhook endpoint: `{endpoint}` of `GET …/webhooks/{id}`. */
export type Endpoint = Answer<EndpointPath, 'get', 200>['endpoint'];
/** A page of endpoints. */
export type EndpointList = Answer<'/v1/orgs/{org}/webhooks', 'get', 200>;
/**
 * What creating an endpoint answers: the endpoint and its secret, shown once. The document marks
 * the secret optional (no other answer has it); these two always carry it.
 */
export type CreatedEndpoint = Required<Answer<'/v1/orgs/{org}/webhooks', 'post', 201>>;
/** What a rotation answers: the endpoint and its new secret, shown once. */
export type RotatedSecret = Required<Answer<'/v1/orgs/{org}/webhooks/{id}/rotate', 'post', 200>>;
/** A page of an endpoint's delivery log. */
export type DeliveryPage = Answer<DeliveriesPath, 'get', 200>;
/** One delivery of an event to an endpoint, with every attempt. */
export type Delivery = DeliveryPage['items'][number];
/** The states a delivery can be in, as the log's filter names them. */
export type DeliveryState = Delivery['state'];

export interface Person {
  id: string;
  email: string;
  display_name: string;
}
export interface OrgMembership {
  id: string;
  name: string;
  role: Role;
}
export interface Session {
  person: Person;
  orgs: OrgMembership[];
  csrf_token: string;
}
export interface Station {
  id: string;
  name: string;
  location_id: string | null;
  online: boolean;
  last_seen_at: string | null;
  region: string;
  /** When its device token was revoked: its agent is refused until a new token is made. */
  token_revoked_at: string | null;
  created_at: string;
  /** Its agent's last update: current, downloading, failed: <reason> or rolled_back; null if none. */
  update_state?: string | null;
  update_version?: string | null;
}
export interface ApiKey {
  id: string;
  name: string | null;
  live: boolean;
  scopes: string[];
  hint: string;
  allowed_ips: string[];
  expires_at: string | null;
  created_at: string;
  revoked_at: string | null;
  /** When a request was last let in with it, to about the minute; null if never. */
  last_used_at: string | null;
}
export interface Member {
  person_id: string;
  email: string;
  display_name: string;
  role: Role;
  joined_at: string;
}
export interface Invitation {
  id: string;
  email: string;
  role: Role;
  expires_at: string;
}
/** What an invitation's link shows before it is accepted. */
export interface InvitationInfo {
  invitation: Invitation & { org: { id: string; name: string } };
}
/** The overview's counts. */
export interface Overview {
  stations: { online: number; total: number };
  /** By the status each printer last reported, whether or not its station is connected. */
  printers: Record<string, number>;
  jobs_today: Record<string, number>;
  /** The start of the UTC day the jobs are counted from. */
  since?: string;
}

/** What `GET /v1/orgs/{org}/usage` answers: `{items}`, a `UsageDay` per UTC day and organization. */
export type Usage = Answer<'/v1/orgs/{org}/usage', 'get', 200>;
