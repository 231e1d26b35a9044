import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { INTERRUPTED_DETAIL, JOURNAL_FILE, Journal } from '../agent/journal.js';
import { ManualClock } from '../lib/clock.js';
import { silentLogger } from '../lib/logger.js';

const DAY = 24 * 3600 * 1000;

async function tempDir(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'spool-journal-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function lines(dir: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(dir, JOURNAL_FILE), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('states and acceptances survive a reopen, keyed by job and attempt', async (t) => {
  const dir = await tempDir(t);
  const clock = new ManualClock();
  const { journal } = await Journal.open(dir, { clock, logger: silentLogger });
  await journal.record('job-1', 1, 'received', { printer: 'front' });
  await journal.accept('job-1', 1, 'received');
  await journal.record('job-1', 1, 'printing', { printer: 'front' });
  await journal.record('job-1', 1, 'printed');
  await journal.record('job-1', 2, 'received', { printer: 'front' });
  await journal.record('job-1', 2, 'failed', { detail: 'out of paper' });
  await journal.accept('job-1', 2, 'result');
  await journal.record('job-2', 1, 'withdrawn');
  await journal.close();

  const { journal: again, interrupted } = await Journal.open(dir, { clock, logger: silentLogger });
  t.deepEqual(interrupted, []);
  t.like(again.get('job-1', 1), {
    printer: 'front',
    state: 'printed',
    receivedAccepted: true,
    resultAccepted: false,
  });
  t.like(again.get('job-1', 2), {
    state: 'failed',
    detail: 'out of paper',
    receivedAccepted: false,
    resultAccepted: true,
  });
  t.like(again.get('job-2', 1), { state: 'withdrawn' });
  t.is(again.get('job-3', 1), undefined);
  t.deepEqual(
    again.entries().map((e) => `${e.jobId}/${e.attempt}`),
    ['job-1/1', 'job-1/2', 'job-2/1'],
  );
  await again.close();
});

test("a printed entry keeps its printer's confirmation across a reopen and a rewrite", async (t) => {
  const dir = await tempDir(t);
  const clock = new ManualClock();
  const { journal } = await Journal.open(dir, { clock, logger: silentLogger });
  await journal.record('job-1', 1, 'printed', {
    confirmation: { level: 'device_completed', pages: 3 },
  });
  await journal.record('job-2', 1, 'printed', { confirmation: { level: 'handed_off' } });
  await journal.close();
  // A line from an agent before confirmations: printed, and nothing more.
  await writeFile(
    join(dir, JOURNAL_FILE),
    `${await readFile(join(dir, JOURNAL_FILE), 'utf8')}${JSON.stringify({
      at: new Date().toISOString(),
      job: 'job-3',
      attempt: 1,
      event: 'printed',
    })}\n`,
  );
  // Opening rewrites the file from the entries.
  const { journal: again } = await Journal.open(dir, { clock, logger: silentLogger });
  t.deepEqual(again.get('job-1', 1)?.confirmation, { level: 'device_completed', pages: 3 });
  t.deepEqual(again.get('job-2', 1)?.confirmation, { level: 'handed_off' });
  t.is(again.get('job-3', 1)?.confirmation, undefined);
  t.deepEqual((await lines(dir)).find((l) => l.job === 'job-1')?.confirmation, {
    level: 'device_completed',
    pages: 3,
  });
  await again.close();
});

test('every line is a JSON event with the job, the attempt and the time', async (t) => {
  const dir = await tempDir(t);
  const clock = new ManualClock('2026-03-01T10:00:00Z');
  const { journal } = await Journal.open(dir, { clock, logger: silentLogger });
  await journal.record('job-1', 3, 'received', { printer: 'front' });
  clock.advance(1_000);
  await journal.accept('job-1', 3, 'received');
  await journal.close();
  t.deepEqual(await lines(dir), [
    {
      at: '2026-03-01T10:00:00.000Z',
      job: 'job-1',
      attempt: 3,
      event: 'received',
      printer: 'front',
    },
    { at: '2026-03-01T10:00:01.000Z', job: 'job-1', attempt: 3, event: 'accepted_received' },
  ]);
});

test('an entry left printing becomes failed, interrupted, with its result to report', async (t) => {
  const dir = await tempDir(t);
  const clock = new ManualClock();
  const { journal } = await Journal.open(dir, { clock, logger: silentLogger });
  await journal.record('job-1', 1, 'received', { printer: 'front' });
  await journal.record('job-1', 1, 'printing', { printer: 'front' });
  // No close: the agent died.

  const opened = await Journal.open(dir, { clock, logger: silentLogger });
  t.deepEqual(
    opened.interrupted.map((e) => [e.jobId, e.state, e.detail]),
    [['job-1', 'failed', INTERRUPTED_DETAIL]],
  );
  await opened.journal.close();
  await journal.close();
  // The conversion is on disk: a third start finds a failed job, not one printing.
  const third = await Journal.open(dir, { clock, logger: silentLogger });
  t.deepEqual(third.interrupted, []);
  t.like(third.journal.get('job-1', 1), {
    state: 'failed',
    detail: INTERRUPTED_DETAIL,
    resultAccepted: false,
  });
  await third.journal.close();
});

test('rewriting drops settled entries older than the retention and keeps the rest', async (t) => {
  const dir = await tempDir(t);
  const clock = new ManualClock('2026-03-01T00:00:00Z');
  const { journal } = await Journal.open(dir, { clock, logger: silentLogger });
  // Settled: result accepted, or withdrawn.
  await journal.record('old-printed', 1, 'printed');
  await journal.accept('old-printed', 1, 'result');
  await journal.record('old-withdrawn', 1, 'withdrawn');
  // Not settled: the server has not accepted the result, or the job has not printed.
  await journal.record('old-unaccepted', 1, 'failed', { detail: 'jam' });
  await journal.record('old-received', 1, 'received');
  clock.advance(6 * DAY);
  await journal.record('recent', 1, 'printed');
  await journal.accept('recent', 1, 'result');
  clock.advance(2 * DAY);

  await journal.compact();
  const kept = journal.entries().map((e) => e.jobId);
  t.deepEqual(kept, ['old-unaccepted', 'old-received', 'recent']);
  t.deepEqual(
    (await lines(dir)).map((l) => `${l.job} ${l.event}`),
    ['old-unaccepted failed', 'old-received received', 'recent printed', 'recent accepted_result'],
  );
  await journal.close();
  const { journal: again } = await Journal.open(dir, { clock, logger: silentLogger });
  t.deepEqual(
    again.entries().map((e) => e.jobId),
    kept,
  );
  t.like(again.get('old-unaccepted', 1), { detail: 'jam', resultAccepted: false });
  await again.close();
});

test('a large journal is rewritten atomically after enough appends', async (t) => {
  const dir = await tempDir(t);
  const clock = new ManualClock();
  const { journal } = await Journal.open(dir, {
    clock,
    logger: silentLogger,
    compactAfterLines: 10,
  });
  for (let i = 0; i < 12; i += 1) {
    await journal.record('job-1', 1, i % 2 === 0 ? 'received' : 'printing');
  }
  // 12 appends of one entry: one rewrite at the 10th leaves 1 line, then 2 more lines.
  t.is((await lines(dir)).length, 3);
  t.deepEqual(await readdir(dir), [JOURNAL_FILE]);
  await journal.close();
});

test('a torn or unreadable line is skipped, and the file is clean after opening', async (t) => {
  const dir = await tempDir(t);
  const good = { at: '2026-01-01T00:00:00.000Z', job: 'job-1', attempt: 1, event: 'printed' };
  await writeFile(
    join(dir, JOURNAL_FILE),
    `${JSON.stringify(good)}\n{"at":"2026-01-01T00:00:00.000Z","job":"x"}\nnot json\n{"at":"2026-01-01T00:0`,
  );
  const { journal } = await Journal.open(dir, { clock: new ManualClock(), logger: silentLogger });
  t.like(journal.get('job-1', 1), { state: 'printed' });
  t.is(journal.entries().length, 1);
  await journal.record('job-2', 1, 'received');
  await journal.close();
  t.deepEqual(
    (await lines(dir)).map((l) => l.job),
    ['job-1', 'job-2'],
  );
});
