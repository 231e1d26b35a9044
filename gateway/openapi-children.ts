/**
 * The OpenAPI operations of a platform's child organizations (gateway/routes/children.ts), keyed
 * as V1_ROUTES keys them, described from the schemas that check their requests and answers.
 */
import type { OperationSpec } from './openapi-builder.js';
import { EXAMPLE_ID } from './openapi-shared.js';
import {
  CHILDREN_QUERY,
  ChildDeletingAnswer,
  ChildOrgAnswer,
  ChildOrgSchema,
  CreateChildBody,
} from './routes/children.js';
import { listOf } from './schemas.js';

/** The tag of these operations, for the document's list of tags. */
export const ORGANIZATIONS_TAG = {
  name: 'Organizations',
  description:
    "A platform's child organizations, one for each of its customers: the parent's keys act on their routes too",
};

const tag = ORGANIZATIONS_TAG.name;
const base = '/v1/orgs/:org/children';

const CHILD_EXAMPLE = {
  id: '0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  name: 'Corner Bakery',
  parent_id: EXAMPLE_ID.org,
  reference: 'cust_1042',
  created_at: '2026-05-01T12:00:00Z',
};

export const CHILD_OPERATIONS: Record<string, OperationSpec> = {
  [`POST ${base}`]: {
    operationId: 'createChildOrg',
    tag,
    summary: 'Create a child organization',
    description:
      "An organization of its own (its own stations, printers, jobs, webhooks and keys) whose parent is this one: the parent's API keys act on its routes, `/v1/orgs/{child}/…`, with the scopes they have, while the child's own keys see neither its parent nor its siblings. One level only: a child cannot have children (`409 conflict`).",
    request: {
      schema: CreateChildBody,
      examples: {
        customer: {
          summary: "a customer, with the platform's own reference",
          value: { name: CHILD_EXAMPLE.name, reference: CHILD_EXAMPLE.reference },
        },
      },
    },
    success: {
      status: 201,
      description: 'the child organization',
      schema: ChildOrgAnswer,
      example: { org: CHILD_EXAMPLE },
      location: '/v1/orgs/{org}/children/{id}',
    },
    errors: ['conflict'],
  },
  [`GET ${base}`]: {
    operationId: 'listChildOrgs',
    tag,
    summary: 'Child organizations, oldest first',
    query: CHILDREN_QUERY,
    success: {
      status: 200,
      description: 'a page of child organizations',
      schema: listOf('items', ChildOrgSchema),
      example: { items: [CHILD_EXAMPLE], next_cursor: '' },
    },
    errors: ['invalid', 'unknown_field'],
  },
  [`GET ${base}/:id`]: {
    operationId: 'getChildOrg',
    tag,
    summary: 'A child organization',
    description: 'An organization that is not a child of this one answers 404, as an unknown one.',
    success: {
      status: 200,
      description: 'the child organization',
      schema: ChildOrgAnswer,
      example: { org: CHILD_EXAMPLE },
    },
    errors: ['unknown_field'],
  },
  [`DELETE ${base}/:id`]: {
    operationId: 'deleteChildOrg',
    tag,
    summary: 'Delete a child organization and everything it has',
    description:
      "As the operator deletes an organization: first its API keys are revoked (refused at once), its invitations withdrawn and its memberships ended, and from then on the parent's keys no longer reach it either; then its stations (their agents are disconnected) and printers, locations, jobs with their documents, uploads, templates, webhook endpoints and deliveries are deleted, and last the organization itself. It cannot be undone. A large organization may take more than one request: the answer is then `202`, and the same DELETE goes on where it stopped, until `204`.",
    success: { status: 204, description: 'the child organization is gone' },
    also: [
      {
        status: 202,
        description: 'keys revoked and partly deleted: send the same DELETE again to go on',
        schema: ChildDeletingAnswer,
      },
    ],
    errors: ['unknown_field'],
  },
};
