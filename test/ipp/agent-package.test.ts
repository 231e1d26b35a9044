/**
 * The packaged agent, built here (`buildAgent`), unpacked into an empty root and run with neither
 * Node nor CUPS on its PATH, printing to a real IPP Everywhere printer (ippeveprinter) over
 * `ipp://`, with the printer's own confirmation on the job.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { SCOPES } from '../../lib/credentials.js';
import { type Artifact, buildAgent } from '../../scripts/build-agent.js';
import { startIppPrinter } from '../helpers/ipp-printer.js';
import { minimalPdf } from '../helpers/pdf.js';
import { tempDir } from '../helpers/printing-org.js';
import { runProcess, spawnProcess } from '../helpers/processes.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
} from '../helpers/system.js';

const HOST_ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';

test('the packaged agent prints to an IPP printer with no Node and no CUPS on its PATH', async (t) => {
  const outDir = await tempDir('spool-agent-dist-');
  t.teardown(() => rm(outDir, { recursive: true, force: true }));
  const manifest = await buildAgent({ outDir, arches: [HOST_ARCH], log: () => {} });
  const artifact = manifest[`linux_${HOST_ARCH}`] as Artifact;

  const root = await tempDir('spool-agent-root-');
  t.teardown(() => rm(root, { recursive: true, force: true }));
  for (const dir of ['opt', 'etc/spool', 'var/lib']) {
    await mkdir(join(root, dir), { recursive: true });
  }
  await runProcess('tar', ['-xzf', join(outDir, artifact.file), '-C', join(root, 'opt')], {
    PATH: process.env.PATH ?? '',
  });
  const home = join(root, 'opt', `spool-agent-${artifact.version}-linux-${HOST_ARCH}`);
  const env = { PATH: join(home, 'bin'), HOME: root };
  for (const command of ['node', 'lp', 'lpstat', 'cupsd']) {
    const which = await runProcess('/bin/sh', ['-c', `command -v ${command}`], env);
    t.not(which.code, 0, `${command} is on PATH: ${which.stdout}`);
  }

  const printer = await startIppPrinter(t, { twoSided: true });
  await printer.setImpressions(2);
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret: key } = await createKey(sys.url, orgId, { scopes: SCOPES });
  const station = await createStation(sys.url, orgId);
  const config = join(root, 'etc', 'spool', 'agent.toml');
  await writeFile(
    config,
    [
      `server = "${sys.linkAddress}"`,
      `token = "${station.token}"`,
      `state_dir = "${join(root, 'var', 'lib', 'spool-agent')}"`,
      '',
      '[printers]',
      `front = "${printer.uri}"`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const agent = spawnProcess(join(home, 'bin', 'spool-agent'), ['run', '--config', config], env);
  t.teardown(() => agent.stop());

  const listed = await eventually(
    () =>
      call<{ printers: Array<{ id: string; status: string; capabilities: { duplex: boolean } }> }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgId}/printers`,
        { token: key },
      ),
    (r) => r.body.printers[0]?.status === 'ready',
    30_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\nagent output:\n${agent.output()}`);
  });
  const front = listed.body.printers[0];
  t.true(front?.capabilities.duplex, 'read from the printer');

  const created = await call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
    token: key,
    body: {
      printer_id: front?.id,
      content: { type: 'pdf_base64', data: minimalPdf().toString('base64') },
      options: { duplex: 'two_sided_long_edge' },
    },
  });
  t.is(created.status, 201);
  const printed = await eventually(
    () =>
      call<{ job: { status: string; confirmation: unknown } }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgId}/jobs/${created.body.job.id}`,
        { token: key },
      ),
    (r) => r.body.job.status === 'printed',
    30_000,
  );
  t.deepEqual(printed.body.job.confirmation, { level: 'device_completed', pages: 2 });
  t.like((await printer.jobs())[0], { sides: 'two-sided-long-edge' });
  // The agent keeps its state where it was told, nowhere machine-wide.
  t.true((await readdir(join(root, 'var', 'lib', 'spool-agent'))).length > 0);
});
