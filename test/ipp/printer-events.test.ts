/**
 * Printer events against a real IPP Everywhere printer that has none: ippeveprinter answers
 * Create-Printer-Subscriptions with server-error-operation-not-supported, so the agent says once
 * that it sends no events and reads its status at the short interval, as before there were any.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { pino } from 'pino';
import { parsePrinterSpec, runAgent } from '../../agent/index.js';
import { FakeLink, GOOD_TOKEN } from '../helpers/fake-link.js';
import { startIppPrinter } from '../helpers/ipp-printer.js';
import { eventually } from '../helpers/system.js';

test('an IPP printer that takes no subscriptions is read at the short interval, said once', async (t) => {
  const printer = await startIppPrinter(t);
  const link = await FakeLink.start();
  const dir = await mkdtemp(join(tmpdir(), 'spool-agent-events-'));
  const lines: Array<{ level: number; msg: string; err?: string }> = [];
  const agent = await runAgent({
    server: link.address,
    token: GOOD_TOKEN,
    printers: [parsePrinterSpec(`office=${printer.uri}`)],
    stateDir: dir,
    logger: pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) }),
    backoff: { initialMs: 10, maxMs: 50 },
    statusIntervalMs: 200,
    watchedStatusIntervalMs: 600_000,
    // Asked again and again, so that "once" means something.
    printerEvents: { backoff: { initialMs: 10, maxMs: 20 } },
  });
  t.teardown(async () => {
    await agent.stop();
    await link.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const conn = await link.nextConnection();
  t.like(conn.hello?.printers[0], { name: 'office', status: 'ready' });

  await printer.emptyTray();
  const empty = await conn.waitFor((m) => m.printers?.printers[0]?.status === 'out_of_paper');
  t.like(empty.printers?.printers[0], { name: 'office' });

  const refusals = () =>
    printer.output().match(/Create-Printer-Subscriptions server-error-operation-not-supported/g)
      ?.length ?? 0;
  await eventually(
    async () => refusals(),
    (n) => n >= 3,
    10_000,
  );
  const said = lines.filter((l) => l.msg.includes('printer events'));
  t.deepEqual(
    said.map((l) => [l.level, l.msg]),
    [[30, `no printer events from ${printer.uri}: statuses are read every 0.2 s`]],
  );
  t.regex(said[0]?.err ?? '', /server-error-operation-not-supported/);
});
