/**
 * The packaged agent, as a station owner gets it: `npm run build:agent` builds the archives once for
 * this run; the one for this machine is unpacked into an empty temporary root and run with no Node
 * on PATH, against a real Spool, with a configuration file, a `file:` printer and (when CUPS is
 * installed) a private CUPS scheduler's queues.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import { SCOPES } from '../lib/credentials.js';
import { type Artifact, buildAgent } from '../scripts/build-agent.js';
import { missingCupsPrograms, startTestCups, type TestCups } from './helpers/cups.js';
import { tempDir } from './helpers/printing-org.js';
import { runProcess, spawnProcess } from './helpers/processes.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
} from './helpers/system.js';

interface Context {
  outDir: string;
  manifest: Record<string, Artifact>;
}

const test = anyTest as TestFn<Context>;
const HOST_ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const OTHER_ARCH = HOST_ARCH === 'x64' ? 'arm64' : 'x64';
/** ELF e_machine of each architecture's binaries. */
const ELF_MACHINE: Record<string, number> = { x64: 0x3e, arm64: 0xb7 };

test.before(async (t) => {
  const outDir = await tempDir('spool-agent-dist-');
  const started = Date.now();
  const manifest = await buildAgent({
    outDir,
    baseUrl: 'https://downloads.example.com/agent/',
    log: () => {},
  });
  t.log(`built the agent for ${Object.keys(manifest).join(', ')} in ${Date.now() - started} ms`);
  t.context = { outDir, manifest };
});

test.after.always(async (t) => {
  if (t.context.outDir) await rm(t.context.outDir, { recursive: true, force: true });
});

async function sha256(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

async function elfMachine(path: string): Promise<number> {
  const handle = await open(path, 'r');
  try {
    const { buffer } = await handle.read(Buffer.alloc(20), 0, 20, 0);
    t0(buffer.subarray(0, 4).toString('latin1') === '\x7fELF', `${path} is not an ELF file`);
    return buffer.readUInt16LE(18);
  } finally {
    await handle.close();
  }
}

function t0(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

test('the build writes an archive per platform and a manifest with their URL, SHA-256 and size', async (t) => {
  const { manifest, outDir } = t.context;
  t.deepEqual(Object.keys(manifest).sort(), ['linux_arm64', 'linux_x64']);
  const onDisk = JSON.parse(await readFile(join(outDir, 'manifest.json'), 'utf8'));
  t.deepEqual(onDisk, manifest);
  for (const arch of ['x64', 'arm64']) {
    const entry = manifest[`linux_${arch}`] as Artifact;
    const file = `spool-agent-${entry.version}-linux-${arch}.tar.gz`;
    t.is(entry.platform, `linux-${arch}`);
    t.is(entry.file, file);
    t.is(entry.url, `https://downloads.example.com/agent/${file}`);
    t.is(entry.sha256, await sha256(join(outDir, file)));
    t.is(entry.size, (await readFile(join(outDir, file))).length);
    // Node's binary and the bundle: tens of megabytes, not the repository's node_modules.
    t.true(entry.size < 60_000_000, `${file} is ${entry.size} bytes`);
  }

  // The other platform's archive cannot run here: check what it holds and that its Node is built
  // for that platform.
  const other = manifest[`linux_${OTHER_ARCH}`] as Artifact;
  const listing = await runProcess('tar', ['-tzvf', join(outDir, other.file)], {
    PATH: process.env.PATH ?? '',
  });
  const root = `spool-agent-${other.version}-linux-${OTHER_ARCH}`;
  const names = listing.stdout
    .trim()
    .split('\n')
    .map((line) => line.split(/\s+/).at(-1));
  for (const name of [
    `${root}/bin/spool-agent`,
    `${root}/lib/node`,
    `${root}/lib/spool-agent.mjs`,
    `${root}/LICENSE.node`,
    `${root}/agent.toml.example`,
  ]) {
    t.true(names.includes(name), name);
  }
  t.false(names.some((n) => n?.includes('node_modules')));
  t.regex(listing.stdout, /^-rwxr-xr-x 0\/0 .* spool-agent-[^/]+\/bin\/spool-agent$/m);
  const unpacked = await tempDir('spool-agent-other-');
  t.teardown(() => rm(unpacked, { recursive: true, force: true }));
  await runProcess(
    'tar',
    [
      '-xzf',
      join(outDir, other.file),
      '-C',
      unpacked,
      `${root}/lib/node`,
      `${root}/bin/spool-agent`,
    ],
    { PATH: process.env.PATH ?? '' },
  );
  t.is(await elfMachine(join(unpacked, root, 'lib', 'node')), ELF_MACHINE[OTHER_ARCH] as number);
  t.regex(await readFile(join(unpacked, root, 'bin', 'spool-agent'), 'utf8'), /^#!\/bin\/sh\n/);
});

interface Job {
  id: string;
  status: string;
}

test('the packaged agent runs with no Node on PATH, prints, restarts without printing twice, and its status tells the truth', async (t) => {
  const { manifest, outDir } = t.context;
  const artifact = manifest[`linux_${HOST_ARCH}`] as Artifact;

  // An empty root: the archive unpacked into opt/, the configuration in etc/spool.
  const root = await tempDir('spool-agent-root-');
  t.teardown(() => rm(root, { recursive: true, force: true }));
  for (const dir of ['opt', 'etc/spool', 'srv/printed', 'usr/bin', 'var/lib']) {
    await mkdir(join(root, dir), { recursive: true });
  }
  await runProcess('tar', ['-xzf', join(outDir, artifact.file), '-C', join(root, 'opt')], {
    PATH: process.env.PATH ?? '',
  });
  const home = join(root, 'opt', `spool-agent-${artifact.version}-linux-${HOST_ARCH}`);
  t.is(await elfMachine(join(home, 'lib', 'node')), ELF_MACHINE[HOST_ARCH] as number);
  const bin = join(home, 'bin', 'spool-agent');

  // PATH holds the package and, when CUPS is here, its client commands: never a node.
  const cupsMissing = await missingCupsPrograms();
  let cups: TestCups | undefined;
  if (cupsMissing.length === 0) {
    cups = await startTestCups();
    t.teardown(() => cups?.stop());
    for (const command of ['lp', 'lpstat', 'lpoptions', 'cancel']) {
      const found = await runProcess('/bin/sh', ['-c', `command -v ${command}`], {
        PATH: `${process.env.PATH}:/usr/sbin:/sbin`,
      });
      await symlink(found.stdout.trim(), join(root, 'usr', 'bin', command));
    }
  } else {
    t.log(`CUPS is not installed (missing ${cupsMissing.join(', ')}); the CUPS part is left out`);
  }
  const env = { PATH: `${join(home, 'bin')}:${join(root, 'usr', 'bin')}`, HOME: root };
  const which = await runProcess('/bin/sh', ['-c', 'command -v node'], env);
  t.not(which.code, 0, `node is on PATH: ${which.stdout}`);

  const sys = await startTestSystem();
  let sysStopped = false;
  t.teardown(async () => {
    if (!sysStopped) await sys.stop();
  });
  const orgId = await createOrg(sys.url);
  const { secret: key } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const station = await createStation(sys.url, orgId);

  // The release manifest is what the public downloads endpoint serves once published.
  const published = await call(sys.url, 'PATCH', '/admin/v1/settings', {
    token: OPERATOR_TOKEN,
    body: { downloads: manifest },
  });
  t.is(published.status, 200);
  t.deepEqual((await call(sys.url, 'GET', '/v1/public/downloads')).body, manifest);

  const queue = cups ? await cups.addQueue() : undefined;
  const tokenFile = join(root, 'etc', 'spool', 'agent.token');
  await writeFile(tokenFile, `${station.token}\n`, { mode: 0o600 });
  const config = join(root, 'etc', 'spool', 'agent.toml');
  const printed = join(root, 'srv', 'printed');
  await writeFile(
    config,
    [
      `server = "${sys.linkAddress}"`,
      `token_file = "${tokenFile}"`,
      `state_dir = "${join(root, 'var', 'lib', 'spool-agent')}"`,
      '',
      ...(cups ? ['[cups]', `server = "${cups.server}"`, ''] : []),
      '[printers]',
      `desk = "file:${printed}"`,
      ...(cups ? ['office = "cups:*"'] : []),
      '',
    ].join('\n'),
  );
  const printerNames = ['desk', ...(queue ? [`office/${queue.name}`] : [])];

  const agentCommand = (args: string[]) => runProcess(bin, [...args, '--config', config], env);
  const status = () => agentCommand(['status']);

  // What it finds before it runs: its printers, the CUPS queue included, with capabilities.
  const printers = await agentCommand(['printers', '--json']);
  t.is(printers.code, 0, printers.stderr);
  const listed = JSON.parse(printers.stdout) as {
    printers: Array<{ name: string; backend: string; status: string; capabilities: object }>;
  };
  t.deepEqual(
    listed.printers.map((p) => [p.name, p.backend, p.status]),
    [
      ['desk', `file:${printed}`, 'ready'],
      ...(queue ? [[`office/${queue.name}`, `cups:${queue.name}`, 'ready']] : []),
    ],
  );
  const never = await status();
  t.is(never.code, 3);
  t.regex(never.stdout, /^not running: no agent has run/);
  t.regex(never.stdout, /give its --config or --state-dir\)$/m, 'says where else to look');

  const start = () => spawnProcess(bin, ['run', '--config', config], env);
  let agent = start();
  t.teardown(() => agent.stop());

  const printerIds = async () => {
    const res = await eventually(
      () =>
        call<{ printers: Array<{ id: string; name: string; station_online: boolean }> }>(
          sys.url,
          'GET',
          `/v1/orgs/${orgId}/printers`,
          { token: key },
        ),
      (r) =>
        printerNames.every((n) => r.body.printers.some((p) => p.name === n && p.station_online)),
      30_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\nagent output:\n${agent.output()}`);
    });
    return new Map(res.body.printers.map((p) => [p.name, p.id]));
  };
  let ids = await printerIds();
  // Not a terminal: JSON logs, and no token in them.
  t.regex(agent.output(), /^\{"level":"info"/m);
  t.false(agent.output().includes(station.token));

  const submit = async (printer: string, text: string) => {
    const res = await call<{ job: Job }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: key,
      body: { printer_id: ids.get(printer), title: text, content: { type: 'text', data: text } },
    });
    t.is(res.status, 201, JSON.stringify(res.body));
    return res.body.job.id;
  };
  const printedJob = (id: string) =>
    eventually(
      () => call<{ job: Job }>(sys.url, 'GET', `/v1/orgs/${orgId}/jobs/${id}`, { token: key }),
      (r) => r.body.job.status === 'printed',
      30_000,
    );
  const files = async () => (await readdir(printed)).filter((f) => !f.startsWith('.')).sort();

  const first = await submit('desk', 'first page');
  await printedJob(first);
  t.deepEqual(await files(), [`${first}-1.txt`]);
  t.is(await readFile(join(printed, `${first}-1.txt`), 'utf8'), 'first page');
  if (queue) {
    const office = await submit(`office/${queue.name}`, 'through CUPS');
    await printedJob(office);
    t.regex(await readFile(queue.output, 'utf8'), /through CUPS/);
  }

  const connected = await eventually(
    status,
    (r) => r.stdout.includes(`jobs today`) && r.stdout.includes(`${queue ? 2 : 1} printed`),
  );
  t.is(connected.code, 0, connected.stdout);
  t.regex(connected.stdout, /^running: pid \d+, version \d+\.\d+\.\d+/m);
  t.regex(
    connected.stdout,
    new RegExp(
      `^link: connected to ${sys.linkAddress} since .*, station "Front desk" \\(${station.id}\\)$`,
      'm',
    ),
  );
  t.regex(connected.stdout, /^ {2}desk\s+ready/m);
  if (queue) t.regex(connected.stdout, new RegExp(`^  office/${queue.name}\\s+ready`, 'm'));
  t.regex(connected.stdout, /^last error: none$/m);

  // Diagnosed from afar, through the admin API: its versions, printers and own log lines, and
  // never its token.
  const diagnosed = await call<{
    diagnosis: {
      versions: Record<string, string>;
      printers: Array<{ name: string; backend: string; status: string }>;
      log_lines: string[];
    };
  }>(sys.url, 'POST', `/admin/v1/orgs/${orgId}/stations/${station.id}/diagnose`, {
    token: OPERATOR_TOKEN,
    body: { log_lines: 200 },
  });
  t.is(diagnosed.status, 200, JSON.stringify(diagnosed.body));
  const report = diagnosed.body.diagnosis;
  t.is(report.versions.agent, artifact.version);
  t.regex(report.versions.node ?? '', /^\d+\.\d+\.\d+$/);
  t.regex(report.versions.os ?? '', /^linux /);
  t.deepEqual(
    report.printers.map((p) => [p.name, p.backend, p.status]),
    listed.printers.map((p) => [p.name, p.backend, p.status]),
  );
  t.true(report.log_lines.some((line) => line.includes('"msg":"station agent started"')));
  t.false(JSON.stringify(diagnosed.body).includes(station.token));

  // A test page, printed here without Spool.
  const testPage = await agentCommand(['test-print', 'desk']);
  t.is(testPage.code, 0, testPage.stderr);
  const pages = (await files()).filter((f) => f.startsWith('test-page-'));
  t.is(pages.length, 1);
  t.regex(await readFile(join(printed, pages[0] as string), 'utf8'), /^Spool test page\n/);

  // SIGTERM, as systemctl stop or restart sends it: a clean stop, and status says so.
  t.is(await agent.stop(), 0);
  const stopped = await status();
  t.is(stopped.code, 3);
  t.regex(stopped.stdout, /^not running: stopped /);

  // A job sent while the agent is down prints once when it is back; nothing prints twice.
  const whileDown = await submit('desk', 'sent while stopped');
  agent = start();
  ids = await printerIds();
  await printedJob(whileDown);
  const after = await eventually(status, (r) => r.stdout.includes(`${queue ? 3 : 2} printed`));
  t.is(after.code, 0, after.stdout);
  t.regex(after.stdout, /^link: connected/m);
  // A link round after the restart: the server has offered what it had; nothing came out again.
  await agent.waitFor(/"msg":"station link up"/);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  t.deepEqual(
    (await files()).filter((f) => !f.startsWith('test-page-')),
    [`${first}-1.txt`, `${whileDown}-1.txt`].sort(),
  );

  // The packaged agent enrolls a station with its code, over the station link's address.
  const made = await call<{ enrollment: { code: string } }>(
    sys.url,
    'POST',
    `/v1/orgs/${orgId}/enrollments`,
    { token: key, body: { station_name: 'Packed' } },
  );
  t.is(made.status, 201);
  const enrolledState = join(root, 'var', 'lib', 'enrolled');
  const enrolled = await runProcess(
    bin,
    [
      'enroll',
      '--server',
      sys.linkAddress,
      '--state-dir',
      enrolledState,
      made.body.enrollment.code,
    ],
    env,
  );
  t.is(enrolled.code, 0, enrolled.stderr);
  t.regex(enrolled.stdout, /^enrolled: station "Packed" /);
  t.regex(enrolled.stdout, new RegExp(`^ {2}spool-agent --server ${sys.linkAddress} `, 'm'));
  t.regex(await readFile(join(enrolledState, 'device-token'), 'utf8'), /^svc_dev_/);

  // The link is lost: Spool goes away while the agent runs.
  await sys.stop();
  sysStopped = true;
  const lost = await eventually(
    status,
    (r) => r.stdout.includes('link: not connected') && !r.stdout.includes('last error: none'),
    15_000,
  );
  t.is(lost.code, 2, lost.stdout);
  t.regex(lost.stdout, /^running: /m);
  t.regex(
    lost.stdout,
    new RegExp(`^last error: .*station link to ${sys.linkAddress}: UNAVAILABLE`, 'm'),
  );
  // The terminal it ran in closes (SIGHUP): a clean stop too, not a kill.
  const exited = new Promise<number | null>((resolve) => agent.child.once('exit', resolve));
  agent.child.kill('SIGHUP');
  t.is(await exited, 0);
  t.regex((await status()).stdout, /^not running: stopped /);
});
