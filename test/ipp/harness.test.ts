/**
 * The IPP phase's own harness: its tests run in a network of their own, and the ippeveprinter the
 * helper starts answers IPP and shows the state, impressions, holds and failures a test gives it.
 */
import test from 'ava';
import {
  IPP_OPERATION,
  type IppPrinter,
  ippRequest,
  startIppPrinter,
} from '../helpers/ipp-printer.js';
import { runProcess } from '../helpers/processes.js';
import { eventually } from '../helpers/system.js';

const TAG = { integer: 0x21, keyword: 0x44, mimeType: 0x49 };
const JOB_STATE = { pending: 3, processing: 5, aborted: 8, completed: 9 };

/** Sends a text document with Print-Job and resolves with its job-id. */
async function printText(printer: IppPrinter): Promise<number> {
  const { status, attributes } = await ippRequest(
    printer.port,
    IPP_OPERATION.printJob,
    [[TAG.mimeType, 'document-format', 'text/plain']],
    Buffer.from('hello\n'),
  );
  if (status !== 0) throw new Error(`Print-Job: status 0x${status.toString(16)}`);
  return attributes.get('job-id')?.[0] as number;
}

async function job(printer: IppPrinter, id: number) {
  const { attributes } = await ippRequest(printer.port, IPP_OPERATION.getJobAttributes, [
    [TAG.integer, 'job-id', id],
  ]);
  return {
    state: attributes.get('job-state')?.[0],
    impressions: attributes.get('job-impressions-completed')?.[0],
    message: attributes.get('job-state-message')?.[0],
  };
}

async function reasons(printer: IppPrinter) {
  return (await printer.attributes(['printer-state-reasons'])).get('printer-state-reasons');
}

test('the IPP tests run in a network namespace whose only interface is loopback', async (t) => {
  const links = await runProcess('ip', ['-o', 'link', 'show'], { PATH: process.env.PATH ?? '' });
  t.is(links.code, 0, links.stderr);
  t.deepEqual(
    links.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(': ')[1]),
    ['lo'],
  );
});

test('the printer answers Get-Printer-Attributes and shows the state it is given at once', async (t) => {
  const printer = await startIppPrinter(t);
  const printerAttributes = await printer.attributes(['printer-name', 'printer-state']);
  t.deepEqual(printerAttributes.get('printer-name'), [printer.name]);
  t.deepEqual(printerAttributes.get('printer-state'), [3]); // idle
  t.deepEqual(await reasons(printer), ['none']);
  await printer.setState(['media-empty']);
  t.deepEqual(await reasons(printer), ['media-empty-report']);
  await printer.setState([]);
  t.deepEqual(await reasons(printer), ['none']);
});

test('a held job stays processing, shows a jam while it has one, and completes with the impressions set', async (t) => {
  const printer = await startIppPrinter(t);
  await printer.setImpressions(3);
  await printer.hold();
  const id = await printText(printer);
  await eventually(
    () => printer.jobs(),
    (jobs) => jobs.length === 1,
  );
  t.is((await job(printer, id)).state, JOB_STATE.processing);

  await printer.setState(['media-jam']);
  // While printing, ippeveprinter suffixes a reason with -warning.
  await eventually(
    () => reasons(printer),
    (r) => r?.includes('media-jam-warning') === true,
  );
  await printer.setState([]);
  await printer.release();
  const done = await eventually(
    () => job(printer, id),
    (j) => j.state !== JOB_STATE.processing,
  );
  t.like(done, { state: JOB_STATE.completed, impressions: 3 });
  t.deepEqual(await reasons(printer), ['none']);
});

test('a failing job ends aborted with the message the printer gives', async (t) => {
  const printer = await startIppPrinter(t);
  await printer.fail('out of toner');
  const id = await printText(printer);
  const done = await eventually(
    () => job(printer, id),
    (j) => j.state !== JOB_STATE.pending && j.state !== JOB_STATE.processing,
  );
  t.is(done.state, JOB_STATE.aborted);
  t.regex(String(done.message), /out of toner/);
});
