/**
 * The OpenAPI operations of agent releases (routes/releases.ts): publish a signed manifest, upload
 * its tarballs, list releases with their rollouts and stations, roll one out. They join the others
 * in openapi-admin.ts.
 */
import { Type } from '@sinclair/typebox';
import type { OperationSpec } from './openapi-builder.js';
import { CreateRolloutBody, PublishReleaseBody } from './routes/releases.js';

const nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const RELEASES_TAG = {
  name: 'Releases',
  description: 'Signed agent releases, their tarballs and their staged rollouts',
};

export const ReleaseSchema = Type.Object(
  {
    version: Type.String(),
    manifest: Type.String({ description: 'the manifest exactly as signed' }),
    signature: Type.String({ description: 'its Ed25519 signature, base64' }),
    platforms: Type.Array(Type.String(), { description: 'linux-x64, linux-arm64' }),
    published_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { additionalProperties: false },
);

export const RolloutSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    version: Type.String(),
    percent: Type.Integer({ minimum: 1, maximum: 100 }),
    org_id: nullable('only this organization’s stations; null for every organization'),
    max_failures: Type.Integer({ description: 'failures at which it stops itself' }),
    created_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    stopped_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    stopped_reason: nullable('why it stopped: "N of M stations failed to update; last: …"'),
  },
  { additionalProperties: false },
);

const ReleaseStationSchema = Type.Object(
  {
    station_id: Type.String({ format: 'uuid' }),
    org_id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    agent_version: nullable('the version its agent runs'),
    update_state: nullable('current, downloading, failed: <reason> or rolled_back'),
    update_version: nullable('the version its last update report is about'),
    update_detail: nullable('why an update failed or was rolled back'),
    online: Type.Boolean(),
  },
  { additionalProperties: false },
);

const ReleaseSummarySchema = Type.Object(
  {
    ...ReleaseSchema.properties,
    rollouts: Type.Array(RolloutSchema, { description: 'newest first' }),
    counts: Type.Record(Type.String(), Type.Integer(), {
      description:
        'stations running it, downloading it, failed on it, rolled back from it, and targeted at it now (exact)',
    }),
    stations: Type.Array(ReleaseStationSchema, {
      description: 'stations running it or updating to it, at most 500',
    }),
  },
  { additionalProperties: false },
);

export const RELEASE_OPERATIONS: Record<string, OperationSpec> = {
  'POST /admin/v1/releases': {
    operationId: 'publishRelease',
    tag: 'Releases',
    summary: 'Publish a signed agent release',
    description:
      'Stores the manifest and its signature byte for byte. The same version again with the same bytes answers the release; with other bytes 409. Upload its tarballs next.',
    request: { schema: PublishReleaseBody },
    success: {
      status: 201,
      description: 'the release',
      schema: Type.Object({ release: ReleaseSchema }, { additionalProperties: false }),
      location: null,
    },
    errors: ['invalid', 'conflict'],
  },
  'GET /admin/v1/releases': {
    operationId: 'listReleases',
    tag: 'Releases',
    summary: 'Releases, newest first, with their rollouts and stations',
    success: {
      status: 200,
      description: 'the releases',
      schema: Type.Object(
        { items: Type.Array(ReleaseSummarySchema) },
        { additionalProperties: false },
      ),
    },
  },
  'PUT /admin/v1/releases/:version/files/:file': {
    operationId: 'uploadReleaseFile',
    tag: 'Releases',
    summary: 'Upload one platform’s tarball of a published release',
    description:
      'The body is the tarball (at most 256 MiB), streamed to the AGENT_RELEASES bucket. `file` must be one of the manifest’s files, and the bytes must have its SHA-256 and size, else 400 and nothing is kept.',
    request: { binary: ['application/gzip', 'application/octet-stream'] },
    success: {
      status: 201,
      description: 'stored',
      schema: Type.Object(
        {
          file: Type.Object(
            {
              version: Type.String(),
              file: Type.String(),
              sha256: Type.String(),
              size: Type.Integer(),
            },
            { additionalProperties: false },
          ),
        },
        { additionalProperties: false },
      ),
      location: null,
    },
    errors: ['invalid', 'not_found', 'payload_too_large', 'unsupported_media_type'],
  },
  'POST /admin/v1/releases/:version/rollouts': {
    operationId: 'createRollout',
    tag: 'Releases',
    summary: 'Roll a release out to a share of the stations',
    description:
      'A station is covered when its organization matches (or none is given) and its stable bucket (the first 4 bytes of SHA-256 of its id, mod 100) is below `percent`. Its target is the newest covering rollout not stopped; linked agents are offered it at once. A rollout stops itself once `max_failures` of its stations failed or rolled back (default 5 % of those it covers, at least 1), and its stations fall back to the previous rollout’s version.',
    request: { schema: CreateRolloutBody },
    success: {
      status: 201,
      description: 'the rollout',
      schema: Type.Object({ rollout: RolloutSchema }, { additionalProperties: false }),
      location: null,
    },
    errors: ['invalid', 'not_found'],
  },
};
