/**
 * The packaged agent's updater (DESIGN "Agent releases", docs/agent.md "Updates"): told of a
 * newer target version over its link, it checks the release manifest's signature with the key
 * built into the agent, downloads its platform's package, checks its size and SHA-256, unpacks it
 * beside the others, swaps `current` to it and asks to be restarted into it. The supervisor
 * (agent/supervisor.ts) then watches the new version link and rolls back when it does not.
 *
 * Every step that fails leaves the running version as it was and is reported `failed: <reason>`
 * on the link; a manifest or package that does not match is never unpacked.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { UpdateOffer, UpdateStatus } from '../gen/spool/v1/stations.js';
import type { Clock } from '../lib/clock.js';
import {
  ManifestError,
  parseReleaseManifest,
  type ReleaseArtifact,
  verifyManifest,
} from '../lib/contracts/release-manifest.js';
import type { Logger } from '../lib/logger.js';
import { messageOf } from './backends/backend.js';
import { UpdateFiles } from './update-state.js';

const exec = promisify(execFile);
/** How long a package download may take before it is given up (and tried at the next offer). */
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

export interface UpdaterOptions {
  stateDir: string;
  /** The version running. */
  version: string;
  /** The platform of the running package (`linux-x64`). */
  platform: string;
  /** The release public key built into the agent (base64 of its 32 bytes). */
  releaseKey: string;
  logger: Logger;
  clock: Clock;
  /** Sends an update report on the link (dropped while it is down: the next hello carries it). */
  report(status: UpdateStatus): void;
  /** The new version is in place: stop this one, so that it starts. */
  restart(): void;
  /** Fetches a package; default: `fetch`. */
  fetch?: (url: string, init: { signal: AbortSignal }) => Promise<Response>;
  /** Runs `retry` after `ms` (a download that may work later); default: an unref'd timer. */
  schedule?: (retry: () => void, ms: number) => void;
  /** The spread of those waits, from 0 to 1 (default Math.random). */
  random?: () => number;
}

/** A step that cannot work for this release: reported `failed`, not tried again. */
class UpdateFailed extends Error {}
/**
 * A download that may work later (the network, a 429 or a 5xx): reported `downloading` with when
 * it is tried again, so that a busy or unreachable gateway does not count against a rollout.
 */
class RetryLater extends Error {
  /** How long the server asked to wait (`Retry-After`), when it said. */
  readonly afterMs: number | undefined;

  constructor(message: string, afterMs?: number) {
    super(message);
    this.afterMs = afterMs;
  }
}

/** The first wait before a download is tried again, doubling up to {@link RETRY_MAX_MS}. */
export const RETRY_FIRST_MS = 30_000;
export const RETRY_MAX_MS = 15 * 60_000;
/** The shortest wait, whatever `Retry-After` says. */
const RETRY_MIN_MS = 1_000;

/** HTTP statuses of a download that may answer otherwise later. */
function transient(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/** The wait an answer asks for in `Retry-After` (seconds, or an HTTP date), in ms; or undefined. */
export function retryAfterMs(value: string | null, now: Date): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

export class Updater {
  readonly #options: UpdaterOptions;
  readonly #files: UpdateFiles;
  /** The version being installed, while one is. */
  #busy: string | undefined;
  /** Versions that failed in this run: a new offer of one is not tried again until a restart. */
  readonly #failed = new Set<string>();
  /** The last offer: a retry of an older one is dropped. */
  #latest: string | undefined;
  /** Downloads of the latest offer tried again so far. */
  #retries = 0;

  constructor(options: UpdaterOptions & { files?: UpdateFiles }) {
    this.#options = options;
    this.#files = options.files ?? new UpdateFiles(options.stateDir);
  }

  /** Handles an offer; resolves when it has been installed (and a restart asked) or refused. */
  async offer(offer: UpdateOffer): Promise<void> {
    const { logger, version: running } = this.#options;
    const version = offer.version;
    if (version !== this.#latest) {
      this.#latest = version;
      this.#retries = 0;
    }
    if (version === running || version === this.#busy) return;
    if (this.#busy !== undefined) {
      logger.info(
        { version, installing: this.#busy },
        'an update offer waits for the one underway',
      );
      return;
    }
    const state = await this.#files.read();
    if (state.refused?.includes(version) || this.#failed.has(version)) {
      logger.debug({ version }, 'an update to a version that failed here is not tried again');
      return;
    }
    this.#busy = version;
    try {
      await this.#install(offer);
    } catch (error) {
      if (error instanceof RetryLater) {
        this.#retryLater(offer, error);
        return;
      }
      const detail =
        error instanceof UpdateFailed || error instanceof ManifestError
          ? error.message
          : `could not install it: ${messageOf(error)}`;
      this.#failed.add(version);
      logger.warn({ version, detail }, 'update failed; this version keeps running');
      this.#options.report({ state: 'failed', version, detail });
    } finally {
      this.#busy = undefined;
    }
  }

  /**
   * Tries the download again after what the server asked (`Retry-After`: a gateway counting the
   * downloads of a whole site behind one address says when there is room), else after 30 s
   * doubling; either stretched by up to half again at random, so that the stations of a site
   * refused together do not come back together.
   */
  #retryLater(offer: UpdateOffer, error: RetryLater): void {
    const why = error.message;
    const wait =
      error.afterMs === undefined
        ? RETRY_FIRST_MS * 2 ** this.#retries
        : Math.max(RETRY_MIN_MS, error.afterMs);
    const spread = 1 + (this.#options.random ?? Math.random)() / 2;
    const delay = Math.min(RETRY_MAX_MS, Math.round(wait * spread));
    this.#retries += 1;
    const detail = `${why}; trying again in ${Math.round(delay / 1000)} s`;
    this.#options.logger.warn({ version: offer.version, detail }, 'update download failed');
    this.#options.report({ state: 'downloading', version: offer.version, detail });
    const schedule =
      this.#options.schedule ??
      ((retry: () => void, ms: number) => {
        setTimeout(retry, ms).unref();
      });
    schedule(() => {
      if (this.#latest === offer.version) void this.offer(offer);
    }, delay);
  }

  async #install(offer: UpdateOffer): Promise<void> {
    const { logger, platform, releaseKey } = this.#options;
    if (!verifyManifest(offer.manifest, offer.signature, releaseKey)) {
      throw new UpdateFailed(
        'the release manifest’s signature does not verify with the key built into this agent',
      );
    }
    const manifest = parseReleaseManifest(offer.manifest);
    if (manifest.version !== offer.version) {
      throw new UpdateFailed(
        `the manifest is for version ${manifest.version}, not ${offer.version}`,
      );
    }
    const artifact = manifest.platforms[platform];
    if (!artifact) throw new UpdateFailed(`the release has no package for ${platform}`);
    const version = manifest.version;
    this.#options.report({ state: 'downloading', version, detail: '' });
    logger.info({ version }, 'updating: downloading the new version');

    const downloads = join(this.#files.dir, 'downloads');
    await mkdir(downloads, { recursive: true });
    const archive = join(downloads, artifact.file);
    try {
      await this.#download(artifact, offer.downloadBase, archive);
      await this.#unpack(archive, version);
    } finally {
      await rm(archive, { force: true });
    }
    const previous = await this.#files.exclusive(async () => {
      const state = await this.#files.read();
      const previous = await this.#files.current();
      delete state.last;
      state.pending = { version, previous, since: this.#options.clock.now().toISOString() };
      await this.#files.write(state);
      await this.#files.setCurrent(version);
      return previous;
    });
    logger.info({ version, previous: previous ?? 'installed' }, 'updating: restarting into it');
    this.#options.restart();
  }

  async #download(artifact: ReleaseArtifact, base: string, path: string): Promise<void> {
    let url: URL;
    try {
      url = new URL(artifact.url, base || undefined);
    } catch {
      throw new UpdateFailed(`the package URL ${artifact.url} cannot be resolved`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new UpdateFailed(`the package URL ${url.protocol} is not http(s)`);
    }
    const signal = AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS);
    let res: Response;
    try {
      res = await (this.#options.fetch ?? fetch)(url.href, { signal });
    } catch (error) {
      throw new RetryLater(`could not download the package: ${messageOf(error)}`);
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      const why = `could not download the package: HTTP ${res.status}`;
      if (!transient(res.status)) throw new UpdateFailed(why);
      throw new RetryLater(
        why,
        retryAfterMs(res.headers.get('retry-after'), this.#options.clock.now()),
      );
    }
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (size > artifact.size) {
          done(
            new UpdateFailed(`the package is larger than the manifest’s ${artifact.size} bytes`),
          );
          return;
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
        count,
        createWriteStream(path, { mode: 0o600 }),
      );
    } catch (error) {
      if (error instanceof UpdateFailed) throw error;
      throw new RetryLater(`could not download the package: ${messageOf(error)}`);
    }
    if (size !== artifact.size) {
      throw new UpdateFailed(`the package is ${size} bytes, not the manifest’s ${artifact.size}`);
    }
    if (hash.digest('hex') !== artifact.sha256) {
      throw new UpdateFailed('the package’s SHA-256 does not match the signed manifest');
    }
  }

  /** Unpacks the checked archive as `versions/<version>`, replacing a partial one. */
  async #unpack(archive: string, version: string): Promise<void> {
    const staging = join(this.#files.dir, 'versions', `.${version}.unpacking`);
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    try {
      await exec('tar', [
        '-xzf',
        archive,
        '-C',
        staging,
        '--no-same-owner',
        '--no-same-permissions',
      ]);
      const roots = await readdir(staging);
      const [root] = roots;
      if (roots.length !== 1 || root === undefined) {
        throw new UpdateFailed('the package does not hold one spool-agent folder');
      }
      const home = join(staging, root);
      for (const needed of ['bin/spool-agent', 'lib/node']) {
        if (!(await stat(join(home, needed)).catch(() => undefined))?.isFile()) {
          throw new UpdateFailed(`the package has no ${needed}`);
        }
      }
      const target = this.#files.versionDir(version);
      await rm(target, { recursive: true, force: true });
      await rename(home, target);
    } catch (error) {
      if (error instanceof UpdateFailed) throw error;
      throw new UpdateFailed(`could not unpack the package: ${messageOf(error)}`);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
}
