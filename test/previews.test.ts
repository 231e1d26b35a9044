/**
 * PDF previews are made by pdftoppm a few at a time: more than wait for one are refused with a 503
 * to retry, a job's picture is made once and kept, and two requests for it at once share a render.
 */
import test from 'ava';
import { SpoolError } from '../lib/errors.js';
import { createLogger } from '../lib/logger.js';
import { createPdfPreviews } from '../services/jobs/previews.js';
import { minimalPdf } from './helpers/pdf.js';

const logger = createLogger({ level: 'silent', name: 'test' });
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

/** A document whose loading waits until `give()` is called, counting the loads. */
function heldDocument() {
  let give = () => {};
  const ready = new Promise<void>((resolve) => {
    give = resolve;
  });
  const doc = {
    loads: 0,
    give,
    load: async () => {
      doc.loads++;
      await ready;
      return minimalPdf();
    },
  };
  return doc;
}

test('renders beyond those running and waiting are refused with a 503 to retry', async (t) => {
  const previews = createPdfPreviews(logger, { rendering: 1, waiting: 1 });
  const first = heldDocument();
  const second = heldDocument();
  const rendering = previews.firstPage('job-1', first.load);
  const waiting = previews.firstPage('job-2', second.load);
  const refused = await t.throwsAsync(previews.firstPage('job-3', async () => minimalPdf()));
  t.true(refused instanceof SpoolError);
  t.is((refused as SpoolError).code, 'unavailable');
  t.is((refused as SpoolError).retryAfter, 1);
  t.is(second.loads, 0, 'the waiting render has not begun');
  first.give();
  second.give();
  for (const png of await Promise.all([rendering, waiting])) t.deepEqual(png.subarray(0, 4), PNG);
  t.deepEqual((await previews.firstPage('job-3', async () => minimalPdf())).subarray(0, 4), PNG);
});

test('a job’s picture is rendered once: kept afterwards, shared by requests at the same time', async (t) => {
  const previews = createPdfPreviews(logger, { rendering: 1, waiting: 0 });
  const doc = heldDocument();
  const both = Promise.all([
    previews.firstPage('job', doc.load),
    previews.firstPage('job', doc.load),
  ]);
  doc.give();
  const [a, b] = await both;
  t.is(a, b);
  t.is(await previews.firstPage('job', doc.load), a);
  t.is(doc.loads, 1);
});

test('a PDF pdftoppm cannot read has no preview (404), not a 503 that would be retried for ever', async (t) => {
  const previews = createPdfPreviews(logger);
  const broken = Buffer.from('%PDF-1.4\nthis is no PDF after its first line\n%%EOF\n');
  const refused = await t.throwsAsync(previews.firstPage('broken', async () => broken));
  t.true(refused instanceof SpoolError);
  t.is((refused as SpoolError).code, 'not_found');
  t.regex(refused?.message ?? '', /this PDF has no preview/);
});
