/**
 * Agent releases from build to rollback, as an operator runs them (DESIGN "Agent releases"): two
 * packaged agents built and signed (N and N+1) and a broken N+2; four stations running N from an
 * empty root with no Node on PATH; N+1 rolled out to half of them, then to all; N+2 to all, which
 * each station rolls back and which stops itself; a tampered manifest and a tampered package
 * refused. Jobs print throughout, and none twice.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { ReleaseManifest } from '../lib/contracts/release-manifest.js';
import { SCOPES } from '../lib/credentials.js';
import { buildAgent } from '../scripts/build-agent.js';
import { tempDir } from './helpers/printing-org.js';
import { type Process, runProcess, spawnProcess } from './helpers/processes.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
} from './helpers/system.js';

const HOST_ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const PLATFORM = `linux-${HOST_ARCH}`;
const [N, N1, N2, N3, N4] = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0'];
const PATH_ENV = { PATH: process.env.PATH ?? '' };

interface Built {
  dir: string;
  key: KeyObject;
}

const test = anyTest as TestFn<Built>;

test.before(async (t) => {
  const dir = await tempDir('spool-agent-releases-');
  const { privateKey: key } = generateKeyPairSync('ed25519');
  const started = Date.now();
  for (const version of [N, N1] as string[]) {
    await buildAgent({ outDir: dir, arches: [HOST_ARCH], version, signingKey: key, log: () => {} });
  }
  t.log(`built ${N} and ${N1} in ${Date.now() - started} ms`);
  t.context = { dir, key };
});

test.after.always(async (t) => {
  if (t.context.dir) await rm(t.context.dir, { recursive: true, force: true });
});

/** A package that is signed and well formed but cannot run: its command exits at once. */
async function brokenRelease(dir: string, version: string, key: KeyObject): Promise<void> {
  const root = `spool-agent-${version}-${PLATFORM}`;
  const work = join(dir, `work-${version}`);
  await mkdir(join(work, root, 'bin'), { recursive: true });
  await mkdir(join(work, root, 'lib'), { recursive: true });
  await writeFile(join(work, root, 'bin', 'spool-agent'), '#!/bin/sh\nexit 3\n', { mode: 0o755 });
  await writeFile(join(work, root, 'lib', 'node'), '', { mode: 0o755 });
  const file = `${root}.tar.gz`;
  await runProcess('tar', ['-czf', join(dir, file), '-C', work, root], PATH_ENV);
  await signedManifest(dir, version, key, file);
}

async function signedManifest(
  dir: string,
  version: string,
  key: KeyObject,
  file: string,
  url = file,
): Promise<void> {
  const tarball = await readFile(join(dir, file));
  const manifest: ReleaseManifest = {
    version,
    platforms: {
      [PLATFORM]: {
        url,
        sha256: createHash('sha256').update(tarball).digest('hex'),
        size: tarball.length,
        file,
      },
    },
  };
  const bytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  await writeFile(join(dir, `release-${version}.json`), bytes);
  await writeFile(join(dir, `release-${version}.json.sig`), sign(null, bytes, key));
}

/** The stable share a station falls in (DESIGN "Agent releases"): SHA-256 of its id, mod 100. */
function bucketOf(stationId: string): number {
  return createHash('sha256').update(stationId).digest().readUInt32BE(0) % 100;
}

interface StationView {
  id: string;
  agent_version: string;
  online: boolean;
  update_state: string;
  update_version: string;
}

interface Job {
  id: string;
  status: string;
}

test('releases roll out by share, a broken one rolls back everywhere and stops itself, tampering is refused, and jobs print once throughout', async (t) => {
  const { dir, key } = t.context;
  await brokenRelease(dir, N2 as string, key);

  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret: apiKey } = await createKey(sys.url, orgId, { scopes: SCOPES });

  // Four stations, two in the first half of the shares and two in the second.
  const low: { id: string; token: string }[] = [];
  const high: { id: string; token: string }[] = [];
  while (low.length < 2 || high.length < 2) {
    const station = await createStation(sys.url, orgId, {
      name: `Station ${low.length + high.length}`,
    });
    const side = bucketOf(station.id) < 50 ? low : high;
    if (side.length < 2) side.push(station);
    else {
      const res = await call(sys.url, 'DELETE', `/admin/v1/orgs/${orgId}/stations/${station.id}`, {
        token: OPERATOR_TOKEN,
      });
      t.is(res.status, 204);
    }
  }
  const stations = [...low, ...high];

  // Each station: version N unpacked into its own empty root, run with no Node on PATH.
  const agents: Process[] = [];
  const printedDirs: string[] = [];
  t.teardown(async () => {
    await Promise.all(agents.map((a) => a.stop()));
  });
  for (const [i, station] of stations.entries()) {
    const root = join(dir, `station-${i}`);
    for (const sub of ['opt', 'etc', 'printed', 'state', 'usr/bin']) {
      await mkdir(join(root, sub), { recursive: true });
    }
    // A station's base system: tar and gzip, which the agent unpacks a release with; no node.
    for (const command of ['tar', 'gzip']) {
      const found = await runProcess('/bin/sh', ['-c', `command -v ${command}`], PATH_ENV);
      await symlink(found.stdout.trim(), join(root, 'usr', 'bin', command));
    }
    await runProcess(
      'tar',
      ['-xzf', join(dir, `spool-agent-${N}-${PLATFORM}.tar.gz`), '-C', join(root, 'opt')],
      PATH_ENV,
    );
    const home = join(root, 'opt', `spool-agent-${N}-${PLATFORM}`);
    await writeFile(join(root, 'etc', 'token'), `${station.token}\n`, { mode: 0o600 });
    const config = join(root, 'etc', 'agent.toml');
    await writeFile(
      config,
      [
        `server = "${sys.linkAddress}"`,
        `token_file = "${join(root, 'etc', 'token')}"`,
        `state_dir = "${join(root, 'state')}"`,
        '',
        '[printers]',
        `desk = "file:${join(root, 'printed')}"`,
        '',
      ].join('\n'),
    );
    const env = {
      PATH: `${join(home, 'bin')}:${join(root, 'usr', 'bin')}`,
      HOME: root,
      LOG_LEVEL: 'info',
    };
    const which = await runProcess('/bin/sh', ['-c', 'command -v node'], env);
    t.not(which.code, 0, 'no node on PATH');
    agents.push(spawnProcess(join(home, 'bin', 'spool-agent'), ['run', '--config', config], env));
    printedDirs.push(join(root, 'printed'));
  }
  const dump = () =>
    agents.map((a, i) => `--- station ${i}\n${a.output().slice(-4000)}`).join('\n');

  const stationView = async (id: string) =>
    (
      await call<{ station: StationView }>(
        sys.url,
        'GET',
        `/admin/v1/orgs/${orgId}/stations/${id}`,
        {
          token: OPERATOR_TOKEN,
        },
      )
    ).body.station;
  const views = () => Promise.all(stations.map((s) => stationView(s.id)));
  const waitFor = async (what: string, done: (v: StationView[]) => boolean, timeoutMs = 90_000) => {
    try {
      return await eventually(views, done, timeoutMs);
    } catch (error) {
      throw new Error(`${what}: ${(error as Error).message}\n${dump()}`);
    }
  };
  await waitFor('every station links on N', (v) =>
    v.every((s) => s.online && s.agent_version === N && s.update_state === 'current'),
  );

  // Jobs print to every station throughout.
  const printerOf = new Map<string, string>();
  const printers = await call<{ printers: { id: string; station_id: string }[] }>(
    sys.url,
    'GET',
    `/v1/orgs/${orgId}/printers`,
    { token: apiKey },
  );
  for (const p of printers.body.printers) printerOf.set(p.station_id, p.id);
  const jobs: string[] = [];
  let submitting = true;
  const submitter = (async () => {
    for (let n = 0; submitting; n += 1) {
      const station = stations[n % stations.length] as { id: string };
      const res = await call<{ job: Job }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
        token: apiKey,
        body: {
          printer_id: printerOf.get(station.id),
          title: `job ${n}`,
          content: { type: 'text', data: `job ${n}` },
        },
      });
      if (res.status !== 201) throw new Error(`POST job answered ${res.status}`);
      jobs.push(res.body.job.id);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  t.teardown(() => {
    submitting = false;
  });

  const admin = (method: string, path: string, body?: unknown) =>
    call<Record<string, unknown>>(sys.url, method, `/admin/v1${path}`, {
      token: OPERATOR_TOKEN,
      ...(body === undefined ? {} : { body }),
    });
  const publish = async (version: string, options: { upload?: boolean } = {}) => {
    const manifest = await readFile(join(dir, `release-${version}.json`), 'utf8');
    const sig = await readFile(join(dir, `release-${version}.json.sig`));
    const res = await admin('POST', '/releases', {
      manifest,
      signature: sig.toString('base64'),
    });
    t.is(res.status, 201, JSON.stringify(res.body));
    if (options.upload === false) return;
    const file = `spool-agent-${version}-${PLATFORM}.tar.gz`;
    const upload = await fetch(`${sys.url}/admin/v1/releases/${version}/files/${file}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/gzip' },
      body: await readFile(join(dir, file)),
    });
    t.true(upload.ok, `upload answered ${upload.status}: ${await upload.text()}`);
  };
  const rollout = async (version: string, percent: number, maxFailures?: number) => {
    const res = await admin('POST', `/releases/${version}/rollouts`, {
      percent,
      ...(maxFailures === undefined ? {} : { max_failures: maxFailures }),
    });
    t.is(res.status, 201, JSON.stringify(res.body));
  };

  // N+1 to half: the two stations in the first half update, the others do not.
  await publish(N1 as string);
  await rollout(N1 as string, 50);
  await waitFor('the first half updates to N+1', (v) =>
    v.slice(0, 2).every((s) => s.online && s.agent_version === N1 && s.update_state === 'current'),
  );
  for (const s of (await views()).slice(2)) {
    t.like(s, { agent_version: N, update_state: 'current', update_version: N });
  }

  // Then to all.
  await rollout(N1 as string, 100);
  await waitFor('every station updates to N+1', (v) =>
    v.every((s) => s.online && s.agent_version === N1 && s.update_state === 'current'),
  );

  // N+2 cannot start: every station rolls back to N+1, and the rollout stops itself.
  await publish(N2 as string);
  await rollout(N2 as string, 100, 4);
  const rolledBack = await waitFor('every station rolls N+2 back', (v) =>
    v.every((s) => s.online && s.agent_version === N1 && s.update_state === 'rolled_back'),
  );
  for (const s of rolledBack) t.is(s.update_version, N2);
  const releases = await admin('GET', '/releases');
  const n2 = (
    releases.body.items as {
      version: string;
      rollouts: { stopped_at?: string; stopped_reason?: string }[];
    }[]
  ).find((r) => r.version === N2);
  t.truthy(n2?.rollouts[0]?.stopped_at, JSON.stringify(n2));
  t.regex(n2?.rollouts[0]?.stopped_reason ?? '', /4 of 4 stations/);

  // A manifest changed after it was signed: every station refuses it, says why, and keeps N+1.
  await signedManifest(dir, N3 as string, key, `spool-agent-${N1}-${PLATFORM}.tar.gz`);
  const manifestFile = join(dir, `release-${N3}.json`);
  await writeFile(
    manifestFile,
    (await readFile(manifestFile, 'utf8')).replace('"size": ', '"size":  '),
  );
  await publish(N3 as string, { upload: false });
  await rollout(N3 as string, 100, 4);
  const refused = await waitFor('every station refuses the tampered manifest', (v) =>
    v.every((s) => s.update_version === N3 && s.update_state.startsWith('failed: ')),
  );
  for (const s of refused) {
    t.like(s, {
      agent_version: N1,
      online: true,
      update_state:
        'failed: the release manifest’s signature does not verify with the key built into this agent',
    });
  }

  // A package changed after its manifest was signed, served from elsewhere: refused too.
  const tamperedBytes = Buffer.from(
    await readFile(join(dir, `spool-agent-${N1}-${PLATFORM}.tar.gz`)),
  );
  const tamperer = createServer((_req, res) => {
    const bytes = Buffer.from(tamperedBytes);
    bytes[1000] = (bytes[1000] ?? 0) ^ 0xff;
    res.writeHead(200, { 'content-length': bytes.length }).end(bytes);
  });
  await new Promise<void>((resolve) => tamperer.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => tamperer.close(() => resolve())));
  const { port } = tamperer.address() as AddressInfo;
  const n4File = `spool-agent-${N4}-${PLATFORM}.tar.gz`;
  await writeFile(join(dir, n4File), tamperedBytes);
  await signedManifest(dir, N4 as string, key, n4File, `http://127.0.0.1:${port}/${n4File}`);
  await publish(N4 as string, { upload: false });
  await rollout(N4 as string, 100, 4);
  const mismatched = await waitFor('every station refuses the tampered package', (v) =>
    v.every((s) => s.update_version === N4 && s.update_state.startsWith('failed: ')),
  );
  for (const s of mismatched) {
    t.like(s, {
      agent_version: N1,
      online: true,
      update_state: 'failed: the package’s SHA-256 does not match the signed manifest',
    });
  }

  submitting = false;
  await submitter;
  // Every job printed, each exactly once.
  for (const id of jobs) {
    await eventually(
      () => call<{ job: Job }>(sys.url, 'GET', `/v1/orgs/${orgId}/jobs/${id}`, { token: apiKey }),
      (r) => r.body.job.status === 'printed',
      60_000,
    ).catch((error: Error) => {
      throw new Error(`job ${id}: ${error.message}\n${dump()}`);
    });
  }
  const printed: string[] = [];
  for (const d of printedDirs)
    printed.push(...(await readdir(d)).filter((f) => !f.startsWith('.')));
  t.is(printed.length, jobs.length);
  t.deepEqual(new Set(printed.map((f) => f.split('-').slice(0, 5).join('-'))).size, jobs.length);
});
