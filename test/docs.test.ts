import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { transitionTable } from '../services/jobs/machine-doc.js';

test('docs/jobs.md shows the transition table the jobs service uses', async (t) => {
  const doc = await readFile(join(import.meta.dirname, '..', 'docs', 'jobs.md'), 'utf8');
  const shown = /<!-- transitions:start -->\n([\s\S]*?)\n<!-- transitions:end -->/.exec(doc)?.[1];
  t.is(shown, transitionTable());
});
