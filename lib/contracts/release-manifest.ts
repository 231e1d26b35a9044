/**
 * An agent release (DESIGN "Agent releases"): a JSON manifest naming, per platform, the packaged
 * agent's tarball, and an Ed25519 signature over the manifest's exact bytes. `npm run build:agent`
 * writes and signs it, the stations service stores and offers it, the gateway serves its tarballs,
 * and the agent checks it with the public key built into it. This is the one place that says what a
 * manifest is.
 *
 *   {"version": "0.2.0",
 *    "platforms": {"linux-x64": {"url": "spool-agent-0.2.0-linux-x64.tar.gz",
 *                                "sha256": "<hex>", "size": 31457280,
 *                                "file": "spool-agent-0.2.0-linux-x64.tar.gz"}, …}}
 *
 * `url` is absolute, or relative to the gateway's `/agent/v1/releases/<version>/` address.
 */
import { createPublicKey, verify } from 'node:crypto';

export interface ReleaseArtifact {
  url: string;
  sha256: string;
  size: number;
  file: string;
}

export interface ReleaseManifest {
  version: string;
  platforms: Record<string, ReleaseArtifact>;
}

/** The platforms a package is built for: `linux-x64`, `linux-arm64`. */
export const PLATFORM_PATTERN = /^linux-(x64|arm64)$/;
/** A release version: what package.json's `version` may hold, bounded. */
export const VERSION_PATTERN = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
export const MAX_VERSION_LENGTH = 64;
export const MAX_MANIFEST_BYTES = 64 * 1024;
export const SIGNATURE_BYTES = 64;
/** The largest tarball a release may name. */
export const MAX_ARTIFACT_BYTES = 256 * 1024 * 1024;
const FILE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;

export class ManifestError extends Error {
  override name = 'ManifestError';
}

/** The platform this process's package is built for, or undefined on one Spool does not build. */
export function hostPlatform(): string | undefined {
  const platform = `${process.platform}-${process.arch}`;
  return PLATFORM_PATTERN.test(platform) ? platform : undefined;
}

export function isReleaseVersion(version: string): boolean {
  return version.length <= MAX_VERSION_LENGTH && VERSION_PATTERN.test(version);
}

/** Parses and checks a manifest's bytes; throws {@link ManifestError} saying what is wrong. */
export function parseReleaseManifest(bytes: Uint8Array): ReleaseManifest {
  if (bytes.length > MAX_MANIFEST_BYTES) {
    throw new ManifestError(`the manifest is over ${MAX_MANIFEST_BYTES} bytes`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new ManifestError('the manifest is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new ManifestError('the manifest is not a JSON object');
  }
  const { version, platforms } = doc as { version?: unknown; platforms?: unknown };
  if (typeof version !== 'string' || !isReleaseVersion(version)) {
    throw new ManifestError('the manifest needs a version such as "1.4.0"');
  }
  if (typeof platforms !== 'object' || platforms === null || Array.isArray(platforms)) {
    throw new ManifestError('the manifest needs platforms: {"linux-x64": {…}, …}');
  }
  const out: Record<string, ReleaseArtifact> = {};
  for (const [platform, raw] of Object.entries(platforms)) {
    if (!PLATFORM_PATTERN.test(platform)) {
      throw new ManifestError(
        `unknown platform ${JSON.stringify(platform)}: linux-x64 or linux-arm64`,
      );
    }
    const a = (raw ?? {}) as Partial<Record<keyof ReleaseArtifact, unknown>>;
    if (typeof a.url !== 'string' || a.url === '' || a.url.length > 2048) {
      throw new ManifestError(`${platform}: url is required (at most 2048 characters)`);
    }
    if (typeof a.sha256 !== 'string' || !SHA256_PATTERN.test(a.sha256)) {
      throw new ManifestError(`${platform}: sha256 must be 64 lowercase hex digits`);
    }
    if (
      typeof a.size !== 'number' ||
      !Number.isSafeInteger(a.size) ||
      a.size <= 0 ||
      a.size > MAX_ARTIFACT_BYTES
    ) {
      throw new ManifestError(`${platform}: size must be 1 to ${MAX_ARTIFACT_BYTES} bytes`);
    }
    if (typeof a.file !== 'string' || !FILE_PATTERN.test(a.file)) {
      throw new ManifestError(`${platform}: file must be a plain file name`);
    }
    out[platform] = { url: a.url, sha256: a.sha256, size: a.size, file: a.file };
  }
  if (Object.keys(out).length === 0) throw new ManifestError('the manifest names no platform');
  return { version, platforms: out };
}

/**
 * Whether `signature` is the Ed25519 signature of `manifest` by the key whose raw 32 bytes are
 * `publicKey` (base64).
 */
export function verifyManifest(
  manifest: Uint8Array,
  signature: Uint8Array,
  publicKey: string,
): boolean {
  if (signature.length !== SIGNATURE_BYTES) return false;
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey, 'base64').toString('base64url') },
    format: 'jwk',
  });
  return verify(null, manifest, key, signature);
}
