/**
 * The container image's Dockerfile. No container engine runs here (the image is built in CI
 * elsewhere), so these tests check what can be checked from the text: a multi-stage build, a
 * non-root runtime user that matches the chart, `spool` as the entry point, and that every source
 * folder `spool` loads at run time is copied in.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import test from 'ava';
import { parse } from 'yaml';

const ROOT = join(import.meta.dirname, '..');

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions, with continuation lines joined and comments dropped. */
async function dockerfile(): Promise<Instruction[]> {
  const text = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
  const joined = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

/** The instructions of the last stage (the image that runs). */
function runtimeStage(instructions: Instruction[]): Instruction[] {
  const from = instructions.findLastIndex((i) => i.keyword === 'FROM');
  return instructions.slice(from);
}

/** Every source file `bin/spool.js` loads, following relative imports from cli/main.ts. */
async function runtimeSources(): Promise<Set<string>> {
  const seen = new Set<string>();
  const queue = [join(ROOT, 'cli', 'main.ts')];
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      queue.push(resolve(dirname(file), (m[1] as string).replace(/\.js$/, '.ts')));
    }
  }
  return new Set([...seen].map((f) => relative(ROOT, f)));
}

test('the Dockerfile builds in stages and runs spool as a non-root user', async (t) => {
  const instructions = await dockerfile();
  const froms = instructions.filter((i) => i.keyword === 'FROM');
  t.true(froms.length >= 2, 'a build stage and a runtime stage');
  t.regex(froms[0]?.args ?? '', /AS build$/i);
  const args = instructions.filter((i) => i.keyword === 'ARG').map((i) => i.args);
  t.true(args.includes('NODE_IMAGE=node:20-bookworm-slim'), args.join(', '));
  t.true(
    instructions.some((i) => i.keyword === 'RUN' && /npm ci\b/.test(i.args)),
    'dependencies come from the lock file',
  );
  t.true(
    instructions.some((i) => i.keyword === 'RUN' && /npm prune --omit=dev/.test(i.args)),
    'the runtime gets production dependencies only',
  );

  const runtime = runtimeStage(instructions);
  const user = runtime.filter((i) => i.keyword === 'USER').at(-1)?.args;
  t.is(user, '10001:10001', 'a numeric user, so Kubernetes can check runAsNonRoot');
  const chart = parse(await readFile(join(ROOT, 'charts', 'spool', 'values.yaml'), 'utf8')) as {
    securityContext: { runAsUser: number; runAsGroup: number };
  };
  t.is(user, `${chart.securityContext.runAsUser}:${chart.securityContext.runAsGroup}`);
  const entrypoint = runtime.filter((i) => i.keyword === 'ENTRYPOINT').at(-1)?.args;
  t.deepEqual(JSON.parse(entrypoint ?? 'null'), ['node', '/app/bin/spool.js']);
  t.true(
    runtime.some((i) => i.keyword === 'RUN' && /apt-get install\b.*\bpoppler-utils\b/.test(i.args)),
    "the jobs service's PDF previews need poppler's pdftoppm",
  );
});

test('the image holds every source folder spool loads, and the build context leaves the rest out', async (t) => {
  const runtime = runtimeStage(await dockerfile());
  const copied = new Set(
    runtime
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1)),
  );
  const folders = new Set([...(await runtimeSources())].map((f) => f.split('/')[0] as string));
  t.true(folders.has('services') && folders.has('gateway') && folders.has('agent'));
  for (const folder of folders) t.true(copied.has(folder), `${folder} is not copied`);
  for (const file of ['bin', 'package.json', 'tsconfig.json']) t.true(copied.has(file), file);

  const ignored = (await readFile(join(ROOT, '.dockerignore'), 'utf8'))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const entry of ['.git', 'node_modules', '.spool', 'test']) {
    t.true(ignored.includes(entry), `.dockerignore lacks ${entry}`);
  }
  for (const folder of folders) t.false(ignored.includes(folder), `${folder} is ignored`);
});
