/**
 * Agent releases at the gateway (DESIGN "Agent releases", docs/deploy.md "Agent releases"): the
 * operator publishes a signed manifest, uploads its tarballs and rolls it out; agents download the
 * tarballs from `/agent/v1/releases/<version>/<file>`, public (releases are signed: the agent
 * checks the signature and the SHA-256), out of the JetStream object store bucket `AGENT_RELEASES`
 * under `<version>/<file>`.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Router } from '@koa/router';
import type { ObjectStore } from '@nats-io/obj';
import { Type } from '@sinclair/typebox';
import type { Middleware } from 'koa';
import type { Release, ReleaseSummary, Rollout } from '../../gen/spool/v1/stations.js';
import {
  isReleaseVersion,
  MAX_ARTIFACT_BYTES,
  parseReleaseManifest,
} from '../../lib/contracts/release-manifest.js';
import { invalid, notFound, SpoolError } from '../../lib/errors.js';
import { rfc3339OrNull } from '../../lib/time.js';
import { type OperatorToken, requireOperator } from '../auth.js';
import { body } from '../body.js';
import type { Backends } from '../clients.js';
import type { GatewayState } from '../state.js';

export const PublishReleaseBody = Type.Object(
  {
    manifest: Type.String({
      maxLength: 64 * 1024,
      description: 'the release manifest, exactly the bytes that were signed, as a JSON string',
    }),
    signature: Type.String({
      maxLength: 256,
      description: 'the raw 64-byte Ed25519 signature of the manifest, base64',
    }),
  },
  { additionalProperties: false },
);

export const CreateRolloutBody = Type.Object(
  {
    percent: Type.Integer({
      minimum: 1,
      maximum: 100,
      description: 'the share of the stations targeted, stable by station id',
    }),
    org_id: Type.Optional(
      Type.String({ maxLength: 64, description: 'only this organization’s stations' }),
    ),
    max_failures: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description:
          'stop the rollout once this many of its stations failed or rolled back; default 5 % of the stations it covers when created, at least 1',
      }),
    ),
  },
  { additionalProperties: false },
);

export function releaseView(release: Release) {
  return {
    version: release.version,
    manifest: Buffer.from(release.manifest).toString('utf8'),
    signature: Buffer.from(release.signature).toString('base64'),
    platforms: release.platforms,
    published_at: rfc3339OrNull(release.publishedAt),
  };
}

export function rolloutView(rollout: Rollout) {
  return {
    id: rollout.id,
    version: rollout.version,
    percent: rollout.percent,
    org_id: rollout.orgId || null,
    max_failures: rollout.maxFailures,
    created_at: rfc3339OrNull(rollout.createdAt),
    stopped_at: rfc3339OrNull(rollout.stoppedAt),
    stopped_reason: rollout.stoppedReason || null,
  };
}

/** An update state as DESIGN words it: `failed: <reason>` for a failure. */
export function updateStateWords(state: string, detail: string): string | null {
  if (state === '') return null;
  return state === 'failed' && detail !== '' ? `failed: ${detail}` : state;
}

export function releaseSummaryView(summary: ReleaseSummary) {
  return {
    ...releaseView(summary.release as Release),
    rollouts: summary.rollouts.map(rolloutView),
    counts: summary.counts,
    stations: summary.stations.map((s) => ({
      station_id: s.stationId,
      org_id: s.orgId,
      name: s.name,
      agent_version: s.agentVersion || null,
      update_state: updateStateWords(s.updateState, s.updateDetail),
      update_version: s.updateVersion || null,
      update_detail: s.updateDetail || null,
      online: s.online,
    })),
  };
}

/** The object store's digest (`SHA-256=<base64url>`) in hex. */
function digestHex(digest: string): string {
  return Buffer.from(digest.replace(/^SHA-256=/, ''), 'base64url').toString('hex');
}

const FILE_PARAM = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

function objectName(version: string, file: string): string {
  if (!isReleaseVersion(version)) throw notFound(`no release ${version}`);
  if (!FILE_PARAM.test(file)) throw notFound(`no file ${file} in release ${version}`);
  return `${version}/${file}`;
}

export interface ReleasesRouterDeps {
  backends: Backends;
  operatorToken: OperatorToken;
  bodyLimit: number;
  /** The `AGENT_RELEASES` bucket, opened on first use. */
  releases: () => Promise<ObjectStore>;
}

/** `/admin/v1/releases…`: publish, upload, list, roll out. */
export function adminReleasesRouter(deps: ReleasesRouterDeps): Router<GatewayState> {
  const { stations } = deps.backends;
  const router = new Router<GatewayState>({ prefix: '/admin/v1' });
  router.use(requireOperator(deps.operatorToken));

  router.post('/releases', async (ctx) => {
    const req = await body(ctx, PublishReleaseBody, deps.bodyLimit);
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(req.signature)) {
      throw invalid('signature must be base64', 'signature');
    }
    const { release } = await stations.publishRelease({
      manifest: Buffer.from(req.manifest, 'utf8'),
      signature: Buffer.from(req.signature, 'base64'),
    });
    ctx.status = 201;
    ctx.body = { release: releaseView(release as Release) };
  });

  router.get('/releases', async (ctx) => {
    const { items } = await stations.listReleases({});
    ctx.body = { items: items.map(releaseSummaryView) };
  });

  router.post('/releases/:version/rollouts', async (ctx) => {
    const req = await body(ctx, CreateRolloutBody, deps.bodyLimit);
    const { rollout } = await stations.createRollout({
      version: ctx.params.version ?? '',
      percent: req.percent,
      orgId: req.org_id ?? '',
      maxFailures: req.max_failures ?? 0,
    });
    ctx.status = 201;
    ctx.body = { rollout: rolloutView(rollout as Rollout) };
  });

  // The tarball of one of the release's platforms, streamed to the bucket; its bytes must be the
  // manifest's (SHA-256 and size), else nothing is kept.
  router.put('/releases/:version/files/:file', async (ctx) => {
    const version = ctx.params.version ?? '';
    const file = ctx.params.file ?? '';
    const name = objectName(version, file);
    const type = (ctx.get('Content-Type') || '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/gzip' && type !== 'application/octet-stream') {
      throw new SpoolError(
        'unsupported_media_type',
        'send the tarball as application/gzip or application/octet-stream',
      );
    }
    const { release } = await stations.getRelease({ version }).catch((err: unknown) => {
      throw err instanceof SpoolError && err.code === 'not_found'
        ? notFound(`no release ${version}: publish its manifest first`)
        : err;
    });
    if (!release) throw notFound(`no release ${version}: publish its manifest first`);
    const manifest = parseReleaseManifest(release.manifest);
    const artifact = Object.values(manifest.platforms).find((a) => a.file === file);
    if (!artifact) {
      throw notFound(`release ${version} names no file ${file}`);
    }
    const declared = Number(ctx.get('Content-Length') || Number.NaN);
    if (Number.isFinite(declared) && declared !== artifact.size) {
      throw invalid(
        `the file is ${declared} bytes; the manifest says ${artifact.size}`,
        'content-length',
      );
    }
    if (artifact.size > MAX_ARTIFACT_BYTES) {
      throw new SpoolError('payload_too_large', `a tarball is at most ${MAX_ARTIFACT_BYTES} bytes`);
    }
    const hash = createHash('sha256');
    let size = 0;
    let refused: SpoolError | undefined;
    const checked = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.length;
        if (size > artifact.size) {
          refused = invalid(`the file is over the manifest's ${artifact.size} bytes`, 'body');
          controller.error(refused);
          return;
        }
        hash.update(chunk);
        controller.enqueue(chunk);
      },
      flush(controller) {
        const sha256 = hash.digest('hex');
        if (size !== artifact.size || sha256 !== artifact.sha256) {
          refused = invalid(
            `the file's SHA-256 and size (${sha256}, ${size} bytes) are not the manifest's (${artifact.sha256}, ${artifact.size} bytes)`,
            'body',
          );
          controller.error(refused);
        }
      },
    });
    const source = Readable.toWeb(ctx.req) as unknown as ReadableStream<Uint8Array>;
    const store = await deps.releases();
    try {
      await store.put({ name }, source.pipeThrough(checked));
    } catch (err) {
      if (refused) throw refused;
      throw err;
    }
    ctx.status = 201;
    ctx.body = { file: { version, file, sha256: artifact.sha256, size: artifact.size } };
  });

  return router;
}

/** `/agent/v1/releases/<version>/<file>`: the tarballs, to any agent. */
export function agentReleasesRouter(deps: {
  releases: () => Promise<ObjectStore>;
  limit: Middleware<GatewayState>;
}): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/agent/v1' });
  router.use((ctx, next) => deps.limit(ctx, next));
  router.get('/releases/:version/:file', async (ctx) => {
    const version = ctx.params.version ?? '';
    const file = ctx.params.file ?? '';
    const name = objectName(version, file);
    const store = await deps.releases();
    const info = await store.info(name);
    if (!info || info.deleted) throw notFound(`no file ${file} in release ${version}`);
    const got = await store.get(name);
    if (!got) throw notFound(`no file ${file} in release ${version}`);
    ctx.set('ETag', `"${digestHex(info.digest)}"`);
    ctx.set('Cache-Control', 'public, max-age=86400, immutable');
    ctx.type = 'application/gzip';
    ctx.length = info.size;
    ctx.body = Readable.fromWeb(got.data as Parameters<typeof Readable.fromWeb>[0]);
  });
  return router;
}
