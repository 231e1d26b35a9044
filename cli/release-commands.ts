/**
 * `spool admin release …`: publish a signed agent release with its tarballs, roll it out to a share
 * of the stations, and list releases with their rollouts and stations (docs/deploy.md, "Agent
 * releases").
 */
import { access, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { parseReleaseManifest, SIGNATURE_BYTES } from '../lib/contracts/release-manifest.js';
import type { AdminContext } from './admin.js';
import { enc } from './admin-options.js';
import { renderTable } from './table.js';

/** The signature file as `build:agent` writes it: raw 64 bytes, or their base64 text. */
export function readSignature(bytes: Buffer): Buffer {
  if (bytes.length === SIGNATURE_BYTES) return bytes;
  const text = bytes.toString('utf8').trim();
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    const decoded = Buffer.from(text, 'base64');
    if (decoded.length === SIGNATURE_BYTES) return decoded;
  }
  throw new Error(
    `the signature file holds ${bytes.length} bytes: it must be the raw ${SIGNATURE_BYTES}-byte Ed25519 signature or its base64`,
  );
}

interface Listed {
  version: string;
  platforms: string[];
  published_at: string;
  counts: Record<string, number>;
  rollouts: Array<{
    percent: number;
    org_id: string | null;
    created_at: string;
    stopped_at: string | null;
    stopped_reason: string | null;
  }>;
}

function renderReleases(items: Listed[]): string {
  return renderTable(
    [
      { header: 'version', value: (r: Listed) => r.version },
      { header: 'platforms', value: (r) => r.platforms.join(',') },
      { header: 'published', value: (r) => r.published_at },
      { header: 'running', value: (r) => r.counts.running ?? 0 },
      { header: 'targeted', value: (r) => r.counts.targeted ?? 0 },
      { header: 'downloading', value: (r) => r.counts.downloading ?? 0 },
      { header: 'failed', value: (r) => r.counts.failed ?? 0 },
      { header: 'rolled back', value: (r) => r.counts.rolled_back ?? 0 },
      {
        header: 'rollout',
        value: (r) => {
          const last = r.rollouts[0];
          if (!last) return null;
          const scope = `${last.percent}%${last.org_id ? ` of ${last.org_id}` : ''}`;
          return last.stopped_at ? `${scope}, stopped: ${last.stopped_reason ?? ''}` : scope;
        },
      },
    ],
    items,
  );
}

export function addReleaseCommands(adminCommand: Command, ctx: AdminContext): void {
  const release = adminCommand.command('release').description('signed agent releases');
  release
    .command('publish')
    .description(
      'publish a signed release manifest, then upload each platform’s tarball found next to it; prints {release, files}',
    )
    .requiredOption('--manifest <file>', 'the release manifest (JSON), as build:agent wrote it')
    .requiredOption('--signature <file>', 'its Ed25519 signature: raw 64 bytes, or base64')
    .action(async (opts: { manifest: string; signature: string }) => {
      const manifest = await readFile(opts.manifest);
      const signature = readSignature(await readFile(opts.signature));
      const parsed = parseReleaseManifest(manifest);
      const client = await ctx.client();
      const published = (await client.request('POST', '/releases', {
        manifest: manifest.toString('utf8'),
        signature: signature.toString('base64'),
      })) as { release: unknown };
      const files: unknown[] = [];
      const uploaded = new Set<string>();
      for (const [platform, artifact] of Object.entries(parsed.platforms)) {
        if (uploaded.has(artifact.file)) continue;
        uploaded.add(artifact.file);
        const path = join(dirname(opts.manifest), artifact.file);
        try {
          await access(path);
        } catch {
          process.stderr.write(
            `note: ${artifact.file} (${platform}) is not next to the manifest; not uploaded\n`,
          );
          continue;
        }
        if (!client.upload) throw new Error('this client cannot upload files');
        const answer = (await client.upload(
          `/releases/${enc(parsed.version)}/files/${enc(artifact.file)}`,
          path,
          'application/gzip',
        )) as { file: unknown };
        files.push(answer.file);
      }
      process.stdout.write(`${JSON.stringify({ ...published, files }, null, 2)}\n`);
    });
  release
    .command('rollout')
    .description('roll a published release out to a share of the stations; prints {rollout}')
    .requiredOption('--version <version>', 'the release version')
    .requiredOption('--percent <p>', 'share of the stations, 1 to 100 (stable by station id)')
    .option('--org <org>', 'only this organization’s stations')
    .option(
      '--max-failures <n>',
      'stop once this many of its stations failed or rolled back (default: 5% of those it covers, at least 1)',
    )
    .action(
      async (
        opts: { version: string; percent: string; org?: string; maxFailures?: string },
        command,
      ) => {
        const percent = Number(opts.percent);
        if (!Number.isInteger(percent) || percent < 1 || percent > 100) {
          (command as Command).error('error: --percent must be a whole number from 1 to 100', {
            exitCode: 2,
          });
        }
        const maxFailures = opts.maxFailures === undefined ? undefined : Number(opts.maxFailures);
        if (maxFailures !== undefined && !(Number.isInteger(maxFailures) && maxFailures >= 1)) {
          (command as Command).error('error: --max-failures must be a whole number of 1 or more', {
            exitCode: 2,
          });
        }
        await ctx.admin('POST', `/releases/${enc(opts.version)}/rollouts`, {
          percent,
          ...(opts.org === undefined ? {} : { org_id: opts.org }),
          ...(maxFailures === undefined ? {} : { max_failures: maxFailures }),
        });
      },
    );
  release
    .command('list')
    .description('releases, newest first, with their rollouts, counts by state and stations')
    .option('--json', 'print the API answer, {items}')
    .action(async (opts: { json?: boolean }) => {
      const client = await ctx.client();
      const answer = (await client.request('GET', '/releases')) as { items: Listed[] };
      process.stdout.write(
        opts.json ? `${JSON.stringify(answer, null, 2)}\n` : renderReleases(answer.items),
      );
    });
}
