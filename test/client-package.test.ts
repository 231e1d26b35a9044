/**
 * @spool/client as an integrator gets it: packed with `npm pack`, installed from the tarball into a
 * new project (openapi-fetch from the registry or the npm cache), used by a TypeScript program
 * compiled there, and run against a real Spool with a real agent.
 */
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { type PrintingOrg, startPrintingOrg, tempDir } from './helpers/printing-org.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');

const PROGRAM = `
import { Spool, verifyWebhook, type Job } from '@spool/client';

const env = process.env as Record<string, string>;
const spool = new Spool({ apiKey: env.KEY, baseUrl: env.BASE });
const created: Job[] = [];
for (const n of [1, 2, 3]) {
  created.push(
    await spool.jobs.create({
      printer_id: env.PRINTER,
      title: \`Package \${n}\`,
      reference: 'from-the-package',
      content: { type: 'text', data: \`page \${n}\` },
    }),
  );
}
const listed: string[] = [];
for await (const job of spool.jobs.iterate({ reference: 'from-the-package', limit: 2 })) {
  listed.push(job.id);
}
const printed = await spool.waitForJob(created[0]!.id, { until: 'printed', timeoutMs: 30_000 });
const event = verifyWebhook(env.BODY, env.SIGNATURE, env.SECRET);
let forged = '';
try {
  verifyWebhook(env.BODY, env.SIGNATURE, 'whsec_other');
} catch (err) {
  forged = (err as { code: string }).code;
}
console.log(JSON.stringify({ created: created.map((j) => j.id), listed, printed, event, forged }));
`;

let org: PrintingOrg;

test.before(async () => {
  org = await startPrintingOrg();
});
test.after.always(() => org?.stop());

test('a project that installs the packed client creates, pages, waits for a print and verifies a webhook', async (t) => {
  const packed = await tempDir('spool-client-pack-');
  const project = await tempDir('spool-client-user-');
  t.teardown(() =>
    Promise.all([packed, project].map((d) => rm(d, { recursive: true, force: true }))),
  );

  // npm pack runs prepack, which builds dist/ with declarations.
  const pack = await run('npm', ['pack', '--pack-destination', packed, '--json'], {
    cwd: join(root, 'client'),
  });
  const [info] = JSON.parse(pack.stdout) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  const files = info?.files.map((f) => f.path) ?? [];
  t.true(files.includes('dist/index.js'));
  t.true(files.includes('dist/index.d.ts'));
  t.true(files.includes('README.md'));
  t.false(
    files.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
    'no sources shipped',
  );
  const tarball = join(packed, info?.filename as string);

  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'integrator', version: '1.0.0', private: true, type: 'module' }),
  );
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], {
    cwd: project,
  });
  const installed = JSON.parse(
    await readFile(join(project, 'node_modules', 'openapi-fetch', 'package.json'), 'utf8'),
  );
  t.regex(installed.version, /^0\./);

  await writeFile(join(project, 'main.ts'), PROGRAM);
  await writeFile(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2023',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        outDir: 'dist',
        // Node's types from Spool's own install, so the project needs nothing else.
        typeRoots: [join(root, 'node_modules', '@types')],
        types: ['node'],
      },
      files: ['main.ts'],
    }),
  );
  await run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', project]);

  const body = JSON.stringify({
    type: 'job.printed',
    created_at: '2026-05-01T12:00:00Z',
    org_id: org.orgId,
    data: { job: { id: 'x' } },
  });
  const secret = 'whsec_package_test';
  const ts = Math.floor(Date.now() / 1000);
  const signature = `t=${ts},v1=${createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex')}`;
  const out = await run(process.execPath, [join(project, 'dist', 'main.js')], {
    cwd: project,
    env: {
      PATH: process.env.PATH ?? '',
      KEY: org.key,
      BASE: org.sys.url,
      PRINTER: org.printerId,
      BODY: body,
      SIGNATURE: signature,
      SECRET: secret,
    },
  });
  const result = JSON.parse(out.stdout);
  t.is(result.created.length, 3);
  // Every job once, across two pages of two. (The test system's clock stands still, so the
  // three share created_at and their order among themselves is by id.)
  t.deepEqual([...result.listed].sort(), [...result.created].sort());
  t.is(result.printed.id, result.created[0]);
  t.is(result.printed.status, 'printed');
  t.true((await org.printedFiles()).some((f) => f.startsWith(result.created[0])));
  t.is(result.event.type, 'job.printed');
  t.is(result.forged, 'signature_mismatch');
});
