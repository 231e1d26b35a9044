import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { transitionTable } from '../services/jobs/machine-doc.js';
import { call, createKey, createOrg, OPERATOR_TOKEN, startTestSystem } from './helpers/system.js';

test('docs/jobs.md shows the transition table the jobs service uses', async (t) => {
  const doc = await readFile(join(import.meta.dirname, '..', 'docs', 'jobs.md'), 'utf8');
  const shown = /<!-- transitions:start -->\n([\s\S]*?)\n<!-- transitions:end -->/.exec(doc)?.[1];
  t.is(shown, transitionTable());
});

test('every list answers as the Lists table of docs/api.md says', async (t) => {
  const doc = await readFile(join(import.meta.dirname, '..', 'docs', 'api.md'), 'utf8');
  const section = /\n## Lists\n([\s\S]*?)\n## /.exec(doc)?.[1] ?? '';
  const rows = [...section.matchAll(/^\| (.+?) \| `\{(.+?)\}` \|$/gm)].map((m) => ({
    list: m[1] as string,
    fields: (m[2] as string).split(', '),
  }));
  t.is(rows.length, 5, section);

  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret } = await createKey(sys.url, orgId, {
    mode: 'test',
    scopes: ['jobs:write', 'jobs:read', 'printers:read', 'locations:read'],
  });
  const endpoint = await call<{ endpoint: { id: string } }>(
    sys.url,
    'POST',
    `/admin/v1/orgs/${orgId}/webhooks`,
    { token: OPERATOR_TOKEN, body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } },
  );
  t.is(endpoint.status, 201);
  const adminLists = [
    `/admin/v1/orgs/${orgId}/keys`,
    `/admin/v1/orgs/${orgId}/webhooks`,
    `/admin/v1/orgs/${orgId}/webhooks/${endpoint.body.endpoint.id}/deliveries`,
  ];
  for (const row of rows) {
    const v1 = /^`GET (\/v1\/\S+)`$/.exec(row.list)?.[1];
    const paths = v1 ? [v1.replace('{org}', orgId)] : adminLists;
    for (const path of paths) {
      const res = await call(sys.url, 'GET', path, {
        token: path.startsWith('/admin/') ? OPERATOR_TOKEN : secret,
      });
      t.is(res.status, 200, path);
      t.deepEqual(Object.keys(res.body).sort(), [...row.fields].sort(), path);
      t.is(res.body.next_cursor, '', path);
    }
  }
});
