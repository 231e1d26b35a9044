/**
 * Agent releases on the server (DESIGN "Agent releases"): publishing signed manifests, uploading and
 * downloading their tarballs, rollouts by stable share, offers over a station's link, its update
 * reports in the releases list and the station views, and a rollout that stops itself at its
 * failure limit, its stations falling back to the previous rollout's version.
 */
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata } from '@grpc/grpc-js';
import anyTest, { type TestFn } from 'ava';
import {
  AgentMessage,
  type DeepPartial,
  type ServerMessage,
  StationLinkClient,
  type UpdateOffer,
} from '../gen/spool/v1/stations.js';
import { createPool } from '../lib/db.js';
import {
  covers,
  defaultMaxFailures,
  fillRolloutBuckets,
  rolloutKey,
  stationBucket,
} from '../services/stations/releases.js';
import { runSpool } from './helpers/spool.js';
import {
  call,
  createOrg,
  createStation,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

const test = anyTest as TestFn<{ sys: TestSystem }>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

const { privateKey } = generateKeyPairSync('ed25519');

interface Built {
  version: string;
  manifest: string;
  signature: Buffer;
  tarball: Buffer;
  file: string;
}

function release(version: string, platforms = ['linux-x64']): Built {
  const tarball = randomBytes(300_000);
  const file = `spool-agent-${version}-linux-x64.tar.gz`;
  const entries = Object.fromEntries(
    platforms.map((p) => [
      p,
      {
        url: file,
        sha256: createHash('sha256').update(tarball).digest('hex'),
        size: tarball.length,
        file,
      },
    ]),
  );
  const manifest = JSON.stringify({ version, platforms: entries });
  return {
    version,
    manifest,
    signature: sign(null, Buffer.from(manifest), privateKey),
    tarball,
    file,
  };
}

const admin = (sys: TestSystem, method: string, path: string, body?: unknown) =>
  call<Record<string, unknown>>(sys.url, method, `/admin/v1${path}`, {
    token: OPERATOR_TOKEN,
    ...(body === undefined ? {} : { body }),
  });

async function publish(sys: TestSystem, r: Built) {
  return admin(sys, 'POST', '/releases', {
    manifest: r.manifest,
    signature: r.signature.toString('base64'),
  });
}

interface Link {
  offers: UpdateOffer[];
  send(msg: DeepPartial<AgentMessage>): void;
  until(predicate: () => boolean, what?: string): Promise<void>;
  close(): void;
}

/** A raw link saying hello as a packaged agent of `platform` running `version`. */
async function link(
  sys: TestSystem,
  token: string,
  version: string,
  platform: string,
  update?: { state: string; version: string; detail: string },
): Promise<Link> {
  const client = new StationLinkClient(sys.linkAddress, credentials.createInsecure());
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  const stream = client.connect(metadata);
  const offers: UpdateOffer[] = [];
  let welcomed = false;
  const listeners = new Set<() => void>();
  stream.on('data', (msg: ServerMessage) => {
    if (msg.welcome) welcomed = true;
    if (msg.update) offers.push(msg.update);
    for (const l of listeners) l();
  });
  stream.on('error', () => {});
  const until = (predicate: () => boolean, what = 'welcome') =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (predicate()) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`timed out waiting on the link for ${what}`));
      }, 10_000);
      listeners.add(check);
      check();
    });
  const send = (msg: DeepPartial<AgentMessage>) => stream.write(AgentMessage.fromPartial(msg));
  send({ hello: { agentVersion: version, printers: [], held: [], platform, update } });
  await until(() => welcomed);
  return {
    offers,
    send,
    until,
    close: () => {
      stream.cancel();
      client.close();
    },
  };
}

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a station’s bucket is stable and a rollout covers about its percent of stations', (t) => {
  const ids = Array.from({ length: 10_000 }, () => randomUUID());
  for (const id of ids.slice(0, 50)) t.is(stationBucket(id), stationBucket(id));
  const expected =
    createHash('sha256')
      .update(ids[0] as string)
      .digest()
      .readUInt32BE(0) % 100;
  t.is(stationBucket(ids[0] as string), expected);
  const key = (id: string) => rolloutKey({ id, orgId: 'o' });
  for (const percent of [1, 10, 50, 100]) {
    const covered = ids.filter((id) => covers({ org_id: null, percent }, key(id)));
    t.true(Math.abs(covered.length / ids.length - percent / 100) < 0.02, `${percent}%`);
  }
  // Growing a rollout keeps the stations it covered.
  const at10 = ids.filter((id) => covers({ org_id: null, percent: 10 }, key(id)));
  t.true(at10.every((id) => covers({ org_id: null, percent: 50 }, key(id))));
  t.false(covers({ org_id: 'other', percent: 100 }, key(ids[0] as string)));
  t.is(defaultMaxFailures(0), 1);
  t.is(defaultMaxFailures(40), 2);
  t.is(defaultMaxFailures(41), 3);
});

test('publishing: valid, idempotent, conflicting, invalid manifest, bad signature length', async (t) => {
  const { sys } = t.context;
  const r = release('2.0.0');
  const first = await publish(sys, r);
  t.is(first.status, 201, JSON.stringify(first.body));
  const published = first.body.release as Record<string, unknown>;
  t.is(published.version, '2.0.0');
  t.is(published.manifest, r.manifest);
  t.is(published.signature, r.signature.toString('base64'));
  t.deepEqual(published.platforms, ['linux-x64']);
  t.is((await publish(sys, r)).status, 201);
  // Audited as every operator action is.
  const audit = await admin(sys, 'GET', '/audit?actor=operator&limit=200');
  t.true(
    (audit.body.items as Array<{ method: string; route: string | null }>).some(
      (e) => e.method === 'POST' && e.route === '/admin/v1/releases',
    ),
    JSON.stringify(audit.body).slice(0, 500),
  );
  const other = release('2.0.0');
  const conflict = await publish(sys, other);
  t.is(conflict.status, 409);
  const bad = await admin(sys, 'POST', '/releases', {
    manifest: JSON.stringify({ version: 'x', platforms: {} }),
    signature: r.signature.toString('base64'),
  });
  t.is(bad.status, 400);
  t.is((bad.body.error as { code: string }).code, 'invalid');
  const short = await admin(sys, 'POST', '/releases', {
    manifest: release('2.0.1').manifest,
    signature: Buffer.alloc(63).toString('base64'),
  });
  t.is(short.status, 400);
  t.is((short.body.error as { param: string }).param, 'signature');
  const unknownPlatform = await admin(sys, 'POST', '/releases', {
    manifest: release('2.0.2', ['windows-x64']).manifest,
    signature: r.signature.toString('base64'),
  });
  t.is(unknownPlatform.status, 400);
});

test('a tarball is refused with wrong bytes, kept with the right ones and downloaded as sent', async (t) => {
  const { sys } = t.context;
  const r = release('3.0.0');
  t.is((await publish(sys, r)).status, 201);
  const put = (bytes: Buffer, file = r.file) =>
    fetch(`${sys.url}/admin/v1/releases/${r.version}/files/${file}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/gzip' },
      body: bytes,
    });
  const wrong = Buffer.from(r.tarball);
  wrong[1000] = (wrong[1000] as number) ^ 1;
  const refused = await put(wrong);
  t.is(refused.status, 400, await refused.text());
  const missing = await fetch(`${sys.url}/agent/v1/releases/${r.version}/${r.file}`);
  t.is(missing.status, 404);
  t.is(((await missing.json()) as { error: { code: string } }).error.code, 'not_found');
  t.is((await put(r.tarball, 'other.tar.gz')).status, 404);
  t.is((await put(r.tarball.subarray(1))).status, 400);
  const kept = await put(r.tarball);
  t.is(kept.status, 201, await kept.text());
  const got = await fetch(`${sys.url}/agent/v1/releases/${r.version}/${r.file}`);
  t.is(got.status, 200);
  const sha = createHash('sha256').update(r.tarball).digest('hex');
  t.is(got.headers.get('etag'), `"${sha}"`);
  t.is(got.headers.get('content-length'), String(r.tarball.length));
  t.true(Buffer.from(await got.arrayBuffer()).equals(r.tarball));
  // A refused upload after a kept one leaves the kept one.
  t.is((await put(wrong)).status, 400);
  const again = await fetch(`${sys.url}/agent/v1/releases/${r.version}/${r.file}`);
  t.true(Buffer.from(await again.arrayBuffer()).equals(r.tarball));
});

test('rollouts: offers on link and on creation, reports stored and shown, a failing rollout stops and its stations fall back', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Rollouts');
  const stations = await Promise.all(
    Array.from({ length: 4 }, (_, i) => createStation(sys.url, org, { name: `S${i}` })),
  );
  const base = release('5.0.0');
  const next = release('5.1.0');
  for (const r of [base, next]) t.is((await publish(sys, r)).status, 201);
  // Only this organization: other tests' stations stay out of it.
  const first = await admin(sys, 'POST', `/releases/${base.version}/rollouts`, {
    percent: 100,
    org_id: org,
  });
  t.is(first.status, 201, JSON.stringify(first.body));
  t.is((first.body.rollout as { max_failures: number }).max_failures, 1);

  // A packaged agent on the old version is offered the target on linking; one from source is not.
  const [a, b] = stations as [{ id: string; token: string }, { id: string; token: string }];
  const linkA = await link(sys, a.token, '4.0.0', 'linux-x64');
  t.teardown(() => linkA.close());
  await linkA.until(() => linkA.offers.length === 1, 'the offer on linking');
  const offer = linkA.offers[0] as UpdateOffer;
  t.is(offer.version, base.version);
  t.is(Buffer.from(offer.manifest).toString('utf8'), base.manifest);
  t.true(Buffer.from(offer.signature).equals(base.signature));
  t.is(offer.downloadBase, `${sys.url}/agent/v1/releases/${base.version}/`);
  const linkB = await link(sys, b.token, '4.0.0', '');
  t.teardown(() => linkB.close());

  // The agent reports; the report is stored and shown.
  linkA.send({ update: { state: 'downloading', version: base.version, detail: '' } });
  const shown = await eventually(
    () => admin(sys, 'GET', `/orgs/${org}/stations/${a.id}`),
    (res) => (res.body.station as { update_state: string }).update_state === 'downloading',
  );
  const station = shown.body.station as Record<string, unknown>;
  t.is(station.update_state, 'downloading');
  t.is(station.update_version, base.version);
  t.is(station.platform, 'linux-x64');
  t.truthy(station.update_at);
  const listed = await admin(sys, 'GET', '/releases');
  const summary = (listed.body.items as Array<Record<string, unknown>>).find(
    (i) => i.version === base.version,
  ) as { counts: Record<string, number>; stations: Array<Record<string, unknown>> };
  t.is(summary.counts.downloading, 1);
  t.is(summary.counts.targeted, 4);
  t.true(summary.stations.some((s) => s.station_id === a.id && s.update_state === 'downloading'));

  // Linked again on the target: nothing is offered.
  linkA.close();
  const onBase = await link(sys, a.token, base.version, 'linux-x64', {
    state: 'current',
    version: base.version,
    detail: '',
  });
  t.teardown(() => onBase.close());

  // A new rollout reaches the linked agent at once, once.
  const second = await admin(sys, 'POST', `/releases/${next.version}/rollouts`, {
    percent: 100,
    org_id: org,
    max_failures: 1,
  });
  t.is(second.status, 201);
  await onBase.until(() => onBase.offers.length === 1, 'the offer of a new rollout');
  t.is(onBase.offers[0]?.version, next.version);
  t.is(linkB.offers.length, 0);

  // It fails there: the rollout stops, and the station falls back to the previous target (its
  // version now: nothing more is offered).
  onBase.send({ update: { state: 'failed', version: next.version, detail: 'sha256 mismatch' } });
  const stopped = await eventually(
    () => admin(sys, 'GET', '/releases'),
    (res) =>
      (res.body.items as Array<{ version: string; rollouts: Array<{ stopped_at: unknown }> }>).some(
        (i) => i.version === next.version && i.rollouts[0]?.stopped_at,
      ),
  );
  const nextSummary = (
    stopped.body.items as Array<{
      version: string;
      counts: Record<string, number>;
      rollouts: Array<{ stopped_at: string | null; stopped_reason: string | null }>;
    }>
  ).find((i) => i.version === next.version);
  t.truthy(nextSummary?.rollouts[0]?.stopped_at);
  t.regex(
    nextSummary?.rollouts[0]?.stopped_reason ?? '',
    /^1 of 4 stations failed to update; last: sha256 mismatch$/,
  );
  t.is(nextSummary?.counts.failed, 1);
  t.is(nextSummary?.counts.targeted, 0);
  const failedView = await admin(sys, 'GET', `/orgs/${org}/stations/${a.id}`);
  t.is(
    (failedView.body.station as { update_state: string }).update_state,
    'failed: sha256 mismatch',
  );

  // A station linking now, still on the old version, is offered the previous target.
  const c = stations[2] as { id: string; token: string };
  const linkC = await link(sys, c.token, '4.0.0', 'linux-x64');
  t.teardown(() => linkC.close());
  await linkC.until(() => linkC.offers.length === 1, 'the fallback offer');
  t.is(linkC.offers[0]?.version, base.version);
  t.is(onBase.offers.length, 1);
});

test('spool admin release publish uploads the tarballs beside the manifest; rollout and list', async (t) => {
  const { sys } = t.context;
  const dir = await mkdtemp(join(tmpdir(), 'spool-release-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const r = release('7.0.0', ['linux-x64', 'linux-arm64']);
  await writeFile(join(dir, 'release-7.0.0.json'), r.manifest);
  // Base64 text is taken as well as the raw 64 bytes.
  await writeFile(join(dir, 'release-7.0.0.json.sig'), r.signature.toString('base64'));
  await writeFile(join(dir, r.file), r.tarball);
  const spool = (...args: string[]) =>
    runSpool(['admin', ...args, '--url', sys.url, '--token', OPERATOR_TOKEN], {});
  const published = await spool(
    'release',
    'publish',
    '--manifest',
    join(dir, 'release-7.0.0.json'),
    '--signature',
    join(dir, 'release-7.0.0.json.sig'),
  );
  t.is(published.code, 0, published.stderr);
  const out = JSON.parse(published.stdout) as { release: { version: string }; files: unknown[] };
  t.is(out.release.version, '7.0.0');
  t.is(out.files.length, 1);
  const got = await fetch(`${sys.url}/agent/v1/releases/7.0.0/${r.file}`);
  t.true(Buffer.from(await got.arrayBuffer()).equals(r.tarball));

  await writeFile(join(dir, 'raw.sig'), r.signature);
  const again = await spool(
    'release',
    'publish',
    '--manifest',
    join(dir, 'release-7.0.0.json'),
    '--signature',
    join(dir, 'raw.sig'),
  );
  t.is(again.code, 0, again.stderr);

  const org = await createOrg(sys.url, 'CLI rollouts');
  const rollout = await spool(
    'release',
    'rollout',
    '--version',
    '7.0.0',
    '--percent',
    '25',
    '--org',
    org,
    '--max-failures',
    '3',
  );
  t.is(rollout.code, 0, rollout.stderr);
  const made = JSON.parse(rollout.stdout) as { rollout: Record<string, unknown> };
  t.like(made.rollout, { version: '7.0.0', percent: 25, org_id: org, max_failures: 3 });
  const list = await spool('release', 'list', '--json');
  t.is(list.code, 0, list.stderr);
  const items = (JSON.parse(list.stdout) as { items: Array<{ version: string }> }).items;
  t.true(items.some((i) => i.version === '7.0.0'));
  const table = await spool('release', 'list');
  t.regex(table.stdout, /7\.0\.0/);
  t.regex(table.stdout, /25% of /);
});

test('a rollout by percent targets the stations whose bucket is below it, of its organization only', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Half');
  const other = await createOrg(sys.url, 'Other half');
  const stations = await Promise.all(
    Array.from({ length: 24 }, (_, i) => createStation(sys.url, org, { name: `H${i}` })),
  );
  await createStation(sys.url, other, { name: 'Elsewhere' });
  const r = release('9.0.0');
  t.is((await publish(sys, r)).status, 201);
  const made = await admin(sys, 'POST', `/releases/${r.version}/rollouts`, {
    percent: 50,
    org_id: org,
  });
  t.is(made.status, 201);
  const expected = stations.filter((s) => stationBucket(s.id) < 50).length;
  t.is((made.body.rollout as { max_failures: number }).max_failures, defaultMaxFailures(expected));
  const listed = await admin(sys, 'GET', '/releases');
  const summary = (
    listed.body.items as Array<{ version: string; counts: Record<string, number> }>
  ).find((i) => i.version === r.version);
  t.is(summary?.counts.targeted, expected);
  // The same share again covers the same stations.
  t.is(
    (await admin(sys, 'POST', `/releases/${r.version}/rollouts`, { percent: 50, org_id: org }))
      .status,
    201,
  );
  const again = await admin(sys, 'GET', '/releases');
  t.is(
    (again.body.items as Array<{ version: string; counts: Record<string, number> }>).find(
      (i) => i.version === r.version,
    )?.counts.targeted,
    expected,
  );
});

test('a stopped rollout leaves the stations that took its version on it; rolling the older version out again takes them back', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Halted');
  const [a, b, c] = (await Promise.all(
    Array.from({ length: 3 }, (_, i) => createStation(sys.url, org, { name: `R${i}` })),
  )) as [
    { id: string; token: string },
    { id: string; token: string },
    { id: string; token: string },
  ];
  const base = release('6.0.0');
  const next = release('6.1.0');
  for (const r of [base, next]) t.is((await publish(sys, r)).status, 201);
  const rollOut = async (version: string, maxFailures?: number) => {
    const made = await admin(sys, 'POST', `/releases/${version}/rollouts`, {
      percent: 100,
      org_id: org,
      ...(maxFailures === undefined ? {} : { max_failures: maxFailures }),
    });
    t.is(made.status, 201, JSON.stringify(made.body));
  };
  await rollOut(base.version);
  await rollOut(next.version, 1);

  // A took the new version; B fails on it, which stops the rollout.
  const tookIt = await link(sys, a.token, next.version, 'linux-x64', {
    state: 'current',
    version: next.version,
    detail: '',
  });
  tookIt.close();
  const failing = await link(sys, b.token, base.version, 'linux-x64');
  t.teardown(() => failing.close());
  await failing.until(() => failing.offers.length === 1, 'the offer of the new version');
  failing.send({ update: { state: 'failed', version: next.version, detail: 'disk full' } });
  const summaries = async () =>
    (await admin(sys, 'GET', '/releases')).body.items as Array<{
      version: string;
      counts: Record<string, number>;
      rollouts: Array<{ stopped_at: string | null }>;
    }>;
  const stopped = await eventually(summaries, (items) =>
    items.some((i) => i.version === next.version && i.rollouts[0]?.stopped_at),
  );
  t.truthy(stopped.find((i) => i.version === next.version)?.rollouts[0]?.stopped_at);

  // A links again on the stopped version: it is offered nothing, while a station on an older
  // version still is offered the previous target.
  const kept = await link(sys, a.token, next.version, 'linux-x64');
  t.teardown(() => kept.close());
  const behind = await link(sys, c.token, '5.9.0', 'linux-x64');
  t.teardown(() => behind.close());
  await behind.until(() => behind.offers.length === 1, 'the previous target');
  t.is(behind.offers[0]?.version, base.version);
  const counts = (await summaries()).find((i) => i.version === base.version)?.counts;
  t.is(counts?.targeted, 2, 'B and C are targeted at the previous version, A at none');
  t.is(counts?.running, 1);
  t.deepEqual(kept.offers, [], 'no way back is offered to the station that took the version');

  // Asked for, by rolling the older version out again, it is offered.
  await rollOut(base.version);
  await kept.until(() => kept.offers.length === 1, 'the older version, rolled out again');
  t.is(kept.offers[0]?.version, base.version);
});

test('stations made before buckets were stored are counted alike, and get theirs stored at start', async (t) => {
  const { sys } = t.context;
  const org = await createOrg(sys.url, 'Older');
  const stations = await Promise.all(
    Array.from({ length: 12 }, (_, i) => createStation(sys.url, org, { name: `O${i}` })),
  );
  // The pool every service is given: its lone statements run again when they fail to serialize
  // beside the other tests' writes, as a stations replica's do at start.
  const pool = createPool({ url: sys.db.url, max: 1 });
  t.teardown(() => pool.end());
  const stored = async () =>
    (
      await pool.query<{ id: string; rollout_bucket: number | null }>(
        'SELECT id, rollout_bucket FROM stations WHERE org_id = $1',
        [org],
      )
    ).rows;
  t.true((await stored()).every((r) => r.rollout_bucket === stationBucket(r.id)));
  // As stations made before the column read.
  await pool.query('UPDATE stations SET rollout_bucket = NULL WHERE org_id = $1', [org]);

  const r = release('8.0.0');
  t.is((await publish(sys, r)).status, 201);
  const expected = stations.filter((s) => stationBucket(s.id) < 50).length;
  const made = await admin(sys, 'POST', `/releases/${r.version}/rollouts`, {
    percent: 50,
    org_id: org,
  });
  t.is((made.body.rollout as { max_failures: number }).max_failures, defaultMaxFailures(expected));
  const targeted = async () =>
    (
      (await admin(sys, 'GET', '/releases')).body.items as Array<{
        version: string;
        counts: Record<string, number>;
      }>
    ).find((i) => i.version === r.version)?.counts.targeted;
  t.is(await targeted(), expected);

  t.is(await fillRolloutBuckets(pool, 5), 12, 'in batches of 5');
  t.true((await stored()).every((row) => row.rollout_bucket === stationBucket(row.id)));
  t.is(await fillRolloutBuckets(pool), 0);
  t.is(await targeted(), expected);
});
