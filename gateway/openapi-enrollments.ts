/**
 * The OpenAPI operations of station enrollment codes (gateway/routes/enrollments.ts): the keyed
 * one of `/v1`, keyed as V1_ROUTES keys it, and the public exchange of a code, which
 * gateway/openapi-public.ts lists with the other public endpoints.
 */
import {
  ENROLL_ATTEMPTS_PER_MINUTE,
  EXAMPLE_ENROLLMENT_CODE,
} from '../lib/contracts/enrollments.js';
import type { OperationSpec, Surface } from './openapi-builder.js';
import { EXAMPLE_ID } from './openapi-shared.js';
import {
  CreateEnrollmentBody,
  EnrollAnswer,
  EnrollBody,
  EnrollmentAnswer,
} from './routes/enrollments.js';

/** The tag of these operations, for the document's list of tags. */
export const STATIONS_TAG = {
  name: 'Stations',
  description:
    'Stations, where the agent runs: enrollment codes that a station installs itself with, no token typed',
};

const ENROLLMENT_EXAMPLE = {
  id: '0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0',
  code: EXAMPLE_ENROLLMENT_CODE,
  station_name: 'Front desk',
  location_id: EXAMPLE_ID.location,
  expires_at: '2026-05-02T12:00:00Z',
  created_at: '2026-05-01T12:00:00Z',
};

const STATION_EXAMPLE = {
  id: EXAMPLE_ID.station,
  org_id: EXAMPLE_ID.org,
  name: 'Front desk',
  location_id: EXAMPLE_ID.location,
  online: false,
  last_seen_at: null,
  agent_version: null,
  region: 'default',
  token_revoked_at: null,
  created_at: '2026-05-01T12:05:00Z',
};

/** The operations of `/v1`, keyed as V1_ROUTES keys them. */
export const ENROLLMENT_OPERATIONS: Record<string, OperationSpec> = {
  'POST /v1/orgs/:org/enrollments': {
    operationId: 'createEnrollment',
    tag: STATIONS_TAG.name,
    summary: 'Create a one-use enrollment code for a station',
    description:
      "The code (`XXXX-XXXX-XX`: 50 random bits, without 0, O, 1 or I) is what the station's installer types: `spool agent enroll --server HOST:PORT CODE`, or `POST /v1/public/enroll`, makes the station named here, in this organization, and gives its agent the station's device token. It works once, until `expires_at` (24 hours unless `expires_in` says), and is in this answer only: Spool keeps its hash. There is no URL to read it back at, so the answer has no `Location`. A `location_id` that names no location of the organization is `400 invalid`.",
    request: {
      schema: CreateEnrollmentBody,
      examples: {
        desk: {
          summary: 'a code for the front desk, for a week',
          value: {
            station_name: 'Front desk',
            location_id: EXAMPLE_ID.location,
            expires_in: 604800,
          },
        },
      },
    },
    success: {
      status: 201,
      description: 'the enrollment, with its code',
      schema: EnrollmentAnswer,
      example: { enrollment: ENROLLMENT_EXAMPLE },
      location: null,
    },
  },
};

const PUBLIC_SURFACE: Surface = { auth: 'none', rateLimited: true, idempotentPosts: false };

/** `POST /v1/public/enroll`, listed among the public operations. */
export const ENROLL_OPERATION: OperationSpec = {
  operationId: 'enrollStation',
  tag: 'Public',
  summary: 'Exchange an enrollment code for its station and device token',
  description: `No key needed: the code is the credential. Makes the station the code was created for (\`POST /v1/orgs/{org}/enrollments\`), in that organization, and answers it with its device token (\`svc_dev_…\`, shown once), as creating a station does; the code is used. An unknown code answers 404 not_found; a code already used, or expired, 410 gone. At most ${ENROLL_ATTEMPTS_PER_MINUTE} attempts a minute per client address (429 with Retry-After beyond), besides the 30 requests a minute of every public endpoint. Not for web pages of other origins. \`spool agent enroll\` makes the same exchange over the station link's address.`,
  surface: PUBLIC_SURFACE,
  request: {
    schema: EnrollBody,
    examples: { code: { summary: 'a code as given', value: { code: EXAMPLE_ENROLLMENT_CODE } } },
  },
  success: {
    status: 201,
    description: 'the station and its device token',
    schema: EnrollAnswer,
    example: { station: STATION_EXAMPLE, token: 'svc_dev_3xAmPl3t0k3nN0tR3al' },
    location: null,
  },
  errors: ['not_found', 'gone', 'unavailable'],
};
