/**
 * The OpenAPI operations of the operator's reads, updates and deletes (routes/admin-fleet.ts):
 * organizations by name, stations, printers, locations, templates, jobs and the audit log. They
 * join the others in openapi-admin.ts.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import type { ErrorCode } from '../lib/errors.js';
import { DiagnoseBody, DiagnosisSchema } from './diagnosis.js';
import { V1_OPERATIONS } from './openapi.js';
import type { OperationSpec } from './openapi-builder.js';
import { operatorList } from './openapi-shared.js';
import { UpdateLocationBody, UpdateStationBody, UpdateTemplateBody } from './routes/admin-fleet.js';
import {
  AUDIT_QUERY,
  ENDPOINT_LIST_QUERY,
  ORG_LIST_QUERY,
  STATION_LIST_QUERY,
} from './routes/admin-queries.js';
import { PRINTER_LIST_QUERY } from './routes/fleet.js';
import { WebhookEndpointSchema } from './routes/webhooks.js';
import {
  AdminStationSchema,
  LocationSchema,
  OrgSchema,
  PrinterSchema,
  TemplateSchema,
} from './schemas.js';

const answer = (field: string, schema: TSchema) =>
  Type.Object({ [field]: schema }, { additionalProperties: false });

const NOT_FOUND: ErrorCode[] = ['not_found'];
const LIST_ERRORS: ErrorCode[] = ['unknown_field', 'not_found'];

export const AuditEntrySchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    actor: Type.Union([Type.String(), Type.Null()], {
      description: 'operator, or person:<id> (a signed-in person)',
    }),
    session_id: Type.Union([Type.String(), Type.Null()], {
      description: 'the session of a signed-in person',
    }),
    org_id: Type.Union([Type.String(), Type.Null()], {
      description: 'the organization of the path; null for installation-wide actions',
    }),
    method: Type.String(),
    route: Type.Union([Type.String(), Type.Null()], {
      description: 'the route template, such as /admin/v1/orgs/:org/stations/:id',
    }),
    target: Type.Record(Type.String(), Type.String(), {
      description: 'the ids in the path other than the organization (id, person_id, delivery…)',
    }),
    status: Type.Union([Type.Integer(), Type.Null()], {
      description: 'the HTTP status answered; null when the outcome was never recorded',
    }),
    ip: Type.String({ description: 'the client address' }),
    user_agent: Type.String(),
    request_id: Type.String({ description: 'the Request-Id header of the answer' }),
  },
  { additionalProperties: false },
);

export const AUDIT_TAG = {
  name: 'Audit',
  description: 'Who did what, when and from where: every operator and console action',
};

export const FLEET_OPERATIONS: Record<string, OperationSpec> = {
  'GET /admin/v1/orgs': operatorList({
    operationId: 'listOrgs',
    tag: 'Organizations',
    summary: 'Organizations, oldest first, optionally by name',
    query: ORG_LIST_QUERY,
    page: 'a page of organizations',
    item: OrgSchema,
    errors: ['unknown_field'],
  }),
  'GET /admin/v1/stations': operatorList({
    operationId: 'listAllStations',
    tag: 'Stations',
    summary: "Every organization's stations, oldest first, or only those offline",
    description:
      'The whole fleet in one list, each station with its `org_id`: with `offline=true`, the stations whose agents are not linked now (a revoked token shows as `token_revoked_at`).',
    query: STATION_LIST_QUERY,
    page: 'a page of stations',
    item: AdminStationSchema,
    errors: ['unknown_field'],
  }),
  'GET /admin/v1/webhooks': operatorList({
    operationId: 'listAllWebhookEndpoints',
    tag: 'Webhooks',
    summary: "Every organization's webhook endpoints, or those failing or disabled",
    description:
      'The receivers in trouble across the installation, each endpoint with its `org_id`: `failing` (enabled, every attempt failing since `failing_since`; disabled after 5 days of it) or `disabled` (by a person, or by Spool: `disabled_reason`).',
    query: ENDPOINT_LIST_QUERY,
    page: 'a page of endpoints',
    item: WebhookEndpointSchema,
    errors: ['unknown_field'],
  }),
  'GET /admin/v1/orgs/:org/stations': operatorList({
    operationId: 'listStations',
    tag: 'Stations',
    summary: 'Stations with their online state, last contact and agent version',
    page: 'a page of stations',
    item: AdminStationSchema,
    errors: LIST_ERRORS,
  }),
  'GET /admin/v1/orgs/:org/stations/:id': {
    operationId: 'getStation',
    tag: 'Stations',
    summary: 'A station',
    success: {
      status: 200,
      description: 'the station',
      schema: answer('station', AdminStationSchema),
    },
    errors: NOT_FOUND,
  },
  'PATCH /admin/v1/orgs/:org/stations/:id': {
    operationId: 'updateStation',
    tag: 'Stations',
    summary: 'Rename a station or move it to another location of its organization',
    description:
      'Fields left out keep their value; `location_id: null` takes the station out of its location. Its printers move with it.',
    request: { schema: UpdateStationBody },
    success: {
      status: 200,
      description: 'the station',
      schema: answer('station', AdminStationSchema),
    },
    errors: NOT_FOUND,
  },
  'DELETE /admin/v1/orgs/:org/stations/:id': {
    operationId: 'deleteStation',
    tag: 'Stations',
    summary: 'Delete a station, its printers and its device token',
    description:
      'Its unfinished jobs (scheduled, held, queued or sent) fail with `status_detail` "its station was deleted" and a `job.failed` webhook: no printer is left to print them. Its device token stops working and its link is cut. Finished jobs keep their record.',
    success: { status: 204, description: 'deleted' },
    errors: NOT_FOUND,
  },
  'POST /admin/v1/orgs/:org/stations/:id/diagnose': {
    operationId: 'diagnoseStation',
    tag: 'Stations',
    summary: "Ask a linked station's agent for its log lines, printers and versions",
    description:
      'The agent answers over its link with its last log lines (200 unless `log_lines` says fewer), each printer as its backend sees it and its versions, within 1 MiB (`truncated` says when lines were left out). Never a secret: no token, key or password, and printer targets without credentials. 503 when the station is not linked or its agent does not answer within 10 s. Audited like every operator action.',
    request: { schema: DiagnoseBody, required: false },
    success: {
      status: 200,
      description: 'the report',
      schema: answer('diagnosis', DiagnosisSchema),
    },
    errors: ['invalid', 'not_found', 'unavailable'],
  },
  'GET /admin/v1/orgs/:org/printers': operatorList({
    operationId: 'listPrinters',
    tag: 'Printers',
    summary: 'Printers of the organization, of one station or of one location',
    query: PRINTER_LIST_QUERY,
    page: 'a page of printers',
    item: PrinterSchema,
    errors: LIST_ERRORS,
  }),
  'GET /admin/v1/orgs/:org/printers/:id': {
    operationId: 'getPrinter',
    tag: 'Printers',
    summary: 'A printer',
    success: { status: 200, description: 'the printer', schema: answer('printer', PrinterSchema) },
    errors: NOT_FOUND,
  },
  'DELETE /admin/v1/orgs/:org/printers/:id': {
    operationId: 'deletePrinter',
    tag: 'Printers',
    summary: 'Delete a printer, whatever its status',
    description:
      "Its unfinished jobs fail with `status_detail` naming the deleted printer and a `job.failed` webhook. A printer its agent still reports comes back, with a new id, at the agent's next report: remove it from the agent first.",
    success: { status: 204, description: 'deleted' },
    errors: NOT_FOUND,
  },
  'GET /admin/v1/orgs/:org/locations': operatorList({
    operationId: 'listLocations',
    tag: 'Locations',
    summary: 'Locations, oldest first',
    page: 'a page of locations',
    item: LocationSchema,
    errors: LIST_ERRORS,
  }),
  'GET /admin/v1/orgs/:org/locations/:id': {
    ...(V1_OPERATIONS['GET /v1/orgs/:org/locations/:id'] as OperationSpec),
    errors: NOT_FOUND,
  },
  'PATCH /admin/v1/orgs/:org/locations/:id': {
    operationId: 'updateLocation',
    tag: 'Locations',
    summary: 'Rename a location or change its address or time zone',
    description: 'Fields left out keep their value.',
    request: { schema: UpdateLocationBody },
    success: {
      status: 200,
      description: 'the location',
      schema: answer('location', LocationSchema),
    },
    errors: NOT_FOUND,
  },
  'DELETE /admin/v1/orgs/:org/locations/:id': {
    operationId: 'deleteLocation',
    tag: 'Locations',
    summary: 'Delete an empty location',
    description: 'While a station is in it the answer is 409: move or delete its stations first.',
    success: { status: 204, description: 'deleted' },
    errors: ['conflict', 'not_found'],
  },
  'GET /admin/v1/orgs/:org/templates': operatorList({
    operationId: 'listTemplates',
    tag: 'Templates',
    summary: 'Templates, oldest first',
    page: 'a page of templates',
    item: TemplateSchema,
    errors: LIST_ERRORS,
  }),
  'GET /admin/v1/orgs/:org/templates/:id': {
    operationId: 'getTemplate',
    tag: 'Templates',
    summary: 'A template',
    success: {
      status: 200,
      description: 'the template',
      schema: answer('template', TemplateSchema),
    },
    errors: NOT_FOUND,
  },
  'PATCH /admin/v1/orgs/:org/templates/:id': {
    operationId: 'updateTemplate',
    tag: 'Templates',
    summary: "Change a template's name, kind, body or fields",
    description:
      'Fields left out keep their value; `fields`, when given, replaces them all. The result is checked as a new template is. Jobs already made from it keep their document.',
    request: { schema: UpdateTemplateBody },
    success: {
      status: 200,
      description: 'the template',
      schema: answer('template', TemplateSchema),
    },
    errors: NOT_FOUND,
  },
  'DELETE /admin/v1/orgs/:org/templates/:id': {
    operationId: 'deleteTemplate',
    tag: 'Templates',
    summary: 'Delete a template',
    description: 'Jobs already made from it keep their document; new jobs naming it answer 400.',
    success: { status: 204, description: 'deleted' },
    errors: NOT_FOUND,
  },
  // What the organization's integrations get, for support; never a document.
  'GET /admin/v1/orgs/:org/jobs': {
    ...(V1_OPERATIONS['GET /v1/orgs/:org/jobs'] as OperationSpec),
    summary: "An organization's jobs, newest first, as its integrations list them",
    description: 'For support: the same page, filters and counts as `GET /v1/orgs/{org}/jobs`.',
    errors: ['invalid', ...LIST_ERRORS],
  },
  'GET /admin/v1/orgs/:org/jobs/:id': {
    ...(V1_OPERATIONS['GET /v1/orgs/:org/jobs/:id'] as OperationSpec),
    errors: NOT_FOUND,
  },
  'GET /admin/v1/audit': operatorList({
    operationId: 'listAudit',
    tag: AUDIT_TAG.name,
    summary: 'The audit log, newest first',
    description:
      'One entry per authenticated state-changing request to `/admin/v1` (the operator) or `/console/v1`, per state-changing request of a signed-in session anywhere, and per successful sign-in. Written before the action runs (if that write fails the action does not run and the answer is 503) and completed with the status before the answer is sent. Never holds a body or a credential.',
    query: AUDIT_QUERY,
    page: 'a page of entries',
    item: AuditEntrySchema,
    errors: ['unknown_field'],
  }),
};
