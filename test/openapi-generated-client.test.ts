/**
 * A second, independent generator reads the served document: openapi-typescript-codegen makes a
 * fetch client of it, TypeScript compiles the client with a program that uses it, and the program
 * creates a job and reads it back from a real Spool. The generated code stays in a temp dir.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { connectLink, printer } from './helpers/link-client.js';
import { call, createKey, createOrg, createStation, startTestSystem } from './helpers/system.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const bin = (name: string) => join(root, 'node_modules', '.bin', name);

const PROGRAM = `import { JobsService, OpenAPI, PrintersService } from './client/index';
import type { CreateJobRequest } from './client/index';

async function main(): Promise<void> {
  const [base, token, org] = process.argv.slice(2) as [string, string, string];
  OPENAPI_SETUP
  const { printers } = await PrintersService.listPrinters(org);
  const body: CreateJobRequest = {
    printer_id: printers[0]?.id ?? '',
    reference: 'generated-client',
    content: { type: 'text', data: 'printed by a generated client' },
  };
  const created = await JobsService.createJob(org, body, 'generated-client-1');
  const fetched = await JobsService.getJob(org, created.job.id);
  console.log(JSON.stringify({ created: created.job, fetched: fetched.job, events: fetched.events }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
`.replace('OPENAPI_SETUP', 'OpenAPI.BASE = base;\n  OpenAPI.TOKEN = token;');

test('a client generated from the served document by openapi-typescript-codegen compiles and creates and fetches a job', async (t) => {
  const sys = await startTestSystem();
  const dir = await mkdtemp(join(tmpdir(), 'spool-codegen-'));
  const link = await (async () => {
    const org = await createOrg(sys.url);
    const { secret } = await createKey(sys.url, org, {
      scopes: ['jobs:write', 'jobs:read', 'printers:read'],
    });
    const station = await createStation(sys.url, org);
    const l = await connectLink(sys.linkAddress, station.token, [printer('front-desk')]);
    return { l, org, secret };
  })();
  try {
    const doc = await fetch(`${sys.url}/v1/openapi.json`);
    await writeFile(join(dir, 'openapi.json'), await doc.text());
    // By its package path: @redocly/cli installs a binary named `openapi` too.
    await run(process.execPath, [
      join(root, 'node_modules', 'openapi-typescript-codegen', 'bin', 'index.js'),
      '--input',
      join(dir, 'openapi.json'),
      '--output',
      join(dir, 'client'),
      '--client',
      'fetch',
    ]);
    await writeFile(join(dir, 'main.ts'), PROGRAM);
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'es2022',
          module: 'preserve',
          moduleResolution: 'bundler',
          lib: ['es2022', 'dom'],
          typeRoots: [join(root, 'node_modules', '@types')],
          types: ['node'],
          noEmit: true,
          skipLibCheck: true,
        },
        files: ['main.ts'],
      }),
    );
    const compiled = await run(bin('tsc'), ['-p', join(dir, 'tsconfig.json')]).catch(
      (err: { stdout?: string; message: string }) => ({ failed: err.stdout || err.message }),
    );
    t.false('failed' in compiled, 'failed' in compiled ? compiled.failed : '');

    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(dir, 'main.ts'), sys.url, link.secret, link.org],
      { cwd: root },
    );
    const out = JSON.parse(stdout) as {
      created: { id: string; reference: string; status: string };
      fetched: { id: string; reference: string };
      events: unknown[];
    };
    t.is(out.fetched.id, out.created.id);
    t.is(out.fetched.reference, 'generated-client');
    t.true(['queued', 'sent', 'printed'].includes(out.created.status));
    t.true(out.events.length >= 1);
    // The job the generated client made is the API's own.
    const seen = await call(sys.url, 'GET', `/v1/orgs/${link.org}/jobs/${out.created.id}`, {
      token: link.secret,
    });
    t.is(seen.status, 200);
  } finally {
    link.l.close();
    await rm(dir, { recursive: true, force: true });
    await sys.stop();
  }
});
