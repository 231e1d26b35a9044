import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import test, { type ExecutionContext } from 'ava';
import { pino } from 'pino';
import { AS_IS_CAPABILITIES, HANDED_OFF } from '../agent/backends/backend.js';
import { createFileBackend } from '../agent/backends/file.js';
import { createRawBackend } from '../agent/backends/raw.js';
import { backoffDelay } from '../agent/backoff.js';
import {
  type Agent,
  type AgentOptions,
  type Backend,
  parsePrinterSpec,
  runAgent,
} from '../agent/index.js';
import { INTERRUPTED_DETAIL, JOURNAL_FILE, Journal } from '../agent/journal.js';
import { BACKOFF_RESET_AFTER_MS, splitServers, startLink } from '../agent/link.js';
import type { BackendSpec } from '../agent/printer-spec.js';
import { readStatus } from '../agent/status.js';
import { ManualClock } from '../lib/clock.js';
import { silentLogger } from '../lib/logger.js';
import { FakeLink, GOOD_TOKEN } from './helpers/fake-link.js';
import { freePort } from './helpers/ports.js';
import { spawnSpool } from './helpers/spool.js';

const FAST_BACKOFF = { initialMs: 10, maxMs: 50 };

interface Station {
  dir: string;
  out: string;
  stateDir: string;
  /** How many times each printer's backend was asked to print. */
  prints: Map<string, number>;
  start(overrides?: Partial<AgentOptions>): Promise<Agent>;
}

/** A station with one file printer `front` writing to `<dir>/out`, against `link`. */
async function station(
  t: ExecutionContext,
  link: FakeLink,
  printers = ['front=file:out'],
): Promise<Station> {
  const dir = await mkdtemp(join(tmpdir(), 'spool-agent-test-'));
  const agents: Agent[] = [];
  t.teardown(async () => {
    for (const a of agents) await a.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const prints = new Map<string, number>();
  const s: Station = {
    dir,
    out: join(dir, 'out'),
    stateDir: join(dir, 'state'),
    prints,
    async start(overrides = {}) {
      const agent = await runAgent({
        server: link.address,
        token: GOOD_TOKEN,
        printers: printers.map((p) => parsePrinterSpec(p, dir)),
        stateDir: s.stateDir,
        logger: silentLogger,
        backoff: FAST_BACKOFF,
        agentVersion: 'test',
        stopGraceMs: 2_000,
        createBackend: (spec) => countingBackend(spec, prints),
        ...overrides,
      });
      agents.push(agent);
      return agent;
    },
  };
  return s;
}

/** The real backend for file specs, counting prints by directory (by port for raw). */
function countingBackend(spec: BackendSpec, prints: Map<string, number>, canTell = false): Backend {
  if (spec.kind !== 'file') throw new Error(`these tests use file printers, not ${spec.kind}`);
  const real = createFileBackend(spec.dir);
  return {
    ...(canTell
      ? {
          outcome: (job: { id: string; attempt: number }) =>
            real.outcome?.(job) ?? Promise.resolve('not_printed' as const),
        }
      : {}),
    status: () => real.status(),
    async print(job, signal) {
      prints.set(spec.dir, (prints.get(spec.dir) ?? 0) + 1);
      return real.print(job, signal);
    },
  };
}

async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
) {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('hello carries the printers with their status, and the token travels as a bearer token', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link, ['front=file:out', 'back=file:out2']);
  await s.start();
  const conn = await link.nextConnection();
  await conn.waitFor((m) => m.hello !== undefined);
  t.is(conn.token, GOOD_TOKEN);
  t.is(conn.hello?.agentVersion, 'test');
  t.deepEqual(
    conn.hello?.printers.map((p) => [p.name, p.status]),
    [
      ['front', 'ready'],
      ['back', 'ready'],
    ],
  );
});

test('a job offered again on the same link, after a reconnect and after an agent restart prints once', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  let agent = await s.start();
  const job = { jobId: 'job-1', printerName: 'front', document: 'hello, printer\n' };

  let conn = await link.nextConnection();
  conn.offer(job);
  t.like(await conn.result('job-1'), { printed: true, detail: '' });
  t.truthy(conn.messages.find((m) => m.received?.jobId === 'job-1'));

  // Redelivered on the same link (a second replica, say): answered with the result, not printed.
  const results = () => conn.messages.filter((m) => m.result?.jobId === 'job-1').length;
  conn.offer(job);
  await waitUntil(() => results() === 2, 'the result is sent again');

  // The server restarts; the agent comes back and is offered the job again.
  await link.restart();
  conn = await link.nextConnection();
  conn.offer(job);
  t.like(await conn.result('job-1'), { printed: true });

  // The agent restarts on the same state directory.
  await agent.stop();
  agent = await s.start();
  conn = await link.nextConnection();
  conn.offer(job);
  t.like(await conn.result('job-1'), { printed: true });

  t.is(s.prints.get(s.out), 1);
  t.deepEqual(await readdir(s.out), ['job-1-1.txt']);
  t.is(await readFile(join(s.out, 'job-1-1.txt'), 'utf8'), 'hello, printer\n');
});

test('a new attempt of a job prints again', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-2', printerName: 'front', document: 'one' });
  await conn.result('job-2', 1);
  conn.offer({ jobId: 'job-2', attempt: 2, printerName: 'front', document: 'one' });
  t.like(await conn.result('job-2', 2), { printed: true });
  t.deepEqual((await readdir(s.out)).sort(), ['job-2-1.txt', 'job-2-2.txt']);
});

test('a document in many chunks is put together in order', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();
  const conn = await link.nextConnection();
  const document = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  conn.offer({
    jobId: 'job-3',
    printerName: 'front',
    document,
    contentType: 'application/pdf',
    chunkSize: 97,
  });
  t.like(await conn.result('job-3'), { printed: true });
  t.deepEqual(await readFile(join(s.out, 'job-3-1.pdf')), document);
});

test('a document that does not match its offer is dropped until a good offer comes', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-4', printerName: 'front', document: 'real', sha256: '00'.repeat(32) });
  conn.offer({ jobId: 'job-4', printerName: 'front', document: 'real', size: 99 });
  conn.offer({ jobId: 'job-4', printerName: 'front', document: 'real' });
  t.like(await conn.result('job-4'), { printed: true });
  t.is(conn.messages.filter((m) => m.received?.jobId === 'job-4').length, 1);
  t.is(s.prints.get(s.out), 1);
});

test('an empty document is one empty chunk and prints', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-5', printerName: 'front', document: '' });
  t.like(await conn.result('job-5'), { printed: true });
  t.is((await readFile(join(s.out, 'job-5-1.txt'))).length, 0);
});

test('a job for a printer the station does not have fails with a detail', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-6', printerName: 'nowhere', document: 'x' });
  const result = await conn.result('job-6');
  t.false(result.printed);
  t.regex(result.detail, /no printer named "nowhere"/);
});

/** A raw printer's real backend, counting the prints it refused in `refused.count`. */
function refusalCounting(refused: { count: number }) {
  return (spec: BackendSpec): Backend => {
    if (spec.kind !== 'raw') throw new Error(`a raw printer here, not ${spec.kind}`);
    const real = createRawBackend({ host: spec.host, port: spec.port, lingerMs: 50 });
    return {
      status: () => real.status(),
      print: (job, signal) =>
        real.print(job, signal).catch((err: unknown) => {
          refused.count += 1;
          throw err;
        }),
    };
  };
}

/** A raw printer coming on at `port`: the documents it was sent, in order. */
async function rawPrinter(t: ExecutionContext, port: number): Promise<string[]> {
  const documents: string[] = [];
  const printer = createServer((socket) => {
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    socket.on('end', () => {
      if (parts.length > 0) documents.push(Buffer.concat(parts).toString());
      socket.end();
    });
  });
  await new Promise<void>((resolve) => printer.listen(port, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => printer.close(() => resolve())));
  return documents;
}

test('a job its raw printer refused waits at the station and prints once the printer answers', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const port = await freePort();
  const s = await station(t, link, [`labels=raw:127.0.0.1:${port}`]);
  const refused = { count: 0 };
  await s.start({ statusIntervalMs: 50, createBackend: refusalCounting(refused) });
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-r1', printerName: 'labels', document: 'first' });
  conn.offer({ jobId: 'job-r2', printerName: 'labels', document: 'second' });
  await waitUntil(() => refused.count >= 1, 'the printer refused the first job');
  // Queued behind the waiting job and never begun: a withdrawal still keeps it from printing.
  await conn.waitFor((m) => m.received?.jobId === 'job-r2');
  // `spool agent status` counts both as waiting for the printer.
  const waiting = async () =>
    (await readStatus(s.stateDir))?.printers.find((p) => p.name === 'labels')?.jobs_waiting;
  await waitUntil(async () => (await waiting()) === 2, 'the status counts two jobs waiting');
  conn.withdraw('job-r2');
  await waitUntil(async () => (await waiting()) === 1, 'the status counts the withdrawal');

  // The printer comes on.
  const documents = await rawPrinter(t, port);
  const result = await conn.result('job-r1');
  t.is(result.detail, '');
  t.true(result.printed);
  t.deepEqual(documents, ['first']);
  t.false(conn.reports().some((m) => m.result?.jobId === 'job-r2'));
  t.is(conn.reports().filter((m) => m.result?.jobId === 'job-r1').length, 1);
  await waitUntil(async () => (await waiting()) === 0, 'nothing is left waiting');
});

test('a job waiting for its raw printer when the agent stops prints once after the restart', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const port = await freePort();
  const s = await station(t, link, [`labels=raw:127.0.0.1:${port}`]);
  const refused = { count: 0 };
  const options = { statusIntervalMs: 50, createBackend: refusalCounting(refused) };
  const first = await s.start(options);
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-w1', printerName: 'labels', document: 'after the restart' });
  await waitUntil(() => refused.count >= 1, 'the printer refused the job');
  await first.stop();
  t.false(
    conn.messages.some((m) => m.result?.jobId === 'job-w1'),
    'stopping is not a result: the job was never sent to the printer',
  );

  // The printer comes on, and the agent starts again; the server offers the job again.
  const documents = await rawPrinter(t, port);
  await s.start(options);
  const again = await link.nextConnection();
  again.offer({ jobId: 'job-w1', printerName: 'labels', document: 'after the restart' });
  t.like(await again.result('job-w1'), { printed: true, detail: '' });
  t.deepEqual(documents, ['after the restart']);
});

test('a job withdrawn before it is offered never prints', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();
  const conn = await link.nextConnection();
  conn.withdraw('job-7');
  conn.offer({ jobId: 'job-7', printerName: 'front', document: 'no' });
  conn.offer({ jobId: 'job-8', printerName: 'front', document: 'yes' });
  await conn.result('job-8');
  t.false(conn.messages.some((m) => m.received?.jobId === 'job-7' || m.result?.jobId === 'job-7'));
  t.deepEqual(await readdir(s.out), ['job-8-1.txt']);
});

/** A port-9100 printer that takes each job's bytes but holds the connection until released. */
async function heldPrinter(t: ExecutionContext) {
  const jobs: Buffer[] = [];
  const held: Socket[] = [];
  const server: NetServer = createServer({ allowHalfOpen: true }, (socket) => {
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    socket.on('end', () => {
      if (parts.length === 0) {
        socket.end(); // a status probe
        return;
      }
      jobs.push(Buffer.concat(parts));
      held.push(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  t.teardown(() => {
    for (const s of held) s.destroy();
    server.close();
  });
  return {
    port: address.port,
    jobs,
    /** Lets the printer finish every job it holds. */
    release() {
      for (const s of held.splice(0)) s.end();
    },
  };
}

test('a queued job withdrawn before it begins never prints; the printing one finishes', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const printer = await heldPrinter(t);
  const dir = await mkdtemp(join(tmpdir(), 'spool-agent-test-'));
  const agent = await runAgent({
    server: link.address,
    token: GOOD_TOKEN,
    printers: [
      parsePrinterSpec(`laser=raw:127.0.0.1:${printer.port}`),
      parsePrinterSpec(`front=file:${dir}/out`),
    ],
    stateDir: join(dir, 'state'),
    logger: silentLogger,
    backoff: FAST_BACKOFF,
  });
  t.teardown(async () => {
    await agent.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-a', printerName: 'laser', document: 'AAAA' });
  await waitUntil(() => printer.jobs.length === 1, 'the printer holds job-a');
  conn.offer({ jobId: 'job-b', printerName: 'laser', document: 'BBBB' });
  await conn.waitFor((m) => m.received?.jobId === 'job-b');
  conn.withdraw('job-b');
  conn.withdraw('job-a'); // too late: job-a is printing and is reported as it ends
  conn.offer({ jobId: 'job-c', printerName: 'laser', document: 'CCCC' });
  // Printers print in parallel: the file printer is not held up by the laser.
  conn.offer({ jobId: 'job-d', printerName: 'front', document: 'DDDD' });
  t.like(await conn.result('job-d'), { printed: true });
  t.false(conn.messages.some((m) => m.result?.jobId === 'job-a'));

  printer.release();
  t.like(await conn.result('job-a'), { printed: true });
  await waitUntil(() => printer.jobs.length === 2, 'job-c reaches the printer');
  printer.release();
  t.like(await conn.result('job-c'), { printed: true });
  t.deepEqual(
    printer.jobs.map((b) => b.toString()),
    ['AAAA', 'CCCC'],
  );
  t.false(conn.messages.some((m) => m.result?.jobId === 'job-b'));
});

test("a job withdrawn while it is handed to its printer's spooler is taken back once the spooler names it, and never prints", async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  // A spooler (as CUPS is) whose hand-over (lp) waits for `handOver`, then names the job: a job
  // given back before the hand-over ends fails as cancelled; one not given back prints.
  let handOver!: () => void;
  const handingOver = new Promise<void>((resolve) => {
    handOver = resolve;
  });
  let handing = false;
  const givenBack: Array<string | undefined> = [];
  const spooler: Backend = {
    status: async () => ({ status: 'ready', detail: '', capabilities: AS_IS_CAPABILITIES }),
    async print(job) {
      handing = true;
      await handingOver;
      await job.submitted?.('17');
      if (givenBack.length > 0) throw new Error('cancelled in the spooler');
      return HANDED_OFF;
    },
    async cancel(job) {
      givenBack.push(job.ref);
      return true;
    },
  };
  const lines: Array<{ msg: string }> = [];
  const s = await station(t, link, ['office=file:out']);
  await s.start({
    createBackend: () => spooler,
    logger: pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) }),
  });
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-w', printerName: 'office', document: 'not wanted after all\n' });
  await waitUntil(() => handing, 'the job is being handed to the spooler');
  conn.withdraw('job-w');
  await waitUntil(
    () => lines.some((l) => l.msg.startsWith('job withdrawn')),
    'the agent has the withdrawal',
  );
  handOver();

  const journal = async () =>
    (await readFile(join(s.stateDir, JOURNAL_FILE), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { job: string; event: string });
  await waitUntil(
    async () =>
      (await journal()).some(
        (l) => l.job === 'job-w' && l.event !== 'received' && l.event !== 'printing',
      ),
    'the job ends in the journal',
  );
  const events = (await journal()).filter((l) => l.job === 'job-w').map((l) => l.event);
  t.is(events.at(-1), 'withdrawn', events.join(', '));
  t.false(events.includes('printed'), events.join(', '));
  t.deepEqual(givenBack, ['17'], 'taken back from the spooler by the name it gave');
  t.false(
    conn.messages.some((m) => m.result?.jobId === 'job-w'),
    'no result: it did not print',
  );
});

test('reports the server has not accepted are sent again after every reconnect, and only those', async (t) => {
  const link = await FakeLink.start({ autoAccept: false });
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();

  let conn = await link.nextConnection();
  conn.offer({ jobId: 'job-9', printerName: 'front', document: 'x' });
  await conn.result('job-9');
  conn.accept('job-9', 1, 'received'); // the result stays unaccepted
  conn.offer({ jobId: 'job-10', printerName: 'front', document: 'y' });
  await conn.result('job-10');
  conn.end(GrpcStatus.UNAVAILABLE, 'server restarting');

  conn = await link.nextConnection();
  await conn.waitFor((m) => m.result?.jobId === 'job-10');
  t.deepEqual(
    conn.messages.map((m) =>
      m.hello ? 'hello' : m.received ? `received ${m.received.jobId}` : `result ${m.result?.jobId}`,
    ),
    ['hello', 'result job-9', 'received job-10', 'result job-10'],
  );
  t.true(conn.messages[1]?.result?.printed);
  for (const id of ['job-9', 'job-10']) conn.accept(id, 1, 'result');
  conn.accept('job-10', 1, 'received');
  conn.end();

  conn = await link.nextConnection();
  conn.offer({ jobId: 'job-11', printerName: 'front', document: 'z' });
  await conn.result('job-11');
  t.deepEqual(
    conn.reports().map((m) => m.received?.jobId ?? m.result?.jobId),
    ['job-11', 'job-11'],
  );
  t.is(s.prints.get(s.out), 3);
});

test('a refused token stops the agent for good with an error that says so', async (t) => {
  const link = await FakeLink.start({ tokens: ['svc_dev_other'] });
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const agent = await s.start();
  const error = await t.throwsAsync(agent.done);
  t.regex(error?.message ?? '', /refused the station token/);
  t.regex(error?.message ?? '', /UNAUTHENTICATED: unknown or revoked device token/);
  await new Promise((r) => setTimeout(r, 100));
  t.is(link.refused, 1);
  t.is(link.connections.length, 0);
  await agent.stop(); // stopping a stopped agent is harmless
});

test('a token revoked while the link is up stops the agent', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const agent = await s.start();
  const conn = await link.nextConnection();
  await conn.waitFor((m) => m.hello !== undefined);
  link.tokens.clear();
  conn.end(GrpcStatus.UNAUTHENTICATED, 'token revoked');
  await t.throwsAsync(agent.done, { message: /refused the station token/ });
});

test('a job left printing when the agent stopped is reported failed, interrupted, and never printed', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const { journal } = await Journal.open(s.stateDir, {
    clock: new ManualClock(),
    logger: silentLogger,
  });
  await journal.record('job-12', 1, 'received', { printer: 'front' });
  await journal.accept('job-12', 1, 'received');
  await journal.record('job-12', 1, 'printing', { printer: 'front' });
  await journal.close();

  await s.start();
  const conn = await link.nextConnection();
  t.deepEqual(await conn.result('job-12'), {
    jobId: 'job-12',
    attempt: 1,
    printed: false,
    detail: INTERRUPTED_DETAIL,
    // Sent again by a restarted agent: the trace of the first print is gone with the process.
    traceContext: {},
    confirmation: undefined,
  });
  t.false(conn.messages.some((m) => m.received?.jobId === 'job-12'));
  conn.offer({ jobId: 'job-12', printerName: 'front', document: 'again' });
  await waitUntil(
    () => conn.messages.filter((m) => m.result?.jobId === 'job-12').length === 2,
    'the result is sent again',
  );
  t.is(s.prints.get(s.out), undefined);
});

test('an interrupted file job whose file was written is reported printed and not printed again', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const { journal } = await Journal.open(s.stateDir, {
    clock: new ManualClock(),
    logger: silentLogger,
  });
  await journal.record('job-14', 1, 'received', { printer: 'front' });
  await journal.accept('job-14', 1, 'received');
  await journal.record('job-14', 1, 'printing', { printer: 'front' });
  await journal.close();
  await mkdir(s.out, { recursive: true });
  await writeFile(join(s.out, 'job-14-1.txt'), 'it came out');

  await s.start({ createBackend: (spec) => countingBackend(spec, s.prints, true) });
  const conn = await link.nextConnection();
  t.deepEqual(await conn.result('job-14'), {
    jobId: 'job-14',
    attempt: 1,
    printed: true,
    detail: '',
    traceContext: {},
    // The file backend says the file was written: the job was handed off.
    confirmation: { level: 'handed_off', pages: undefined },
  });
  conn.offer({ jobId: 'job-14', printerName: 'front', document: 'again' });
  await waitUntil(
    () => conn.messages.filter((m) => m.result?.jobId === 'job-14').length === 2,
    'the result is sent again',
  );
  t.is(s.prints.get(s.out), undefined);
});

test('a printed result sent again after a restart keeps its confirmation; one journaled before confirmations reads handed off', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const { journal } = await Journal.open(s.stateDir, {
    clock: new ManualClock(),
    logger: silentLogger,
  });
  // Printed before the stop, each result not yet accepted by the server.
  await journal.record('job-16', 1, 'received', { printer: 'front' });
  await journal.accept('job-16', 1, 'received');
  await journal.record('job-16', 1, 'printed', {
    confirmation: { level: 'device_completed', pages: 3 },
  });
  await journal.close();
  // A line an agent from before confirmations wrote.
  await appendFile(
    join(s.stateDir, JOURNAL_FILE),
    `${JSON.stringify({ at: new Date().toISOString(), job: 'job-17', attempt: 1, event: 'printed' })}\n`,
  );

  await s.start();
  const conn = await link.nextConnection();
  t.like(await conn.result('job-16'), {
    printed: true,
    confirmation: { level: 'device_completed', pages: 3 },
  });
  t.like(await conn.result('job-17'), {
    printed: true,
    confirmation: { level: 'handed_off', pages: undefined },
  });
  t.is(s.prints.get(s.out), undefined);
});

test('an interrupted file job whose file was not written prints once when offered again', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const { journal } = await Journal.open(s.stateDir, {
    clock: new ManualClock(),
    logger: silentLogger,
  });
  await journal.record('job-15', 1, 'received', { printer: 'front' });
  await journal.accept('job-15', 1, 'received');
  await journal.record('job-15', 1, 'printing', { printer: 'front' });
  await journal.close();

  await s.start({ createBackend: (spec) => countingBackend(spec, s.prints, true) });
  const conn = await link.nextConnection();
  conn.offer({ jobId: 'job-15', printerName: 'front', document: 'now' });
  t.like(await conn.result('job-15'), { printed: true });
  t.is(s.prints.get(s.out), 1);
  t.is(await readFile(join(s.out, 'job-15-1.txt'), 'utf8'), 'now');
});

test('a job received but not begun before a restart prints when offered again', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const { journal } = await Journal.open(s.stateDir, {
    clock: new ManualClock(),
    logger: silentLogger,
  });
  await journal.record('job-13', 1, 'received', { printer: 'front' });
  await journal.close();

  await s.start();
  const conn = await link.nextConnection();
  await conn.waitFor((m) => m.received?.jobId === 'job-13'); // not accepted before: sent again
  conn.offer({ jobId: 'job-13', printerName: 'front', document: 'late' });
  t.like(await conn.result('job-13'), { printed: true });
  t.is(s.prints.get(s.out), 1);
});

test('a change of printer status is sent as the whole printer list', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link, ['front=file:out', 'back=file:out2']);
  const lines: Array<{ level: number; msg: string; detail?: string }> = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) });
  await s.start({ statusIntervalMs: 20, logger });
  const conn = await link.nextConnection();
  await conn.waitFor((m) => m.hello !== undefined);
  await rm(s.out, { recursive: true });
  const changed = await conn.waitFor((m) => m.printers !== undefined);
  t.deepEqual(
    changed.printers?.printers.map((p) => [p.name, p.status]),
    [
      ['front', 'error'],
      ['back', 'ready'],
    ],
  );
  t.regex(changed.printers?.printers[0]?.detail ?? '', /cannot write to .*out/);
  // A station owner watching warnings hears of it once, with the reason, and of its end.
  const trouble = lines.filter((l) => l.msg === 'printer front is in error; its jobs wait');
  t.is(trouble.length, 1);
  t.is(trouble[0]?.level, 40);
  t.regex(trouble[0]?.detail ?? '', /cannot write to .*out/);
  await mkdir(s.out);
  await conn.waitFor((m) => m.printers?.printers[0]?.status === 'ready');
  await waitUntil(
    () => lines.some((l) => l.msg === 'printer front can print again'),
    'the end of the trouble is logged',
  );
});

test('the agent keeps reconnecting while the server is down and stops cleanly meanwhile', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  const agent = await s.start();
  const conn = await link.nextConnection();
  await conn.waitFor((m) => m.hello !== undefined);
  await link.stop();
  await new Promise((r) => setTimeout(r, 100));
  await link.restart();
  const again = await link.nextConnection();
  await again.waitFor((m) => m.hello !== undefined);
  await agent.stop();
  await agent.done;
  await again.closed;
  t.pass();
});

test('a second agent on the same state directory is refused', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await s.start();
  await t.throwsAsync(s.start(), {
    message: /another spool agent .* is using the state directory/,
  });
});

test('a lock left by an agent whose pid another process has since been given is taken over', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  // After a power cut the lock file survives, and its pid is some other process's now: here
  // the test runner's, which started at another time than the one recorded.
  await mkdir(s.stateDir, { recursive: true });
  await writeFile(join(s.stateDir, 'agent.lock'), `${process.ppid} 1\n`);
  const agent = await s.start();
  await link.nextConnection();
  t.regex(
    await readFile(join(s.stateDir, 'agent.lock'), 'utf8'),
    new RegExp(`^${process.pid} \\d+\n$`),
  );
  await agent.stop();
});

test('a status file half written when an agent was killed is cleared at the next start', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await mkdir(s.stateDir, { recursive: true });
  await writeFile(join(s.stateDir, 'status.json.4242.tmp'), '{"half":');
  await s.start();
  t.deepEqual(
    (await readdir(s.stateDir)).filter((f) => f.endsWith('.tmp')),
    [],
  );
  t.true((await readdir(s.stateDir)).includes('status.json'));
});

test('bad agent options are refused before anything starts', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const s = await station(t, link);
  await t.throwsAsync(s.start({ printers: [] }), { message: /at least one printer/ });
  await t.throwsAsync(s.start({ token: '' }), { message: /station token/ });
  // An address the link cannot be at is said at once, rather than retried forever.
  await t.throwsAsync(s.start({ server: 'http://127.0.0.1:7070' }), {
    message:
      'server "http://127.0.0.1:7070" is a URL: give the station link\'s HOST:PORT, without http://',
  });
  await t.throwsAsync(s.start({ server: `${link.address},spool.example.com` }), {
    message: /^server "spool\.example\.com" has no port: give HOST:PORT/,
  });
  await t.throwsAsync(
    s.start({ printers: [parsePrinterSpec('a=file:/tmp/x'), parsePrinterSpec('a=file:/tmp/y')] }),
    { message: /two printers are named "a"/ },
  );
});

test('backoff doubles from the first step to the cap, with full jitter', (t) => {
  const options = { initialMs: 500, maxMs: 30_000 };
  const top = (n: number) => backoffDelay(n, options, () => 0.999_999);
  t.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7, 20].map(top),
    [499, 999, 1999, 3999, 7999, 15999, 29999, 29999, 29999],
  );
  t.is(
    backoffDelay(5, options, () => 0),
    0,
  );
  t.is(
    backoffDelay(1_000, options, () => 0.5),
    15_000,
  );
});

test('reconnect waits grow while links keep failing and start over after a link lasted a minute', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const clock = new ManualClock();
  const lines: { retry_in_ms?: number }[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l)) });
  const agentLink = startLink({
    server: link.address,
    token: GOOD_TOKEN,
    logger,
    clock,
    backoff: { initialMs: 8, maxMs: 64 },
    random: () => 0.999_999,
    hello: () => ({
      agentVersion: 'test',
      printers: [],
      held: [],
      platform: '',
      update: undefined,
    }),
    onWelcome: () => {},
    onMessage: () => {},
    onDown: () => {},
  });
  t.teardown(() => agentLink.stop());
  const waits = () => lines.flatMap((l) => (l.retry_in_ms === undefined ? [] : [l.retry_in_ms]));

  for (let i = 0; i < 5; i += 1) {
    const conn = await link.nextConnection();
    await waitUntil(() => agentLink.up, 'the link is up');
    if (i === 3) clock.advance(BACKOFF_RESET_AFTER_MS);
    conn.end(GrpcStatus.UNAVAILABLE, 'bye');
  }
  await link.nextConnection();
  t.deepEqual(waits(), [7, 15, 31, 7, 15]);
});

test('a link the server keeps replacing with a newer one says another agent has the token', async (t) => {
  const link = await FakeLink.start();
  t.teardown(() => link.stop());
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l)) });
  const agentLink = startLink({
    server: link.address,
    token: GOOD_TOKEN,
    logger,
    clock: new ManualClock(),
    backoff: { initialMs: 8, maxMs: 16 },
    hello: () => ({
      agentVersion: 'test',
      printers: [],
      held: [],
      platform: '',
      update: undefined,
    }),
    onWelcome: () => {},
    onMessage: () => {},
    onDown: () => {},
  });
  t.teardown(() => agentLink.stop());
  const another = (l: { msg: string }) => l.msg.startsWith('another agent is linking');
  // Once is a restart of the agent's own link (a new process, a network hiccup): nothing said.
  let conn = await link.nextConnection();
  await waitUntil(() => agentLink.up, 'the link is up');
  conn.end(GrpcStatus.ABORTED, 'replaced by a newer link');
  conn = await link.nextConnection();
  await waitUntil(() => agentLink.up, 'the link is up again');
  t.false(lines.some(another));
  // Again and again: another agent has the token.
  for (let i = 0; i < 3; i += 1) {
    conn.end(GrpcStatus.ABORTED, 'replaced by a newer link');
    conn = await link.nextConnection();
    await waitUntil(() => agentLink.up, 'the link is up again');
  }
  const said = lines.filter(another);
  t.is(said.length, 1, 'said once, not at every replacement');
  t.is(said[0]?.level, 50);
});

test('--server takes a comma list of addresses; a gRPC target URI is one address', (t) => {
  t.deepEqual(splitServers('link-eu.example.com:443, link-us.example.com:443'), [
    'link-eu.example.com:443',
    'link-us.example.com:443',
  ]);
  t.deepEqual(splitServers('localhost:7070'), ['localhost:7070']);
  t.deepEqual(splitServers('ipv4:127.0.0.1:7070,127.0.0.1:7071'), [
    'ipv4:127.0.0.1:7070,127.0.0.1:7071',
  ]);
  t.deepEqual(splitServers('dns:///spool-link.example.com:443'), [
    'dns:///spool-link.example.com:443',
  ]);
});

test('with several servers the agent moves on from one that is down, and returns to the first after a link ends', async (t) => {
  const first = await FakeLink.start();
  const second = await FakeLink.start();
  t.teardown(() => Promise.all([first.stop(), second.stop()]).then(() => undefined));
  const s = await station(t, first);
  await s.start({ server: `${first.address},${second.address}` });
  await first.nextConnection();

  // The first server goes away: the agent tries it once more, then the second.
  await first.stop();
  const onSecond = await second.nextConnection();
  t.truthy(onSecond.messages[0]?.hello);

  // The first is back; when the link to the second ends, the agent goes back to the first.
  await first.restart();
  onSecond.end(GrpcStatus.UNAVAILABLE, 'the server is shutting down');
  const backOnFirst = await first.nextConnection();
  t.truthy(backOnFirst.messages[0]?.hello);
  t.is(second.connections.length, 1);
});

test('spool agent --ca speaks TLS to a server whose certificate that CA signed', async (t) => {
  const fixtures = join(import.meta.dirname, 'fixtures', 'tls');
  const link = await FakeLink.start({
    tls: {
      key: await readFile(join(fixtures, 'localhost.key')),
      cert: await readFile(join(fixtures, 'localhost.crt')),
    },
  });
  t.teardown(() => link.stop());
  const dir = await mkdtemp(join(tmpdir(), 'spool-agent-tls-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const port = link.address.split(':')[1] as string;
  const agent = spawnSpool(
    [
      'agent',
      '--server',
      `localhost:${port}`,
      '--ca',
      join(fixtures, 'localhost.crt'),
      '--token',
      GOOD_TOKEN,
      '--printer',
      `desk=file:${join(dir, 'out')}`,
      '--state-dir',
      join(dir, 'state'),
    ],
    { LOG_LEVEL: 'info' },
  );
  t.teardown(() => agent.stop());
  const conn = await link.nextConnection(20_000);
  t.deepEqual(
    conn.messages[0]?.hello?.printers.map((p) => p.name),
    ['desk'],
  );
  await agent.waitFor(/station link up/);
  t.is(await agent.stop(), 0);
});
