/**
 * The packaged agent's updater and supervisor on their own (agent/update.ts, agent/supervisor.ts):
 * a signed release served over real HTTP is checked, unpacked and swapped in; a manifest or a
 * package that does not match is refused and nothing changes; a version that does not link in time,
 * or exits first, is rolled back. The whole path through Spool is test/agent-releases.test.ts.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { mkdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { type SupervisedChild, supervise } from '../agent/supervisor.js';
import { RETRY_MAX_MS, retryAfterMs, Updater } from '../agent/update.js';
import { UpdateFiles } from '../agent/update-state.js';
import type { UpdateOffer, UpdateStatus } from '../gen/spool/v1/stations.js';
import { ManualClock } from '../lib/clock.js';
import type { ReleaseManifest } from '../lib/contracts/release-manifest.js';
import { createLogger } from '../lib/logger.js';
import { releasePublicKey } from '../scripts/build-agent.js';
import { tempDir } from './helpers/printing-org.js';
import { runProcess } from './helpers/processes.js';

const logger = createLogger({ name: 'test', level: 'silent' });
const PLATFORM = 'linux-x64';

/** A package as build:agent lays it out, with stand-ins for Node and the bundle. */
async function packageOf(dir: string, version: string): Promise<Buffer> {
  const root = `spool-agent-${version}-${PLATFORM}`;
  const work = join(dir, `work-${version}`);
  await mkdir(join(work, root, 'bin'), { recursive: true });
  await mkdir(join(work, root, 'lib'), { recursive: true });
  await writeFile(join(work, root, 'bin', 'spool-agent'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  await writeFile(join(work, root, 'lib', 'node'), `node for ${version}\n`, { mode: 0o755 });
  const archive = join(dir, `${root}.tar.gz`);
  await runProcess('tar', ['-czf', archive, '-C', work, root], { PATH: process.env.PATH ?? '' });
  return readFile(archive);
}

interface Release {
  offer: UpdateOffer;
  tarball: Buffer;
}

function release(version: string, tarball: Buffer, key: KeyObject): Release {
  const file = `spool-agent-${version}-${PLATFORM}.tar.gz`;
  const manifest: ReleaseManifest = {
    version,
    platforms: {
      [PLATFORM]: {
        url: file,
        sha256: createHash('sha256').update(tarball).digest('hex'),
        size: tarball.length,
        file,
      },
    },
  };
  const bytes = Buffer.from(JSON.stringify(manifest));
  return {
    tarball,
    offer: { version, manifest: bytes, signature: sign(null, bytes, key), downloadBase: '' },
  };
}

/** An answer the server gives instead of a package: its status, with headers such as Retry-After. */
type Refusal = number | { status: number; headers: Record<string, string> };

async function serve(
  files: Map<string, Buffer>,
  refusals: Refusal[],
): Promise<{ base: string; server: Server }> {
  const server = createServer((req, res) => {
    const refusal = refusals.shift();
    if (typeof refusal === 'number') {
      res.writeHead(refusal).end();
      return;
    }
    if (refusal !== undefined) {
      res.writeHead(refusal.status, refusal.headers).end();
      return;
    }
    const body = files.get(req.url?.split('/').at(-1) ?? '');
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}/agent/v1/releases/`, server };
}

async function setUp(t: import('ava').ExecutionContext) {
  const dir = await tempDir('spool-agent-update-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { privateKey } = generateKeyPairSync('ed25519');
  const files = new Map<string, Buffer>();
  /** Statuses the server answers the next downloads with, before it serves them. */
  const refusals: Refusal[] = [];
  /** The spread of retry waits (0: none, the waits as asked). */
  let spread = 0;
  const { base, server } = await serve(files, refusals);
  const retries: { retry: () => void; ms: number }[] = [];
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const reports: UpdateStatus[] = [];
  let restarts = 0;
  const stateDir = join(dir, 'state');
  const updater = new Updater({
    stateDir,
    version: '1.0.0',
    platform: PLATFORM,
    releaseKey: releasePublicKey(privateKey),
    logger,
    clock: new ManualClock(),
    report: (status) => reports.push(status),
    restart: () => {
      restarts += 1;
    },
    schedule: (retry, ms) => retries.push({ retry, ms }),
    random: () => spread,
  });
  const publish = async (version: string) => {
    const r = release(version, await packageOf(dir, version), privateKey);
    files.set(`spool-agent-${version}-${PLATFORM}.tar.gz`, r.tarball);
    r.offer.downloadBase = base;
    return r;
  };
  return {
    dir,
    stateDir,
    updater,
    reports,
    files,
    refusals,
    retries,
    key: privateKey,
    publish,
    restarts: () => restarts,
    spreadBy: (value: number) => {
      spread = value;
    },
  };
}

test('a signed release is downloaded, checked, unpacked and swapped in, then a restart is asked', async (t) => {
  const u = await setUp(t);
  const r = await u.publish('1.1.0');
  await u.updater.offer(r.offer);
  t.deepEqual(
    u.reports.map((s) => s.state),
    ['downloading'],
  );
  t.is(u.restarts(), 1);
  const files = new UpdateFiles(u.stateDir);
  t.is(await files.current(), '1.1.0');
  t.is(await readlink(join(files.dir, 'current')), join('versions', '1.1.0'));
  t.is(await readFile(join(files.versionDir('1.1.0'), 'lib', 'node'), 'utf8'), 'node for 1.1.0\n');
  t.not((await stat(join(files.versionDir('1.1.0'), 'bin', 'spool-agent'))).mode & 0o100, 0);
  const state = await files.read();
  t.is(state.pending?.version, '1.1.0');
  t.is(state.pending?.previous, null);

  // The version running is never installed again.
  const same = await u.publish('1.0.0');
  await u.updater.offer(same.offer);
  t.is(u.restarts(), 1);
});

test('a tampered package or manifest, or one signed by another key, is refused and reported; nothing changes', async (t) => {
  const u = await setUp(t);
  const files = new UpdateFiles(u.stateDir);

  // The package changed after it was signed.
  const tampered = await u.publish('1.1.0');
  const bytes = Buffer.from(tampered.tarball);
  bytes[bytes.length - 10] = (bytes[bytes.length - 10] ?? 0) ^ 0xff;
  u.files.set(`spool-agent-1.1.0-${PLATFORM}.tar.gz`, bytes);
  await u.updater.offer(tampered.offer);
  t.like(u.reports.at(-1), {
    state: 'failed',
    version: '1.1.0',
    detail: 'the package’s SHA-256 does not match the signed manifest',
  });

  // The manifest changed after it was signed (a hash pointing at another package, say).
  const other = await u.publish('1.2.0');
  const edited = Buffer.from(other.offer.manifest.toString().replace('"size":', '"size": '));
  await u.updater.offer({ ...other.offer, manifest: edited });
  t.like(u.reports.at(-1), {
    state: 'failed',
    version: '1.2.0',
    detail: 'the release manifest’s signature does not verify with the key built into this agent',
  });

  // Signed by a key the agent was not built with.
  const { privateKey: stranger } = generateKeyPairSync('ed25519');
  const foreign = await u.publish('1.3.0');
  await u.updater.offer({
    ...foreign.offer,
    signature: sign(null, foreign.offer.manifest, stranger),
  });
  t.is(u.reports.at(-1)?.state, 'failed');
  t.regex(u.reports.at(-1)?.detail ?? '', /signature does not verify/);

  // A package that is not there.
  const missing = await u.publish('1.4.0');
  u.files.delete(`spool-agent-1.4.0-${PLATFORM}.tar.gz`);
  await u.updater.offer(missing.offer);
  t.like(u.reports.at(-1), {
    state: 'failed',
    version: '1.4.0',
    detail: 'could not download the package: HTTP 404',
  });

  t.is(u.restarts(), 0);
  t.is(await files.current(), null);
  t.deepEqual(await files.read(), {});
  // A failed version offered again is not downloaded again.
  const count = u.reports.length;
  await u.updater.offer(tampered.offer);
  t.is(u.reports.length, count);
});

test('a download refused with Retry-After is tried again when asked, spread so that a site’s stations do not come back together', async (t) => {
  const u = await setUp(t);
  const r = await u.publish('1.4.0');
  u.refusals.push({ status: 429, headers: { 'retry-after': '7' } });
  await u.updater.offer(r.offer);
  t.is(u.retries[0]?.ms, 7_000, 'not the 30 s of a refusal that says nothing');
  t.like(u.reports.at(-1), {
    state: 'downloading',
    detail: 'could not download the package: HTTP 429; trying again in 7 s',
  });
  // Stretched by up to half again; never past the longest wait, nor shorter than a second.
  u.spreadBy(1);
  u.refusals.push({ status: 503, headers: { 'retry-after': '7' } });
  u.retries.shift()?.retry();
  await eventually(() => u.retries.length === 1);
  t.is(u.retries[0]?.ms, 10_500);
  u.refusals.push({ status: 429, headers: { 'retry-after': '86400' } });
  u.retries.shift()?.retry();
  await eventually(() => u.retries.length === 1);
  t.is(u.retries[0]?.ms, RETRY_MAX_MS);
  u.spreadBy(0);
  u.refusals.push({ status: 429, headers: { 'retry-after': '0' } });
  u.retries.shift()?.retry();
  await eventually(() => u.retries.length === 1);
  t.is(u.retries[0]?.ms, 1_000);
  u.retries.shift()?.retry();
  await eventually(() => u.restarts() === 1);
  t.is(await new UpdateFiles(u.stateDir).current(), '1.4.0');
});

test('Retry-After is read as seconds or as an HTTP date', (t) => {
  const now = new Date('2026-05-01T12:00:00Z');
  t.is(retryAfterMs('120', now), 120_000);
  t.is(retryAfterMs('Fri, 01 May 2026 12:00:30 GMT', now), 30_000);
  t.is(retryAfterMs('Fri, 01 May 2026 11:00:00 GMT', now), 0);
  t.is(retryAfterMs(null, now), undefined);
  t.is(retryAfterMs('soon', now), undefined);
});

test('a download the gateway cannot serve now (429, 5xx) is tried again later and reported downloading, not failed', async (t) => {
  const u = await setUp(t);
  const r = await u.publish('1.1.0');
  u.refusals.push(429, 503);
  await u.updater.offer(r.offer);
  t.like(u.reports.at(-1), {
    state: 'downloading',
    version: '1.1.0',
    detail: 'could not download the package: HTTP 429; trying again in 30 s',
  });
  t.is(u.retries.length, 1);
  t.is(u.retries[0]?.ms, 30_000);
  const first = u.retries.shift();
  first?.retry();
  await eventually(() => u.retries.length === 1);
  t.like(u.reports.at(-1), {
    state: 'downloading',
    detail: 'could not download the package: HTTP 503; trying again in 60 s',
  });
  t.is(u.retries[0]?.ms, 60_000);
  u.retries.shift()?.retry();
  await eventually(() => u.restarts() === 1);
  t.false(u.reports.some((s) => s.state === 'failed'));
  t.is(await new UpdateFiles(u.stateDir).current(), '1.1.0');

  // A retry of an offer since replaced by another is dropped.
  const later = await u.publish('1.2.0');
  const newer = await u.publish('1.3.0');
  u.refusals.push(502);
  await u.updater.offer(later.offer);
  u.refusals.push(502);
  await u.updater.offer(newer.offer);
  t.is(u.retries.length, 2);
  const count = u.reports.length;
  u.retries.shift()?.retry();
  await new Promise((resolve) => setImmediate(resolve));
  t.is(u.reports.length, count, 'the retry of 1.2.0 did nothing');
});

async function eventually(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (!done()) throw new Error('condition not met');
}

/** A child that runs until killed, or exits when told. */
function fakeChild(): SupervisedChild & { exit(code: number | null): void; signals: string[] } {
  let exit: (code: number | null) => void = () => {};
  const signals: string[] = [];
  const exited = new Promise<number | null>((resolve) => {
    exit = resolve;
  });
  return {
    exited,
    signals,
    exit: (code) => exit(code),
    kill(signal) {
      signals.push(signal);
      exit(null);
    },
  };
}

/** A version unpacked as the updater leaves it (its command, at least). */
async function unpacked(files: UpdateFiles, version: string): Promise<void> {
  await mkdir(join(files.versionDir(version), 'bin'), { recursive: true });
  await writeFile(join(files.versionDir(version), 'bin', 'spool-agent'), '#!/bin/sh\n', {
    mode: 0o755,
  });
}

async function supervision(t: import('ava').ExecutionContext, options = { unpack: true }) {
  const dir = await tempDir('spool-agent-supervise-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const files = new UpdateFiles(dir);
  if (options.unpack) await unpacked(files, '1.1.0');
  await files.write({ pending: { version: '1.1.0', previous: null, since: '' } });
  await files.setCurrent('1.1.0');
  const clock = new ManualClock();
  let stop: () => void = () => {};
  const stopRequested = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const spawned: { dir: string; child: ReturnType<typeof fakeChild> }[] = [];
  const ranHere: string[] = [];
  let onSpawn: (child: ReturnType<typeof fakeChild>) => void = () => {};
  const status = supervise({
    stateDir: dir,
    version: '1.0.0',
    logger,
    clock,
    // Each poll moves the clock on by the time it would have waited.
    sleep: async (ms) => {
      clock.advance(ms);
      await new Promise((resolve) => setImmediate(resolve));
    },
    stopRequested,
    async runHere() {
      ranHere.push('1.0.0');
      await stopRequested;
      return 'stopped';
    },
    spawn(versionDir) {
      const child = fakeChild();
      spawned.push({ dir: versionDir, child });
      onSpawn(child);
      return child;
    },
  });
  return {
    files,
    clock,
    spawned,
    ranHere,
    status,
    stop: () => stop(),
    onSpawn: (f: (child: ReturnType<typeof fakeChild>) => void) => {
      onSpawn = f;
    },
  };
}

test('a version swapped in that does not link within 60 s is stopped and rolled back, and not tried again', async (t) => {
  const s = await supervision(t);
  // The installed version runs again once the new one is rolled back.
  while (s.ranHere.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  t.is(s.spawned.length, 1);
  t.true(s.spawned[0]?.dir.endsWith(join('versions', '1.1.0')));
  t.deepEqual(s.spawned[0]?.child.signals, ['SIGTERM']);
  t.true(s.clock.now().getTime() >= new Date('2026-01-01T00:01:00Z').getTime());
  t.is(await s.files.current(), null);
  const state = await s.files.read();
  t.like(state.last, {
    state: 'rolled_back',
    version: '1.1.0',
    detail: 'version 1.1.0 did not link within 60 s',
  });
  t.deepEqual(state.refused, ['1.1.0']);
  t.is(state.pending, undefined);
  s.stop();
  t.is(await s.status, 0);
});

test('a version that exits before it links is rolled back at once', async (t) => {
  const s = await supervision(t);
  s.onSpawn((child) => setImmediate(() => child.exit(3)));
  while (s.ranHere.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  t.like((await s.files.read()).last, {
    state: 'rolled_back',
    detail: 'version 1.1.0 exited (3) before it linked',
  });
  t.true(s.clock.now().getTime() < new Date('2026-01-01T00:01:00Z').getTime());
  s.stop();
  t.is(await s.status, 0);
});

test('a version that links is kept, older versions are removed, and a stop ends it', async (t) => {
  const s = await supervision(t);
  await mkdir(join(s.files.dir, 'versions', '0.9.0'), { recursive: true });
  s.onSpawn(() => setImmediate(() => void s.files.markLinked('1.1.0')));
  for (;;) {
    const state = await s.files.read();
    if (state.last) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  t.like((await s.files.read()).last, { state: 'current', version: '1.1.0' });
  t.is(await s.files.current(), '1.1.0');
  await t.throwsAsync(stat(join(s.files.dir, 'versions', '0.9.0')));
  s.stop();
  t.is(await s.status, 0);
  t.deepEqual(s.spawned[0]?.child.signals, ['SIGTERM']);
  t.deepEqual(s.ranHere, []);
});

test('a version that links and at once swaps in the next one is not undone: the next one is proved in turn', async (t) => {
  const s = await supervision(t);
  s.onSpawn((child) => {
    const n = s.spawned.length;
    setImmediate(async () => {
      if (n === 1) {
        // 1.1.0 links, is offered 1.2.0, installs it and restarts, before the supervisor looks.
        await s.files.markLinked('1.1.0');
        await unpacked(s.files, '1.2.0');
        await s.files.exclusive(async () => {
          await s.files.write({
            ...(await s.files.read()),
            pending: { version: '1.2.0', previous: '1.1.0', since: '' },
          });
          await s.files.setCurrent('1.2.0');
        });
        child.exit(75);
      } else if (n === 2) {
        child.exit(3); // 1.2.0 cannot start
      }
    });
  });
  while (s.spawned.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
  t.deepEqual(
    s.spawned.map((c) => c.dir.split('/').at(-1)),
    ['1.1.0', '1.2.0', '1.1.0'],
  );
  t.is(await s.files.current(), '1.1.0');
  t.like((await s.files.read()).last, {
    state: 'rolled_back',
    version: '1.2.0',
    detail: 'version 1.2.0 exited (3) before it linked',
  });
  s.stop();
  t.is(await s.status, 0);
});

test('a current version whose folder is gone is rolled back to what is installed', async (t) => {
  const s = await supervision(t, { unpack: false });
  while (s.ranHere.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  t.deepEqual(s.spawned, []);
  t.is(await s.files.current(), null);
  t.like((await s.files.read()).last, { state: 'rolled_back', version: '1.1.0' });
  t.regex((await s.files.read()).last?.detail ?? '', /^version 1\.1\.0 is not in /);
  s.stop();
  t.is(await s.status, 0);
});
