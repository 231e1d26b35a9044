/**
 * The cups backend against a real, private CUPS scheduler (test/helpers/cups.ts). Skipped, with a
 * message saying what to install, only when the CUPS programs are missing; .ci/run installs them.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { pino } from 'pino';
import { createCupsBackend, discoverCupsQueues } from '../agent/backends/cups.js';
import { getJobInfo, JOB_STATE } from '../agent/backends/cups-ipp.js';
import { parsePrinterSpec, runAgent } from '../agent/index.js';
import { JOURNAL_FILE } from '../agent/journal.js';
import type { PrintOptions } from '../gen/spool/v1/stations.js';
import { silentLogger } from '../lib/logger.js';
import {
  CUPS_INSTALL_HINT,
  missingCupsPrograms,
  startTestCups,
  type TestCups,
} from './helpers/cups.js';
import { FakeLink, GOOD_TOKEN } from './helpers/fake-link.js';
import { freePort } from './helpers/ports.js';

const test = anyTest as TestFn<{ cups: TestCups | undefined; missing: string[] }>;

test.before(async (t) => {
  const missing = await missingCupsPrograms();
  t.context = { missing, cups: missing.length === 0 ? await startTestCups() : undefined };
});

test.after.always(async (t) => {
  await t.context.cups?.stop();
});

/** The scheduler, or undefined after logging why the test is skipped. */
function cupsOr(t: ExecutionContext<{ cups: TestCups | undefined; missing: string[] }>) {
  if (t.context.cups) return t.context.cups;
  t.log(
    `SKIPPED: CUPS is not installed (missing ${t.context.missing.join(', ')}): ${CUPS_INSTALL_HINT}`,
  );
  t.pass();
  return undefined;
}

const NO_OPTIONS: PrintOptions = {
  copies: 1,
  duplex: '',
  color: '',
  paper: '',
  tray: '',
  pages: '',
  fitToPage: false,
  rotate: 0,
};

async function startAgent(t: ExecutionContext<unknown>, cups: TestCups, spec: string) {
  const link = await FakeLink.start();
  const dir = await mkdtemp(join(tmpdir(), 'spool-agent-cups-'));
  const agent = await runAgent({
    server: link.address,
    token: GOOD_TOKEN,
    printers: [parsePrinterSpec(spec)],
    stateDir: dir,
    logger: silentLogger,
    backoff: { initialMs: 10, maxMs: 50 },
    statusIntervalMs: 100,
    cups: { server: cups.server, jobPollMs: 50, env: process.env },
  });
  t.teardown(async () => {
    await agent.stop();
    await link.stop();
    await rm(dir, { recursive: true, force: true });
  });
  return { link, conn: await link.nextConnection(), dir };
}

/** Waits until the agent's journal in `dir` records `state` for `jobId`, and answers its lines. */
async function journaled(dir: string, jobId: string, state: string) {
  const lines = async () =>
    (await readFile(join(dir, JOURNAL_FILE), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { job: string; event: string });
  await waitUntil(
    async () => (await lines()).some((l) => l.job === jobId && l.event === state),
    `the journal records ${jobId} ${state}`,
  );
  return lines();
}

async function waitUntil(condition: () => Promise<boolean>, what: string, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test.serial(
  'a text job prints through CUPS and is reported printed only once CUPS completed it',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const queue = await cups.addQueue();
    // A disabled queue keeps its jobs pending: the agent must wait for CUPS, not for lp.
    await cups.run('cupsdisable', ['-r', 'held by the test', queue.name]);
    const { conn } = await startAgent(t, cups, `office=cups:${queue.name}`);
    t.like(conn.hello?.printers[0], {
      name: 'office',
      status: 'offline',
      detail: 'paused; held by the test',
    });

    conn.offer({
      jobId: 'job-1',
      printerName: 'office',
      document: 'Hello from Spool\n',
      title: 'greeting',
    });
    await conn.waitFor((m) => m.received?.jobId === 'job-1');
    await waitUntil(
      async () => (await cups.jobs(queue.name, 'not-completed')).length === 1,
      'CUPS has the job',
    );
    const [cupsJob] = await cups.jobs(queue.name, 'not-completed');
    await new Promise((r) => setTimeout(r, 300)); // several polls of the agent
    t.false(
      conn.messages.some((m) => m.result),
      'no result while CUPS holds the job',
    );

    await cups.run('cupsenable', [queue.name]);
    const result = await conn.result('job-1', 1, 20_000);
    t.like(result, { jobId: 'job-1', attempt: 1, printed: true, detail: '' });
    t.true(
      (await cups.jobs(queue.name, 'completed')).includes(cupsJob ?? '?'),
      'CUPS says completed',
    );
    t.regex(await readFile(queue.output, 'utf8'), /Hello from Spool/);

    // The queue came back: the agent reports the whole list again.
    const changed = await conn.waitFor((m) => m.printers?.printers[0]?.status === 'ready');
    t.like(changed.printers?.printers[0], { name: 'office', detail: '' });
  },
);

test.serial('a job cancelled in CUPS is reported failed, saying so', async (t) => {
  const cups = cupsOr(t);
  if (!cups) return;
  const queue = await cups.addQueue();
  await cups.run('cupsdisable', [queue.name]);
  const { conn } = await startAgent(t, cups, `office=cups:${queue.name}`);
  conn.offer({ jobId: 'job-2', printerName: 'office', document: 'never\n' });
  await waitUntil(
    async () => (await cups.jobs(queue.name, 'not-completed')).length === 1,
    'CUPS has the job',
  );
  const [cupsJob] = await cups.jobs(queue.name, 'not-completed');
  await cups.run('cancel', [cupsJob ?? '?']);
  const result = await conn.result('job-2', 1, 20_000);
  t.false(result.printed);
  t.regex(result.detail, new RegExp(`^cups: job ${cupsJob} was cancelled`));
});

test.serial(
  'a job left waiting in a paused CUPS queue by a stop is cancelled there at the restart, and prints once when offered again',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const queue = await cups.addQueue();
    await cups.run('cupsdisable', [queue.name]);
    const stateDir = await mkdtemp(join(tmpdir(), 'spool-agent-cups-state-'));
    t.teardown(() => rm(stateDir, { recursive: true, force: true }));
    const start = async () => {
      const link = await FakeLink.start();
      const agent = await runAgent({
        server: link.address,
        token: GOOD_TOKEN,
        printers: [parsePrinterSpec(`office=cups:${queue.name}`)],
        stateDir,
        logger: silentLogger,
        backoff: { initialMs: 10, maxMs: 50 },
        statusIntervalMs: 100,
        stopGraceMs: 200,
        cups: { server: cups.server, jobPollMs: 50, env: process.env },
      });
      t.teardown(async () => {
        await agent.stop();
        await link.stop();
      });
      return { agent, link, conn: await link.nextConnection() };
    };

    // The job goes to CUPS, which holds it; the agent stops before CUPS prints it.
    const first = await start();
    first.conn.offer({ jobId: 'job-held', printerName: 'office', document: 'once only\n' });
    await waitUntil(
      async () => (await cups.jobs(queue.name, 'not-completed')).length === 1,
      'CUPS has the job',
    );
    const [held] = await cups.jobs(queue.name, 'not-completed');
    await first.agent.stop();
    t.false(
      first.conn.messages.some((m) => m.result?.jobId === 'job-held'),
      'a stop is not a result',
    );

    // At the restart the agent takes the job back from CUPS rather than report it failed while
    // CUPS still means to print it; offered again, it prints once.
    const second = await start();
    const heldId = Number(held?.split('-').pop());
    t.is((await getJobInfo(cups.server, heldId)).state, JOB_STATE.canceled);
    t.false(second.conn.messages.some((m) => m.result?.jobId === 'job-held'));
    second.conn.offer({ jobId: 'job-held', printerName: 'office', document: 'once only\n' });
    await waitUntil(
      async () => (await cups.jobs(queue.name, 'not-completed')).length === 1,
      'CUPS has the job again',
    );
    await cups.run('cupsenable', [queue.name]);
    t.like(await second.conn.result('job-held', 1, 20_000), { printed: true, detail: '' });
    t.is((await readFile(queue.output, 'utf8')).match(/once only/g)?.length, 1);
  },
);

test.serial(
  'a job withdrawn while it waits in CUPS is cancelled there and never prints',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const queue = await cups.addQueue();
    await cups.run('cupsdisable', [queue.name]);
    const { conn, dir } = await startAgent(t, cups, `office=cups:${queue.name}`);
    conn.offer({ jobId: 'job-gone', printerName: 'office', document: 'must not print\n' });
    await waitUntil(
      async () => (await cups.jobs(queue.name, 'not-completed')).length === 1,
      'CUPS has the job',
    );
    const [inCups] = await cups.jobs(queue.name, 'not-completed');
    conn.withdraw('job-gone');
    // Withdrawn, not failed: nothing went wrong with the printer, and nothing is reported.
    const lines = await journaled(dir, 'job-gone', 'withdrawn');
    t.false(lines.some((l) => l.job === 'job-gone' && l.event === 'failed'));
    t.false(conn.reports().some((m) => m.result?.jobId === 'job-gone'));
    t.is(
      (await getJobInfo(cups.server, Number(inCups?.split('-').pop()))).state,
      JOB_STATE.canceled,
    );
  },
);

test.serial(
  'a job held in CUPS is named in the next link’s hello, and a withdrawal there still cancels it',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const queue = await cups.addQueue();
    await cups.run('cupsdisable', [queue.name]);
    const { link, conn, dir } = await startAgent(t, cups, `office=cups:${queue.name}`);
    t.deepEqual(conn.hello?.held, []);
    conn.offer({ jobId: 'job-away', printerName: 'office', document: 'cancelled while away\n' });
    await waitUntil(
      async () => (await cups.jobs(queue.name, 'not-completed')).length === 1,
      'CUPS has the job',
    );
    const [inCups] = await cups.jobs(queue.name, 'not-completed');
    // The link is lost; the job is cancelled meanwhile, and the server learns on the next link
    // that the agent still holds it.
    conn.end(GrpcStatus.UNAVAILABLE, 'gone');
    const next = await link.nextConnection();
    t.deepEqual(next.hello?.held, [{ jobId: 'job-away', attempt: 1 }]);
    next.withdraw('job-away');
    await journaled(dir, 'job-away', 'withdrawn');
    t.is(
      (await getJobInfo(cups.server, Number(inCups?.split('-').pop()))).state,
      JOB_STATE.canceled,
    );
    t.is((await cups.jobs(queue.name, 'not-completed')).length, 0);
  },
);

test.serial(
  'a job for a queue refusing jobs waits, the printer reads offline saying why, and prints once it accepts them',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const queue = await cups.addQueue();
    await cups.run('cupsreject', ['-r', 'closed for the night', queue.name]);
    const { conn } = await startAgent(t, cups, `office=cups:${queue.name}`);
    conn.offer({ jobId: 'job-shut', printerName: 'office', document: 'in the morning\n' });
    const refused = await conn.waitFor(
      (m) => m.printers?.printers[0]?.status === 'offline',
      10_000,
    );
    t.like(refused.printers?.printers[0], { detail: 'not accepting jobs: closed for the night' });
    t.false(
      conn.messages.some((m) => m.result?.jobId === 'job-shut'),
      'not failed: it waits',
    );
    await cups.run('cupsaccept', [queue.name]);
    t.like(await conn.result('job-shut', 1, 20_000), { printed: true, detail: '' });
    t.regex(await readFile(queue.output, 'utf8'), /in the morning/);
  },
);

test.serial(
  'a queue that does not exist is said at start, as a warning with its reason',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const link = await FakeLink.start();
    const dir = await mkdtemp(join(tmpdir(), 'spool-agent-cups-'));
    const lines: Array<{ level: number; msg: string; detail?: string }> = [];
    const agent = await runAgent({
      server: link.address,
      token: GOOD_TOKEN,
      printers: [parsePrinterSpec('office=cups:no-such-queue')],
      stateDir: dir,
      logger: pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l)) }),
      backoff: { initialMs: 10, maxMs: 50 },
      cups: { server: cups.server, env: process.env },
    });
    t.teardown(async () => {
      await agent.stop();
      await link.stop();
      await rm(dir, { recursive: true, force: true });
    });
    const said = lines.find((l) => l.msg === 'printer office is in error; its jobs wait');
    t.is(said?.level, 40);
    t.truthy(said?.detail);
  },
);

test.serial('cups:* reports every queue of the server under the given prefix', async (t) => {
  const cups = cupsOr(t);
  if (!cups) return;
  const a = await cups.addQueue();
  const b = await cups.addQueue();
  const queues = await discoverCupsQueues({ server: cups.server });
  t.true(queues.includes(a.name) && queues.includes(b.name));
  const { conn } = await startAgent(t, cups, 'office=cups:*');
  const names = conn.hello?.printers.map((p) => p.name) ?? [];
  t.true(names.includes(`office/${a.name}`) && names.includes(`office/${b.name}`), names.join(' '));

  // A queue added later appears in a `printers` message.
  const c = await cups.addQueue();
  const changed = await conn.waitFor(
    (m) => m.printers?.printers.some((p) => p.name === `office/${c.name}`) ?? false,
  );
  t.truthy(changed);
});

/**
 * An agent whose status poll is ten minutes away, whatever the printer events do: what it
 * reports after its hello comes from CUPS's events. Resolves once it says they work.
 */
async function startWatchingAgent(t: ExecutionContext<unknown>, cups: TestCups, spec: string) {
  const link = await FakeLink.start();
  const dir = await mkdtemp(join(tmpdir(), 'spool-agent-cups-'));
  const lines: Array<{ msg: string }> = [];
  const agent = await runAgent({
    server: link.address,
    token: GOOD_TOKEN,
    printers: [parsePrinterSpec(spec)],
    stateDir: dir,
    logger: pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) }),
    backoff: { initialMs: 10, maxMs: 50 },
    statusIntervalMs: 600_000,
    watchedStatusIntervalMs: 600_000,
    printerEvents: { askEveryMs: 50 },
    cups: { server: cups.server, jobPollMs: 50, env: process.env },
  });
  t.teardown(async () => {
    await agent.stop();
    await link.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const conn = await link.nextConnection();
  await waitUntil(
    async () =>
      lines.some(
        (l) =>
          l.msg === `printer events from CUPS at ${cups.server}: statuses are read as they change`,
      ),
    'the agent subscribes to CUPS',
  );
  return { conn };
}

test.serial(
  'a queue disabled in CUPS is reported offline, and ready once enabled again, on its events, with the status poll minutes away',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const queue = await cups.addQueue();
    const { conn } = await startWatchingAgent(t, cups, `office=cups:${queue.name}`);
    t.like(conn.hello?.printers[0], { name: 'office', status: 'ready' });

    await cups.run('cupsdisable', ['-r', 'jammed', queue.name]);
    const offline = await conn.waitFor((m) => m.printers?.printers[0]?.status === 'offline');
    t.like(offline.printers?.printers[0], { name: 'office', detail: 'paused; jammed' });

    await cups.run('cupsenable', [queue.name]);
    const ready = await conn.waitFor(
      (m) => m !== offline && m.printers?.printers[0]?.status === 'ready',
    );
    t.like(ready.printers?.printers[0], { name: 'office', detail: '' });
  },
);

test.serial(
  'a queue added to CUPS is reported under cups:* on its event, with the status poll minutes away',
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    await cups.addQueue();
    const { conn } = await startWatchingAgent(t, cups, 'office=cups:*');
    const added = await cups.addQueue();
    const changed = await conn.waitFor(
      (m) => m.printers?.printers.some((p) => p.name === `office/${added.name}`) ?? false,
    );
    t.like(
      changed.printers?.printers.find((p) => p.name === `office/${added.name}`),
      { status: 'ready' },
    );
  },
);

test('with no CUPS scheduler running, cups:* discovery fails saying so, rather than finding no queue', async (t) => {
  if (!cupsOr(t)) return;
  // Nothing listens on a port that was free a moment ago.
  const nowhere = `127.0.0.1:${await freePort()}`;
  await t.throwsAsync(discoverCupsQueues({ server: nowhere, env: process.env }), {
    message: 'CUPS: scheduler is not running',
  });
});

test.serial(
  "printer status comes from lpstat and capabilities from the queue's IPP attributes",
  async (t) => {
    const cups = cupsOr(t);
    if (!cups) return;
    const queue = await cups.addQueue();
    const backend = createCupsBackend(queue.name, { server: cups.server, env: process.env });
    const ready = await backend.status();
    t.is(ready.status, 'ready');
    t.true(ready.capabilities.paperSizes.includes('A4'), ready.capabilities.paperSizes.join(' '));
    t.like(ready.capabilities, { duplex: false, color: false, copies: true });

    await cups.run('cupsdisable', ['-r', 'toner change', queue.name]);
    t.like(await backend.status(), { status: 'offline', detail: 'paused; toner change' });
    await cups.run('cupsenable', [queue.name]);
    t.like(await backend.status(), { status: 'ready' });

    const missing = await createCupsBackend('spool-test-no-such-queue', {
      server: cups.server,
    }).status();
    t.is(missing.status, 'error');
    t.regex(missing.detail, /CUPS has no queue spool-test-no-such-queue/);

    const down = await createCupsBackend(queue.name, {
      server: `127.0.0.1:${await freePort()}`,
    }).status();
    t.is(down.status, 'offline');
    t.regex(down.detail, /CUPS is not running/);
  },
);

test.serial('the cups backend passes the print options to lp', async (t) => {
  const cups = cupsOr(t);
  if (!cups) return;
  const queue = await cups.addQueue();
  const backend = createCupsBackend(queue.name, {
    server: cups.server,
    jobPollMs: 50,
    env: process.env,
  });
  await backend.print({
    id: 'job-3',
    attempt: 1,
    title: 'options',
    contentType: 'text/plain',
    document: Buffer.from('two copies\n'),
    options: { ...NO_OPTIONS, copies: 2, paper: 'A4' },
  });
  t.is((await cups.jobs(queue.name, 'completed')).length, 1);
  // CUPS's page log: queue, user, job, time, "total" and sheets, billing, host, title, media.
  const pageLog = await readFile(join(cups.dir, 'log', 'page_log'), 'utf8');
  t.regex(
    pageLog,
    new RegExp(`^${queue.name} \\S+ \\d+ \\[[^\\]]+\\] total 2 - \\S+ options A4 `, 'm'),
  );
  t.regex(await readFile(queue.output, 'utf8'), /two copies/);
});
