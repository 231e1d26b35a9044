/**
 * Deleting an organization: the operator's DELETE closes it at once (its keys refused, its
 * people's sessions no longer reach it, its agents disconnected) and deletes everything it has in
 * every service, documents in the object store included; another organization loses nothing. A
 * large one takes more than one request, each going on where the last stopped.
 */
import { randomUUID } from 'node:crypto';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import pg from 'pg';
import { deleteOrg } from '../gateway/org-deletion.js';
import { AccountsServiceClient } from '../gen/spool/v1/accounts.js';
import { JobsServiceClient } from '../gen/spool/v1/jobs.js';
import { StationsServiceClient } from '../gen/spool/v1/stations.js';
import { WebhooksServiceClient } from '../gen/spool/v1/webhooks.js';
import { openDocuments } from '../lib/documents.js';
import { createClient } from '../lib/grpc.js';
import { type Browser, member } from './helpers/console.js';
import { connectLink, type LinkClient, printer } from './helpers/link-client.js';
import { startReceiver } from './helpers/receiver.js';
import { runSpool } from './helpers/spool.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  OPERATOR_TOKEN,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';
import { webhookAdmin } from './helpers/webhooks.js';

const test = anyTest as TestFn<{ sys: TestSystem }>;

test.before(async (t) => {
  t.context = { sys: await startTestSystem() };
});

test.after.always(async (t) => {
  await t.context.sys?.stop();
});

/** Every table that holds an organization's rows, and its organization column. */
const ORG_TABLES: Array<[string, string]> = [
  ['orgs', 'id'],
  ['api_keys', 'org_id'],
  ['memberships', 'org_id'],
  ['invitations', 'org_id'],
  ['locations', 'org_id'],
  ['stations', 'org_id'],
  ['printers', 'org_id'],
  ['jobs', 'org_id'],
  ['job_events', 'org_id'],
  ['uploads', 'org_id'],
  ['templates', 'org_id'],
  ['idempotency_keys', 'org_id'],
  ['test_print_counts', 'org_id'],
  ['webhook_endpoints', 'org_id'],
  ['webhook_deliveries', 'org_id'],
  ['webhook_attempts', 'org_id'],
];

async function rowsOf(sys: TestSystem, orgId: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: sys.db.url });
  await client.connect();
  try {
    const counts: Record<string, number> = {};
    for (const [table, column] of ORG_TABLES) {
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${table} WHERE ${column} = $1`,
        [orgId],
      );
      counts[table] = Number(rows[0]?.n ?? 0);
    }
    return counts;
  } finally {
    await client.end();
  }
}

interface Populated {
  orgId: string;
  key: string;
  person: Browser;
  link: LinkClient;
  storedJob: string;
}

/**
 * An organization with something in every table: a member and a pending invitation, a key, a
 * location with a station linked and its printer, jobs (one whose document is in the object
 * store, one with an Idempotency-Key), a template, and a webhook endpoint with a delivery.
 */
async function populated(
  t: ExecutionContext<{ sys: TestSystem }>,
  name: string,
): Promise<Populated> {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, name);
  const admin = (method: string, path: string, body?: unknown) =>
    call<Record<string, { id: string }>>(sys.url, method, `/admin/v1/orgs/${orgId}${path}`, {
      token: OPERATOR_TOKEN,
      body,
    });
  const person = await member(sys.url, orgId, 'admin');
  await admin('POST', '/invitations', { email: `later-${orgId}@example.com`, role: 'viewer' });
  const { secret: key } = await createKey(sys.url, orgId, {
    mode: 'test',
    scopes: ['jobs:write', 'jobs:read', 'printers:read', 'webhooks:write', 'webhooks:read'],
  });
  const location = (await admin('POST', '/locations', { name: 'Hall' })).body.location?.id;
  const station = await createStation(sys.url, orgId, { name: 'Desk', location_id: location });
  const link = await connectLink(sys.linkAddress, station.token, [printer('desk')]);
  const printers = await eventually(
    () =>
      call<{ printers: { id: string }[] }>(sys.url, 'GET', `/v1/orgs/${orgId}/printers`, {
        token: key,
      }),
    (res) => res.body.printers.length === 1,
  );
  const printerId = printers.body.printers[0]?.id as string;
  const job = (content: unknown, headers: Record<string, string> = {}) =>
    call<{ job: { id: string } }>(sys.url, 'POST', `/v1/orgs/${orgId}/jobs`, {
      token: key,
      body: { printer_id: printerId, content },
      headers,
    });
  const stored = await job({ type: 'text', data: 'x'.repeat(100 * 1024) });
  t.is(stored.status, 201, JSON.stringify(stored.body));
  t.is((await job({ type: 'text', data: 'hello' }, { 'idempotency-key': 'once' })).status, 201);
  const upload = await fetch(`${sys.url}/v1/orgs/${orgId}/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
    body: 'uploaded text',
  });
  t.is(upload.status, 201);
  await admin('POST', '/templates', { name: 'Label', kind: 'text', body: 'Hi', fields: [] });
  const receiver = await startReceiver();
  const hooks = webhookAdmin(sys.url, OPERATOR_TOKEN, orgId);
  const { endpoint } = await hooks.create(receiver.url, ['job.created']);
  await hooks.ping(endpoint.id);
  await receiver.until((r) => r.length >= 1);
  await receiver.close();
  return { orgId, key, person, link, storedJob: stored.body.job.id };
}

test.serial(
  'an organization deleted is closed at once and leaves nothing behind; another loses nothing',
  async (t) => {
    const { sys } = t.context;
    const doomed = await populated(t, 'Doomed Print');
    const kept = await populated(t, 'Kept Print');
    const before = await rowsOf(sys, doomed.orgId);
    for (const [table, n] of Object.entries(before)) t.true(n > 0, `${table} has rows to delete`);
    const keptBefore = await rowsOf(sys, kept.orgId);
    const documents = await openDocuments(sys.system.nc);
    t.false(
      (await documents.info(doomed.storedJob))?.deleted ?? true,
      'the large document is in the object store',
    );

    // An id in capitals names the same organization.
    const res = await call(sys.url, 'DELETE', `/admin/v1/orgs/${doomed.orgId.toUpperCase()}`, {
      token: OPERATOR_TOKEN,
    });
    t.is(res.status, 204, JSON.stringify(res.body));

    t.deepEqual(
      await rowsOf(sys, doomed.orgId),
      Object.fromEntries(ORG_TABLES.map(([table]) => [table, 0])),
    );
    t.true((await documents.info(doomed.storedJob))?.deleted, 'its documents are gone too');
    t.is(
      (await call(sys.url, 'GET', `/admin/v1/orgs/${doomed.orgId}`, { token: OPERATOR_TOKEN }))
        .status,
      404,
    );
    const jobs = await call(sys.url, 'GET', `/v1/orgs/${doomed.orgId}/jobs`, {
      token: doomed.key,
    });
    t.is(jobs.status, 401, 'its key is refused at once');
    await doomed.link.ended;
    // Its people keep their accounts, without it (the gateway hears of it from the accounts
    // service's announcement).
    await eventually(
      () => doomed.person.call<{ orgs: unknown[] }>('GET', '/console/v1/session'),
      (me) => me.status === 200 && me.body.orgs.length === 0,
    );
    const forbidden = await doomed.person.call('GET', `/console/v1/orgs/${doomed.orgId}/overview`);
    t.is(forbidden.status, 404);
    const again = await call(sys.url, 'DELETE', `/admin/v1/orgs/${doomed.orgId}`, {
      token: OPERATOR_TOKEN,
    });
    t.is(again.status, 404);

    // The other organization has every row it had, and works.
    t.deepEqual(await rowsOf(sys, kept.orgId), keptBefore);
    t.false((await documents.info(kept.storedJob))?.deleted ?? true);
    const keptJobs = await call<{ items: unknown[] }>(
      sys.url,
      'GET',
      `/v1/orgs/${kept.orgId}/jobs`,
      {
        token: kept.key,
      },
    );
    t.is(keptJobs.status, 200);
    t.is(keptJobs.body.items.length, 2);
    kept.link.close();

    // The audit log names the deletion, and the second attempt, which found nothing.
    const audit = await call<{ items: { method: string; route: string; status: number }[] }>(
      sys.url,
      'GET',
      `/admin/v1/audit?org=${doomed.orgId}&limit=200`,
      { token: OPERATOR_TOKEN },
    );
    t.deepEqual(
      audit.body.items
        .filter((e) => e.method === 'DELETE' && e.route === '/admin/v1/orgs/:org')
        .map((e) => e.status)
        .sort(),
      [204, 404],
    );
  },
);

test.serial('a deletion cut short goes on where it stopped', async (t) => {
  const { sys } = t.context;
  const { orgId, link } = await populated(t, 'Stepwise Print');
  const options = { service: 'test', address: sys.system.servicesAddress };
  const backends = {
    accounts: createClient(AccountsServiceClient, options),
    jobs: createClient(JobsServiceClient, options),
    stations: createClient(StationsServiceClient, options),
    webhooks: createClient(WebhooksServiceClient, options),
  };
  t.teardown(() => {
    for (const client of Object.values(backends)) client.close();
  });

  let closed = 0;
  const first = await deleteOrg(backends, orgId, { maxCalls: 1, closed: () => closed++ });
  t.false(first.done);
  t.is(closed, 1);
  await link.ended;
  const midway = await rowsOf(sys, orgId);
  t.like(midway, { orgs: 1, api_keys: 1, memberships: 0, invitations: 0, stations: 0 });
  t.true((midway.jobs ?? 0) > 0, 'the jobs are for the next call');
  // Closed: the organization is still there to be named, says it is being deleted, and takes no
  // change but the DELETE that finishes it.
  const got = await call<{ org: { deleting_since: string | null } }>(
    sys.url,
    'GET',
    `/admin/v1/orgs/${orgId}`,
    { token: OPERATOR_TOKEN },
  );
  t.is(got.status, 200);
  t.true(Date.parse(got.body.org.deleting_since ?? '') > 0, JSON.stringify(got.body));
  // The operator finds it among the organizations left part-deleted, and only it.
  const listed = await call<{ items: { id: string }[] }>(
    sys.url,
    'GET',
    '/admin/v1/orgs?deleting=true&limit=200',
    { token: OPERATOR_TOKEN },
  );
  t.deepEqual(
    listed.body.items.map((o) => o.id),
    [orgId],
  );
  const cli = await runSpool(['admin', 'org', 'list', '--deleting', '--format', 'json'], {
    SPOOL_URL: sys.url,
    SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN,
  });
  t.is(cli.code, 0, cli.stderr);
  t.true(cli.stdout.includes(orgId));
  const bad = await call<{ error: { param: string } }>(
    sys.url,
    'GET',
    '/admin/v1/orgs?deleting=yes',
    {
      token: OPERATOR_TOKEN,
    },
  );
  t.is(bad.status, 400);
  t.is(bad.body.error.param, 'deleting');
  const changes: Array<[string, string, unknown]> = [
    ['POST', '/keys', { mode: 'live', scopes: ['jobs:read'] }],
    ['POST', '/stations', { name: 'Late' }],
    ['POST', '/locations', { name: 'Late' }],
    ['POST', '/templates', { name: 'Late', kind: 'text', body: 'Hi', fields: [] }],
    ['POST', '/webhooks', { url: 'http://127.0.0.1:9/late', events: ['job.created'] }],
    ['POST', '/invitations', { email: 'late@example.com', role: 'viewer' }],
  ];
  for (const [method, path, body] of changes) {
    const res = await call<{ error: { code: string; message: string } }>(
      sys.url,
      method,
      `/admin/v1/orgs/${orgId}${path}`,
      { token: OPERATOR_TOKEN, body },
    );
    t.is(res.status, 409, `${method} ${path}: ${JSON.stringify(res.body)}`);
    t.is(res.body.error.code, 'conflict');
    t.regex(res.body.error.message, /is being deleted: nothing can be added to it or changed/);
  }
  // The accounts service refuses a key itself, whoever asks: a key made now would reach it again.
  const key = await backends.accounts
    .createApiKey({
      orgId,
      live: true,
      scopes: ['jobs:read'],
      allowedIps: [],
      name: '',
      expiresAt: undefined,
    })
    .then(
      () => 'created',
      (err: Error) => err.message,
    );
  t.regex(key, /is being deleted/);
  t.like(await rowsOf(sys, orgId), {
    api_keys: 1,
    invitations: 0,
    locations: 0,
    templates: midway.templates,
  });

  // A request under way as the deletion began may add a row behind its service's share: here a
  // template lands just after the jobs service said it had nothing left. The second round takes it.
  let landed = false;
  const lateJobs: typeof backends.jobs = {
    ...backends.jobs,
    purgeOrg: async (req) => {
      const res = await backends.jobs.purgeOrg(req);
      if (res.done && !landed) {
        landed = true;
        await backends.jobs.createTemplate({
          orgId,
          name: 'Late',
          kind: 'text',
          body: 'Hi',
          fields: [],
        });
      }
      return res;
    },
  };
  t.like(await deleteOrg({ ...backends, jobs: lateJobs }, orgId), { done: true });
  t.true(landed);
  t.deepEqual(
    await rowsOf(sys, orgId),
    Object.fromEntries(ORG_TABLES.map(([table]) => [table, 0])),
  );
});

test.serial('spool admin org delete asks for --yes, then deletes it', async (t) => {
  const { sys } = t.context;
  const orgId = await createOrg(sys.url, 'Cli Doomed');
  const env = { SPOOL_URL: sys.url, SPOOL_ADMIN_TOKEN: OPERATOR_TOKEN };
  const unsure = await runSpool(['admin', 'org', 'delete', '--org', orgId], env);
  t.is(unsure.code, 2);
  t.regex(unsure.stderr, /^error: deleting an organization cannot be undone; add --yes/);
  const got = await call(sys.url, 'GET', `/admin/v1/orgs/${orgId}`, { token: OPERATOR_TOKEN });
  t.is(got.status, 200, 'nothing was deleted');

  const empty = await runSpool(['admin', 'org', 'delete', '--org', '', '--yes'], env);
  t.is(empty.code, 2);
  t.regex(empty.stderr, /^error: --org must not be empty/);

  // Nor does an empty id read every organization.
  const emptyGet = await runSpool(['admin', 'org', 'get', ''], env);
  t.is(emptyGet.code, 2);
  t.regex(emptyGet.stderr, /^error: give the organization id once/);

  const sure = await runSpool(['admin', 'org', 'delete', '--org', orgId, '--yes'], env);
  t.is(sure.code, 0, sure.stderr);
  t.deepEqual(JSON.parse(sure.stdout), { deleted: true, id: orgId });
  const gone = await call(sys.url, 'GET', `/admin/v1/orgs/${orgId}`, { token: OPERATOR_TOKEN });
  t.is(gone.status, 404);
});

test.serial(
  'the audit log takes a deleted organization as org, not any id a DELETE named',
  async (t) => {
    const { sys } = t.context;
    const never = randomUUID();
    const res = await call(sys.url, 'DELETE', `/admin/v1/orgs/${never}`, { token: OPERATOR_TOKEN });
    t.is(res.status, 404);
    const audit = await call<{ error: { param: string } }>(
      sys.url,
      'GET',
      `/admin/v1/audit?org=${never}`,
      { token: OPERATOR_TOKEN },
    );
    t.is(audit.status, 400);
    t.is(audit.body.error.param, 'org');
  },
);

test('the operator API document describes the 202 of a deletion cut short', async (t) => {
  const { sys } = t.context;
  const doc = await call<{
    paths: Record<string, { delete?: { responses: Record<string, { description: string }> } }>;
  }>(sys.url, 'GET', '/admin/v1/openapi.json', { token: OPERATOR_TOKEN });
  const responses = doc.body.paths['/admin/v1/orgs/{org}']?.delete?.responses ?? {};
  t.deepEqual(Object.keys(responses).sort(), [
    '202',
    '204',
    '401',
    '404',
    '409',
    '500',
    '503',
    '504',
  ]);
  t.regex(responses['202']?.description ?? '', /send the same DELETE again/);
});
