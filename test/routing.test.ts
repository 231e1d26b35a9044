/**
 * Pools and routing (docs/jobs.md, "Pools and routing"), on a running Spool with real agents:
 * pool jobs spread over the members, wait when none can take them, move off a member whose
 * station hangs or whose printer runs out of paper, and never print twice; moves and priorities.
 * The pool's `failover_after` runs on the test's clock, which the test moves on.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { SCOPES } from '../lib/credentials.js';
import { connectLink, printer } from './helpers/link-client.js';
import { type SpoolProcess, spawnSpool } from './helpers/spool.js';
import {
  call,
  createKey,
  createOrg,
  createStation,
  eventually,
  startTestSystem,
  type TestSystem,
} from './helpers/system.js';

interface Job {
  id: string;
  status: string;
  status_detail: string;
  printer_id: string | null;
  pool_id: string | null;
  priority: number;
}

interface Org {
  sys: TestSystem;
  orgId: string;
  key: string;
}

async function startOrg(t: ExecutionContext): Promise<Org> {
  const sys = await startTestSystem();
  t.teardown(() => sys.stop());
  const orgId = await createOrg(sys.url);
  const { secret: key } = await createKey(sys.url, orgId, { scopes: SCOPES });
  return { sys, orgId, key };
}

async function tempDir(t: ExecutionContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Ends an agent, even a stopped (SIGSTOP) one, and kills it if it does not end. */
async function endAgent(agent: SpoolProcess): Promise<void> {
  agent.child.kill('SIGCONT');
  const killer = setTimeout(() => agent.child.kill('SIGKILL'), 10_000);
  await agent.stop();
  clearTimeout(killer);
}

interface Station {
  name: string;
  printerId: string;
  /** Where its printer writes what it prints. */
  folder: string;
  agent: SpoolProcess;
  /** The ids of the jobs the station's printer wrote, one entry per print. */
  printed(): Promise<string[]>;
}

/** A station with a real agent whose printer `desk` writes each job it prints into a folder. */
async function agentStation(t: ExecutionContext, org: Org, name: string): Promise<Station> {
  const { sys, orgId, key } = org;
  const station = await createStation(sys.url, orgId, { name });
  const folder = await tempDir(t, 'spool-routing-printed-');
  const state = await tempDir(t, 'spool-routing-agent-');
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      sys.linkAddress,
      '--token',
      station.token,
      '--state-dir',
      state,
      '--printer',
      `desk=file:${folder}`,
    ],
    { LOG_LEVEL: 'info' },
  );
  t.teardown(async () => {
    await endAgent(agent);
    if (!t.passed) t.log(`agent ${name}:\n${agent.output().slice(-4000)}`);
  });
  const printers = await eventually(
    () =>
      call<{ printers: Array<{ id: string; station_id: string; station_online: boolean }> }>(
        sys.url,
        'GET',
        `/v1/orgs/${orgId}/printers`,
        { token: key },
      ),
    (r) => r.body.printers.some((p) => p.station_id === station.id && p.station_online),
    30_000,
  );
  const printerId = printers.body.printers.find((p) => p.station_id === station.id)?.id as string;
  return {
    name,
    printerId,
    folder,
    agent,
    printed: async () =>
      (await readdir(folder))
        .filter((f) => !f.startsWith('.'))
        .map((f) => f.replace(/-\d+\.txt$/, '')),
  };
}

async function createPool(org: Org, body: Record<string, unknown>): Promise<string> {
  // With a key, as a client that may have to send it again: a service that did not answer in
  // time (503, 504 on a busy machine) may have made it, and the key never makes it twice.
  const key = randomUUID();
  for (let tries = 1; ; tries++) {
    const res = await call<{ pool: { id: string } }>(
      org.sys.url,
      'POST',
      `/v1/orgs/${org.orgId}/pools`,
      {
        token: org.key,
        headers: { 'idempotency-key': key },
        body: { name: 'Front', ...body },
      },
    );
    if (res.status === 201) return res.body.pool.id;
    if ((res.status !== 503 && res.status !== 504) || tries === 5)
      throw new Error(`create pool answered ${res.status} ${JSON.stringify(res.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

async function createJob(org: Org, body: Record<string, unknown>) {
  return call<{ job: Job; error?: { code: string; param?: string; message: string } }>(
    org.sys.url,
    'POST',
    `/v1/orgs/${org.orgId}/jobs`,
    { token: org.key, body: { content: { type: 'text', data: 'hello' }, ...body } },
  );
}

async function jobOf(org: Org, id: string) {
  const res = await call<{
    job: Job;
    events: Array<{ status: string; detail: string; actor: string }>;
  }>(org.sys.url, 'GET', `/v1/orgs/${org.orgId}/jobs/${id}`, { token: org.key });
  return res.body;
}

/** Waits until the API shows `printerId`'s station online, or offline. */
async function untilOnline(org: Org, printerId: string, online: boolean): Promise<void> {
  await eventually(
    () =>
      call<{ printers: Array<{ id: string; station_online: boolean }> }>(
        org.sys.url,
        'GET',
        `/v1/orgs/${org.orgId}/printers`,
        { token: org.key },
      ),
    (r) => r.body.printers.some((p) => p.id === printerId && p.station_online === online),
    30_000,
  );
}

/** Every print of the given stations, as job id → count. */
async function printCounts(stations: Station[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const s of stations)
    for (const id of await s.printed()) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

test('pool jobs spread over the members that can print them, each routed once and printed once', async (t) => {
  const org = await startOrg(t);
  const stations = await Promise.all(
    ['north', 'south', 'east'].map((n) => agentStation(t, org, n)),
  );
  const poolId = await createPool(org, { printer_ids: stations.map((s) => s.printerId) });

  const jobs = await Promise.all(
    Array.from({ length: 24 }, async () => {
      const res = await createJob(org, { pool_id: poolId });
      t.is(res.status, 201, JSON.stringify(res.body));
      t.is(res.body.job.pool_id, poolId);
      return res.body.job;
    }),
  );
  await eventually(
    () => printCounts(stations),
    (c) => c.size === jobs.length,
    30_000,
  );
  const counts = await printCounts(stations);
  t.deepEqual(
    [...counts.values()].filter((n) => n !== 1),
    [],
    'no job printed twice',
  );
  for (const s of stations) t.true((await s.printed()).length > 0, `${s.name} printed some`);

  // The file is written before the agent's `printed` report reaches the jobs service.
  const { job, events } = await eventually(
    () => jobOf(org, (jobs[0] as Job).id),
    (found) => found.job.status === 'printed',
  );
  t.true(stations.some((s) => s.printerId === job.printer_id));
  t.deepEqual(
    events.filter((e) => e.detail.startsWith('routed to ')).map((e) => e.detail),
    [`routed to ${job.printer_id}`],
  );
});

test('least_queued: jobs posted at once spread evenly over members that hold them all unprinted', async (t) => {
  const org = await startOrg(t);
  // Stations driven by hand that never claim what they are offered: every job stays unfinished,
  // so the counts least_queued reads only grow.
  const links = await Promise.all(
    ['left', 'middle', 'right'].map(async (name) => {
      const station = await createStation(org.sys.url, org.orgId, { name });
      const link = await connectLink(org.sys.linkAddress, station.token, [printer('desk')]);
      t.teardown(() => link.close());
      return link;
    }),
  );
  const printerIds = links.map((l) => l.welcome.printerIds.desk as string);
  const poolId = await createPool(org, { printer_ids: printerIds });

  // Posted together, most of them reach the jobs service in one call.
  const jobs = await Promise.all(
    Array.from({ length: 30 }, async () => {
      const res = await createJob(org, { pool_id: poolId });
      t.is(res.status, 201, JSON.stringify(res.body));
      return res.body.job;
    }),
  );
  const perPrinter = printerIds.map((id) => jobs.filter((j) => j.printer_id === id).length);
  t.is(
    perPrinter.reduce((a, b) => a + b),
    30,
    'every job went to a member at once',
  );
  // Calls that overlap each choose from what was committed before them: a little uneven, no more.
  t.true(
    Math.max(...perPrinter) - Math.min(...perPrinter) <= 2,
    `jobs per member: ${perPrinter.join(', ')}`,
  );
});

test('a pool job waits, queued, while no member can take it, and goes out when one can', async (t) => {
  const org = await startOrg(t);
  const station = await createStation(org.sys.url, org.orgId, { name: 'back room' });
  const link = await connectLink(org.sys.linkAddress, station.token, [printer('desk', 'offline')]);
  t.teardown(() => link.close());
  const printerId = link.welcome.printerIds.desk as string;
  const poolId = await createPool(org, { name: 'Back', printer_ids: [printerId] });

  const created = await createJob(org, { pool_id: poolId });
  t.is(created.status, 201);
  t.is(created.body.job.status, 'queued');
  t.is(created.body.job.printer_id, null);
  t.is(created.body.job.status_detail, 'waiting: no printer of pool "Back" can print it now');

  link.send({ printers: { printers: [printer('desk', 'ready')] } });
  await link.until(() => link.jobs.some((j) => j.offer.jobId === created.body.job.id), 15_000);
  const offer = link.jobs.find((j) => j.offer.jobId === created.body.job.id)?.offer;
  t.true(offer?.claim, 'a pool job is offered to be claimed before it prints');
  const { job } = await jobOf(org, created.body.job.id);
  t.is(job.printer_id, printerId);
  t.is(job.status_detail, '');
});

test('a pool job whose pool was deleted as it was made says so, and can be moved to a printer', async (t) => {
  const org = await startOrg(t);
  const station = await createStation(org.sys.url, org.orgId, { name: 'back room' });
  const link = await connectLink(org.sys.linkAddress, station.token, [printer('desk', 'offline')]);
  t.teardown(() => link.close());
  const printerId = link.welcome.printerIds.desk as string;
  const poolId = await createPool(org, { name: 'Back', printer_ids: [printerId] });
  const waiting = (await createJob(org, { pool_id: poolId })).body.job;
  t.is(waiting.printer_id, null);
  // A deletion refuses a pool with jobs waiting; one made at the very moment it commits slips
  // past it. Made here by pointing the job at a pool that does not exist.
  const db = new pg.Client({ connectionString: org.sys.db.url });
  await db.connect();
  t.teardown(() => db.end());
  await db.query('UPDATE jobs SET pool_id = $1 WHERE id = $2', [
    '00000000-0000-4000-8000-00000000dead',
    waiting.id,
  ]);
  const orphan = await eventually(
    async () => (await jobOf(org, waiting.id)).job,
    (j) => j.status_detail === 'waiting: its pool was deleted; move it to a printer or cancel it',
  );
  t.is(orphan.status, 'queued');

  link.send({ printers: { printers: [printer('desk', 'ready')] } });
  const moved = await call<{ job: Job }>(
    org.sys.url,
    'POST',
    `/v1/orgs/${org.orgId}/jobs/${waiting.id}/move`,
    { token: org.key, body: { printer_id: printerId } },
  );
  t.is(moved.status, 200);
  t.is(moved.body.job.pool_id, null, 'moved out of the pool it no longer has');
  await link.until(() => link.jobs.some((j) => j.offer.jobId === waiting.id), 15_000);
});

test('creation refuses what no member of the pool could ever print, and a body naming both or neither', async (t) => {
  const org = await startOrg(t);
  const station = await createStation(org.sys.url, org.orgId);
  const desk = printer('desk');
  const oneSided = {
    ...desk,
    capabilities: { ...desk.capabilities, duplex: false },
  } as typeof desk;
  const link = await connectLink(org.sys.linkAddress, station.token, [oneSided]);
  t.teardown(() => link.close());
  const printerId = link.welcome.printerIds.desk as string;
  const poolId = await createPool(org, { printer_ids: [printerId] });

  const duplex = await createJob(org, {
    pool_id: poolId,
    options: { duplex: 'two_sided_long_edge' },
  });
  t.is(duplex.status, 400);
  t.is(duplex.body.error?.param, 'options.duplex');

  const both = await createJob(org, { pool_id: poolId, printer_id: printerId });
  t.is(both.status, 400);
  t.is(both.body.error?.param, 'printer_id');
  const neither = await createJob(org, {});
  t.is(neither.status, 400);
  t.is(neither.body.error?.param, 'printer_id');
  const unknown = await createJob(org, { pool_id: '00000000-0000-4000-8000-000000000000' });
  t.is(unknown.status, 400);
  t.is(unknown.body.error?.param, 'pool_id');
});

test("a pool passes over a member that does not take the job's document type, and refuses a job none takes", async (t) => {
  const org = await startOrg(t);
  const station = await createStation(org.sys.url, org.orgId, { name: 'mixed' });
  // An IPP printer driven directly takes only the formats it lists: PDF here, not text.
  const pdfOnly = {
    ...printer('pdf'),
    capabilities: { ...printer('pdf').capabilities, documentFormats: ['application/pdf'] },
  } as ReturnType<typeof printer>;
  const link = await connectLink(org.sys.linkAddress, station.token, [
    pdfOnly,
    printer('plain', 'offline'),
  ]);
  t.teardown(() => link.close());
  const pdfId = link.welcome.printerIds.pdf as string;
  const plainId = link.welcome.printerIds.plain as string;
  // `ordered` would take the PDF printer first, were its formats not looked at.
  const poolId = await createPool(org, { strategy: 'ordered', printer_ids: [pdfId, plainId] });

  const created = await createJob(org, { pool_id: poolId });
  t.is(created.status, 201, JSON.stringify(created.body));
  t.is(created.body.job.printer_id, null, 'not routed to the PDF-only printer at creation');
  t.is(created.body.job.status_detail, 'waiting: no printer of pool "Front" can print it now');

  // The router, once the other member can print, routes the job to it, not to the first.
  link.send({ printers: { printers: [pdfOnly, printer('plain', 'ready')] } });
  await link.until(() => link.jobs.some((j) => j.offer.jobId === created.body.job.id), 15_000);
  const { job, events } = await jobOf(org, created.body.job.id);
  t.is(job.printer_id, plainId);
  t.deepEqual(
    events.filter((e) => e.detail.startsWith('routed to ')).map((e) => e.detail),
    [`routed to ${plainId}`],
  );

  const pdfPool = await createPool(org, { name: 'PDF', printer_ids: [pdfId] });
  const refused = await createJob(org, { pool_id: pdfPool });
  t.is(refused.status, 400);
  t.is(refused.body.error?.param, 'content');
  t.is(
    refused.body.error?.message,
    'no printer of pool "PDF" can print it: printer "pdf" does not take text/plain documents; it takes application/pdf',
  );

  const held = await createJob(org, { printer_id: plainId, hold: true });
  t.is(held.status, 201);
  const moved = await call<{ error?: { code: string; param?: string } }>(
    org.sys.url,
    'POST',
    `/v1/orgs/${org.orgId}/jobs/${held.body.job.id}/move`,
    { token: org.key, body: { printer_id: pdfId } },
  );
  t.is(moved.status, 400);
  t.is(moved.body.error?.param, 'content');
});

test('a member out of paper: its unclaimed jobs move to another member after failover_after, and it cannot claim them after', async (t) => {
  const org = await startOrg(t);
  const clock = org.sys.clock;
  // A station driven by hand, so that it holds its jobs unclaimed as a real agent does while its
  // printer is out of paper; the other member is a real agent.
  const first = await createStation(org.sys.url, org.orgId, { name: 'first' });
  const link = await connectLink(org.sys.linkAddress, first.token, [printer('desk')]);
  t.teardown(() => link.close());
  const firstPrinter = link.welcome.printerIds.desk as string;
  const second = await agentStation(t, org, 'second');
  const poolId = await createPool(org, {
    printer_ids: [firstPrinter, second.printerId],
    strategy: 'ordered',
    failover_after: 30,
  });

  const jobs = await Promise.all(
    [1, 2, 3].map(async () => (await createJob(org, { pool_id: poolId })).body.job),
  );
  t.true(
    jobs.every((j) => j.printer_id === firstPrinter),
    'ordered: the first member takes them',
  );
  await link.until(() => link.jobs.length >= 3, 15_000);

  link.send({ printers: { printers: [printer('desk', 'out_of_paper', 'media-empty-error')] } });
  // Nothing moves before failover_after on the clock.
  await eventually(
    async () => (await jobOf(org, (jobs[0] as Job).id)).job.status_detail,
    (d) => d.includes('out of paper'),
  );
  t.is((await jobOf(org, (jobs[0] as Job).id)).job.printer_id, firstPrinter);
  // Time runs fast past failover_after: a second a poll.
  await eventually(
    async () => {
      clock.advance(1_000);
      return printCounts([second]);
    },
    (c) => jobs.every((j) => c.get(j.id) === 1),
    30_000,
  );
  for (const j of jobs) {
    // The file is written before the agent's `printed` report reaches the jobs service.
    const { job, events } = await eventually(
      () => jobOf(org, j.id),
      (found) => found.job.status === 'printed',
    );
    t.is(job.printer_id, second.printerId);
    t.true(events.some((e) => e.detail === `routed to ${second.printerId}`));
  }
  await link.until(() => jobs.every((j) => link.withdrawn.some((w) => w.jobId === j.id)));

  // The first station's claim comes too late: refused, withdrawn again, never accepted.
  const late = jobs[0] as Job;
  link.send({ received: { jobId: late.id, attempt: 1, claim: true } });
  await link.until(() => link.withdrawn.filter((w) => w.jobId === late.id).length >= 2);
  t.false(link.accepted.some((a) => a.jobId === late.id));
});

test('a member that can print again is seen so while its pool has nothing queued, and its next fault waits failover_after afresh', async (t) => {
  const org = await startOrg(t);
  const clock = org.sys.clock;
  const first = await createStation(org.sys.url, org.orgId, { name: 'first' });
  const link = await connectLink(org.sys.linkAddress, first.token, [printer('desk')]);
  t.teardown(() => link.close());
  const firstPrinter = link.welcome.printerIds.desk as string;
  const second = await agentStation(t, org, 'second');
  const poolId = await createPool(org, {
    printer_ids: [firstPrinter, second.printerId],
    strategy: 'ordered',
    failover_after: 30,
  });
  const db = new pg.Client({ connectionString: org.sys.db.url });
  await db.connect();
  t.teardown(() => db.end());
  const unreadySince = async () =>
    (
      await db.query<{ unready_since: Date | null }>(
        'SELECT unready_since FROM pool_members WHERE pool_id = $1 AND printer_id = $2',
        [poolId, firstPrinter],
      )
    ).rows[0]?.unready_since ?? null;

  // A first fault moves the member's job away; the pool is then empty.
  const before = (await createJob(org, { pool_id: poolId })).body.job;
  await link.until(() => link.jobs.some((j) => j.offer.jobId === before.id), 15_000);
  link.send({ printers: { printers: [printer('desk', 'out_of_paper')] } });
  await eventually(
    async () => {
      clock.advance(1_000);
      return printCounts([second]);
    },
    (c) => c.get(before.id) === 1,
    30_000,
  );
  t.not(await unreadySince(), null);

  // Paper again, with nothing queued: the router still sees it.
  link.send({ printers: { printers: [printer('desk', 'ready')] } });
  await eventually(unreadySince, (since) => since === null, 15_000);

  // The next fault counts from its own time, not from the first one's.
  const after = (await createJob(org, { pool_id: poolId })).body.job;
  t.is(after.printer_id, firstPrinter);
  await link.until(() => link.jobs.some((j) => j.offer.jobId === after.id), 15_000);
  const faultAt = clock.now().getTime();
  link.send({ printers: { printers: [printer('desk', 'out_of_paper')] } });
  const since = await eventually(unreadySince, (s) => s !== null, 15_000);
  t.is(since?.getTime(), faultAt);
  t.is(
    (await jobOf(org, after.id)).job.printer_id,
    firstPrinter,
    'not moved before failover_after',
  );
});

test('a real agent whose printer is in error: its pool job waits unsent, prints at another member after failover_after, and never at the first', async (t) => {
  const org = await startOrg(t);
  const clock = org.sys.clock;
  const broken = await agentStation(t, org, 'broken');
  const poolId = await createPool(org, { printer_ids: [broken.printerId], failover_after: 5 });
  const statusOf = async (printerId: string) =>
    (
      await call<{ printers: Array<{ id: string; status: string }> }>(
        org.sys.url,
        'GET',
        `/v1/orgs/${org.orgId}/printers`,
        { token: org.key },
      )
    ).body.printers.find((p) => p.id === printerId)?.status;

  // Its folder gone, the `file:` printer reads as in error.
  await rm(broken.folder, { recursive: true, force: true });
  await eventually(
    () => statusOf(broken.printerId),
    (s) => s === 'error',
    30_000,
  );
  const job = (await createJob(org, { pool_id: poolId })).body.job;
  t.is(job.printer_id, null, 'no member can take it');
  // Sent to it all the same, by hand: a printer in error is offered nothing, so it waits there.
  const moved = await call<{ job: Job }>(
    org.sys.url,
    'POST',
    `/v1/orgs/${org.orgId}/jobs/${job.id}/move`,
    { token: org.key, body: { printer_id: broken.printerId } },
  );
  t.is(moved.body.job.pool_id, poolId, 'moved to a member, it stays a pool job');
  const held = (await jobOf(org, job.id)).job;
  t.is(held.status, 'queued');
  t.is(held.printer_id, broken.printerId);

  const healthy = await agentStation(t, org, 'healthy');
  const patched = await call(org.sys.url, 'PATCH', `/v1/orgs/${org.orgId}/pools/${poolId}`, {
    token: org.key,
    body: { printer_ids: [broken.printerId, healthy.printerId] },
  });
  t.is(patched.status, 200);
  await eventually(
    async () => {
      clock.advance(1_000);
      return healthy.printed();
    },
    (ids) => ids.includes(job.id),
    30_000,
  );

  // Its printer back, the first agent still never prints the job.
  await mkdir(broken.folder, { recursive: true });
  await eventually(
    () => statusOf(broken.printerId),
    (s) => s === 'ready',
    30_000,
  );
  const after = (await createJob(org, { printer_id: broken.printerId })).body.job;
  await eventually(
    () => broken.printed(),
    (ids) => ids.includes(after.id),
    30_000,
  );
  t.false((await broken.printed()).includes(job.id));
  await eventually(
    async () => (await jobOf(org, job.id)).job.status,
    (status) => status === 'printed',
  );
});

test('a member whose station hangs (SIGSTOP): its unclaimed jobs print elsewhere, and nothing prints twice after it resumes', async (t) => {
  const org = await startOrg(t);
  const clock = org.sys.clock;
  const [hung, healthy] = await Promise.all([
    agentStation(t, org, 'hung'),
    agentStation(t, org, 'healthy'),
  ]);
  const failoverAfter = 20;
  const poolId = await createPool(org, {
    printer_ids: [hung.printerId, healthy.printerId],
    strategy: 'ordered',
    failover_after: failoverAfter,
  });

  hung.agent.child.kill('SIGSTOP');
  // Its link is still open: the first member takes the jobs, which sit unread on its connection.
  const jobs = await Promise.all(
    Array.from({ length: 4 }, async () => (await createJob(org, { pool_id: poolId })).body.job),
  );
  t.true(jobs.every((j) => j.printer_id === hung.printerId));

  // The stations service finds the link dead (its pings go unanswered: about 12 s, in real time,
  // longer on a busy machine); then failover_after passes on the clock, fast.
  await eventually(
    async () => {
      clock.advance(1_000);
      return printCounts([healthy]);
    },
    (c) => jobs.every((j) => c.get(j.id) === 1),
    60_000,
  );

  hung.agent.child.kill('SIGCONT');
  await untilOnline(org, hung.printerId, true);
  // A job only it can take shows it prints again, after whatever it had before the stop.
  const after = await createJob(org, { printer_id: hung.printerId });
  await eventually(
    () => hung.printed(),
    (ids) => ids.includes(after.body.job.id),
    30_000,
  );
  const counts = await printCounts([hung, healthy]);
  for (const j of jobs) t.is(counts.get(j.id), 1, `job ${j.id} printed once`);
  t.deepEqual(
    (await hung.printed()).filter((id) => jobs.some((j) => j.id === id)),
    [],
    'the hung station printed none of the jobs moved off it',
  );
});

test('move: a queued, scheduled or held job goes to another printer with job.rerouted; a sent one is 409', async (t) => {
  const org = await startOrg(t);
  const away = await createStation(org.sys.url, org.orgId, { name: 'away' });
  const awayLink = await connectLink(org.sys.linkAddress, away.token, [printer('desk')]);
  const awayPrinter = awayLink.welcome.printerIds.desk as string;
  awayLink.close();
  await untilOnline(org, awayPrinter, false);
  const here = await agentStation(t, org, 'here');

  const queued = (await createJob(org, { printer_id: awayPrinter })).body.job;
  const held = (await createJob(org, { printer_id: awayPrinter, hold: true })).body.job;
  const move = (id: string, printerId: string) =>
    call<{ job: Job; error?: { code: string } }>(
      org.sys.url,
      'POST',
      `/v1/orgs/${org.orgId}/jobs/${id}/move`,
      { token: org.key, body: { printer_id: printerId } },
    );

  const moved = await move(queued.id, here.printerId);
  t.is(moved.status, 200, JSON.stringify(moved.body));
  t.is(moved.body.job.printer_id, here.printerId);
  await eventually(
    () => here.printed(),
    (ids) => ids.includes(queued.id),
    30_000,
  );

  const movedHeld = await move(held.id, here.printerId);
  t.is(movedHeld.body.job.status, 'held');
  const released = await call(org.sys.url, 'POST', `/v1/orgs/${org.orgId}/jobs/${held.id}/retry`, {
    token: org.key,
  });
  t.is(released.status, 200);
  await eventually(
    () => here.printed(),
    (ids) => ids.includes(held.id),
    30_000,
  );

  const { events } = await jobOf(org, queued.id);
  t.true(
    events.some(
      (e) => e.detail === `routed to ${here.printerId}` && e.actor.startsWith('api_key:'),
    ),
  );
  const printed = await move(queued.id, awayPrinter);
  t.is(printed.status, 409);
  t.is(printed.body.error?.code, 'conflict');
  const unknown = await move('00000000-0000-4000-8000-000000000000', here.printerId);
  t.is(unknown.status, 404);
  const nowhere = await move(held.id, '00000000-0000-4000-8000-000000000000');
  t.is(nowhere.status, 400);
  t.is((nowhere.body.error as { param?: string } | undefined)?.param, 'printer_id');
});

test('priority: of the jobs waiting for one printer, the highest is offered first, then the oldest', async (t) => {
  const org = await startOrg(t);
  const station = await createStation(org.sys.url, org.orgId);
  const first = await connectLink(org.sys.linkAddress, station.token, [printer('desk')]);
  const printerId = first.welcome.printerIds.desk as string;
  first.close();
  await untilOnline(org, printerId, false);
  const made: Array<{ id: string; priority: number }> = [];
  for (const priority of [10, 90, undefined, 90, 100]) {
    // One after another on the clock: of two of the same priority, the older goes first.
    org.sys.clock.advance(1_000);
    const res = await createJob(org, { printer_id: printerId, ...(priority ? { priority } : {}) });
    t.is(res.status, 201);
    made.push({ id: res.body.job.id, priority: res.body.job.priority });
  }
  t.deepEqual(
    made.map((m) => m.priority),
    [10, 90, 50, 90, 100],
  );
  const bad = await createJob(org, { printer_id: printerId, priority: 101 });
  t.is(bad.status, 400);

  const link = await connectLink(org.sys.linkAddress, station.token, [printer('desk')]);
  t.teardown(() => link.close());
  await link.until(() => link.jobs.length >= made.length, 15_000);
  const order = link.jobs.slice(0, made.length).map((j) => j.offer.jobId);
  const expected = [made[4], made[1], made[3], made[2], made[0]].map((m) => m?.id);
  t.deepEqual(order, expected);
});
