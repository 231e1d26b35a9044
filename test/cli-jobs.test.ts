/**
 * The integrator's `spool jobs …` commands, run as the real `spool` command against a real Spool
 * and a real agent: what they print and the exit codes scripts rely on.
 */
import test from 'ava';
import { connectLink, printer } from './helpers/link-client.js';
import { type PrintingOrg, startPrintingOrg } from './helpers/printing-org.js';
import { runSpool, spawnSpool } from './helpers/spool.js';
import { call, createStation, eventually } from './helpers/system.js';

let org: PrintingOrg;
let env: Record<string, string>;

test.before(async () => {
  org = await startPrintingOrg();
  env = { SPOOL_API_KEY: org.key, SPOOL_URL: org.sys.url };
});
test.after.always(() => org?.stop());

test.serial('jobs create --wait prints the job once it is printed and exits 0', async (t) => {
  const res = await runSpool(
    [
      'jobs',
      'create',
      '--printer',
      org.printerId,
      '--text',
      'Hello from the CLI',
      '--title',
      'CLI',
      '--wait',
    ],
    env,
  );
  t.is(res.code, 0, res.stderr);
  const { job } = JSON.parse(res.stdout);
  t.is(job.status, 'printed');
  t.is(job.title, 'CLI');
  // A progress line per change on stderr, ending with printed.
  t.regex(res.stderr, new RegExp(`spool: job ${job.id} printed`));
  t.true((await org.printedFiles()).some((f) => f.startsWith(job.id)));

  const got = await runSpool(['jobs', 'get', job.id], env);
  t.is(got.code, 0);
  t.deepEqual(
    JSON.parse(got.stdout).events.map((e: { status: string }) => e.status),
    ['queued', 'sent', 'printed'],
  );
  const list = await runSpool(['jobs', 'list', '--status', 'printed', '--format', 'table'], env);
  t.is(list.code, 0);
  t.regex(list.stdout, /^ID\s+STATUS\s+TITLE/);
  t.regex(list.stdout, new RegExp(`${job.id}\\s+printed\\s+CLI`));
  const watched = await runSpool(['jobs', 'watch', job.id], env);
  t.is(watched.code, 0);
  t.is(JSON.parse(watched.stdout.trim()).job.status, 'printed');
});

test.serial('a job that fails makes jobs create --wait exit 1 with the failed job', async (t) => {
  // A second station, driven by hand, whose printer reports a jam.
  const station = await createStation(org.sys.url, org.orgId, { name: 'Back office' });
  const link = await connectLink(org.sys.linkAddress, station.token, [printer('jammed')]);
  t.teardown(() => link.close());
  const printers = await runSpool(['printers', 'list'], env);
  t.is(printers.code, 0);
  const jammed = await eventually(
    async () =>
      JSON.parse((await runSpool(['printers', 'list'], env)).stdout).printers.find(
        (p: { name: string; station_online: boolean }) => p.name === 'jammed' && p.station_online,
      ),
    (p) => p !== undefined,
    20_000,
  );
  // The table says yes or no, as the operator's does.
  const table = await runSpool(['printers', 'list', '--format', 'table'], env);
  t.regex(table.stdout, /STATION ONLINE/);
  t.regex(table.stdout.split('\n').find((l) => l.includes(jammed.id)) ?? '', /\byes\b/);
  const cli = spawnSpool(
    ['jobs', 'create', '--printer', jammed.id, '--text', 'will jam', '--wait'],
    env,
  );
  await link.until(() => link.jobs.length > 0, 20_000);
  const jobId = link.jobs[0]?.offer.jobId as string;
  link.send({ received: { jobId, attempt: 1 } });
  link.send({ result: { jobId, attempt: 1, printed: false, detail: 'paper jam' } });
  t.is(await cli.exited, 1);
  t.regex(cli.output(), /"status": "failed"/);
  t.regex(cli.output(), /"status_detail": "paper jam"/);
  t.regex(cli.output(), new RegExp(`job ${jobId} is failed \\(paper jam\\), not printed`));
  const watched = await runSpool(['jobs', 'watch', jobId], env);
  t.is(watched.code, 1);
});

test('an API error exits 1 with the error envelope on stderr, and a file that cannot be read says why', async (t) => {
  const res = await runSpool(['jobs', 'get', '00000000-0000-4000-8000-000000000000'], env);
  t.is(res.code, 1);
  t.is(JSON.parse(res.stderr).error.code, 'not_found');
  const cancel = await runSpool(['jobs', 'cancel', 'not-a-uuid'], env);
  t.is(cancel.code, 1);
  const missing = await runSpool(['jobs', 'create', '--printer', org.printerId, 'gone.pdf'], env);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /^spool: cannot read gone\.pdf: there is no such file$/m);
});

test('jobs list --limit over a page of 200 keeps a cursor that continues right after the jobs it printed', async (t) => {
  // Held, so that they wait and print nothing; their reference keeps them apart from the others.
  const post = () =>
    call(org.sys.url, 'POST', `/v1/orgs/${org.orgId}/jobs`, {
      token: org.key,
      body: {
        printer_id: org.printerId,
        reference: 'paged',
        hold: true,
        content: { type: 'text', data: 'x' },
      },
    });
  for (let i = 0; i < 205; i++) {
    const res = await post();
    if (res.status !== 201) t.fail(`job ${i + 1} answered ${res.status}`);
  }
  const first = await runSpool(['jobs', 'list', '--reference', 'paged', '--limit', '202'], env);
  t.is(first.code, 0, first.stderr);
  const page = JSON.parse(first.stdout) as { items: Array<{ id: string }>; next_cursor: string };
  t.is(page.items.length, 202);
  t.not(page.next_cursor, '', 'more jobs follow');
  const rest = await runSpool(
    ['jobs', 'list', '--reference', 'paged', '--limit', '202', '--cursor', page.next_cursor],
    env,
  );
  const after = JSON.parse(rest.stdout) as { items: Array<{ id: string }>; next_cursor: string };
  t.is(after.items.length, 3);
  t.is(after.next_cursor, '');
  t.is(new Set([...page.items, ...after.items].map((j) => j.id)).size, 205);

  // The API's other filters, as spool admin job list has them.
  const count = async (...args: string[]) => {
    const res = await runSpool(['jobs', 'list', '--reference', 'paged', ...args], env);
    t.is(res.code, 0, res.stderr);
    return (JSON.parse(res.stdout) as { items: unknown[] }).items.length;
  };
  const station = (page.items[0] as unknown as { station_id: string }).station_id;
  t.is(await count('--station', station, '--limit', '5'), 5);
  t.is(await count('--station', '6f1f1c52-94b3-4d43-9b0c-3d0e7e9c1a11'), 0);
  t.is(await count('--created-after', '2999-01-01T00:00:00Z'), 0);
  t.is(await count('--created-before', '2999-01-01T00:00:00Z', '--limit', '5'), 5);
  const bad = await runSpool(['jobs', 'list', '--created-after', 'yesterday'], env);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /created_after/);
});

test('--url beats SPOOL_URL, and a URL that is not one exits 2 naming its source', async (t) => {
  const elsewhere = { ...env, SPOOL_URL: 'http://127.0.0.1:9' };
  const unreachable = await runSpool(['key'], elsewhere);
  t.is(unreachable.code, 1);
  t.regex(unreachable.stderr, /is SPOOL_URL right\?/);
  const flagged = await runSpool(['key', '--url', org.sys.url], elsewhere);
  t.is(flagged.code, 0, flagged.stderr);
  t.is(JSON.parse(flagged.stdout).org_id, org.orgId);
  const listed = await runSpool(['jobs', 'list', '--limit', '1', '--url', org.sys.url], elsewhere);
  t.is(listed.code, 0, listed.stderr);
  const wrongFlag = await runSpool(['printers', 'list', '--url', 'http://127.0.0.1:9'], env);
  t.regex(wrongFlag.stderr, /is --url right\?/);
  const notUrl = await runSpool(['locations', 'list', '--url', 'localhost:8080'], env);
  t.is(notUrl.code, 2);
  t.regex(notUrl.stderr, /--url must be an http or https URL/);
  const badEnv = await runSpool(['key'], { ...env, SPOOL_URL: 'spool.example.com' });
  t.is(badEnv.code, 2);
  t.regex(badEnv.stderr, /SPOOL_URL must be an http or https URL/);
});

test('wrong usage exits 2', async (t) => {
  const neither = await runSpool(['jobs', 'create', '--printer', org.printerId], env);
  t.is(neither.code, 2);
  t.regex(neither.stderr, /give either FILE or --text TEXT/);
  t.is((await runSpool(['jobs', 'list', '--limit', 'zero'], env)).code, 2);
  t.is((await runSpool(['jobs', 'frobnicate'], env)).code, 2);
  t.is((await runSpool(['jobs', 'get'], env)).code, 2);
  const noKey = await runSpool(['jobs', 'list'], { SPOOL_URL: org.sys.url });
  t.is(noKey.code, 2);
  t.regex(noKey.stderr, /set SPOOL_API_KEY/);
  t.is((await runSpool(['jobs', '--help'], env)).code, 0);
});

test('spool key and locations list print the API answers', async (t) => {
  const key = await runSpool(['key'], env);
  t.is(key.code, 0);
  t.is(JSON.parse(key.stdout).org_id, org.orgId);
  const locations = await runSpool(['locations', 'list'], env);
  t.is(locations.code, 0);
  t.deepEqual(JSON.parse(locations.stdout), { locations: [], next_cursor: '' });
});

test('jobs create passes print options, hold, schedule and expiry to the API', async (t) => {
  const create = (...args: string[]) =>
    runSpool(['jobs', 'create', '--printer', org.printerId, '--text', 'x', ...args], env);
  const held = await create('--hold', '--copies', '2', '--expire-after', '600');
  t.is(held.code, 0, held.stderr);
  const heldJob = JSON.parse(held.stdout).job;
  t.like(heldJob, { status: 'held', options: { copies: 2 } });
  const at = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  const scheduled = await create('--schedule-at', at);
  t.is(scheduled.code, 0, scheduled.stderr);
  t.like(JSON.parse(scheduled.stdout).job, { status: 'scheduled', schedule_at: at });

  // The printer prints documents as they are: the API refuses two-sided printing, naming it.
  const duplex = await create('--duplex', 'two_sided_long_edge');
  t.is(duplex.code, 1);
  t.like(JSON.parse(duplex.stderr).error, { code: 'invalid', param: 'options.duplex' });
  const bad = await create('--rotate', '45');
  t.is(bad.code, 2);
  t.regex(bad.stderr, /argument '45' is invalid/);

  // Released, the held job prints.
  const released = await runSpool(['jobs', 'retry', heldJob.id], env);
  t.is(released.code, 0, released.stderr);
  const watched = await runSpool(['jobs', 'watch', heldJob.id], env);
  t.is(watched.code, 0, watched.stderr);
});
