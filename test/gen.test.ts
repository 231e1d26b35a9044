import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');

async function files(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.set(relative(dir, path), await readFile(path, 'utf8'));
  }
  return out;
}

test('gen/ is what npm run gen makes from proto/ (run it after changing a .proto)', async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'spool-gen-'));
  t.teardown(() => rm(out, { recursive: true, force: true }));
  const bin = join(root, 'node_modules', '.bin');
  await run(join(bin, 'buf'), ['generate', '-o', out], {
    cwd: root,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
  });
  const fresh = await files(join(out, 'gen'));
  const committed = await files(join(root, 'gen'));
  t.deepEqual([...committed.keys()].sort(), [...fresh.keys()].sort());
  for (const [path, text] of fresh) t.is(committed.get(path), text, `gen/${path} is stale`);
});
