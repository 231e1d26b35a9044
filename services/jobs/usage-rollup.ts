/**
 * The jobs service's usage rollup (lib/rollup.ts): every minute, the jobs created and finished
 * since its mark are added to `usage_days`, per organization and UTC day. Before a window is
 * counted, the pages of the PDFs printed in it are counted (page-counts.ts) and kept on each job,
 * so a day can be counted again from the jobs table after the documents are gone; a document that
 * retention deleted before it was counted counts 0 pages. Each round first takes failed jobs that
 * were retried since they were counted off the day they failed on.
 */
import type { ObjectStore } from '@nats-io/obj';
import type pg from 'pg';
import type { Clock } from '../../lib/clock.js';
import { withTx } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { type RollupWindow, rollupMarks, WindowedRollup } from '../../lib/rollup.js';
import { documentName } from './job-rows.js';
import type { PageCounter } from './page-counts.js';
import { USAGE_ROLLUPS_TABLE, type UsageStore } from './usage-store.js';

/** Jobs read at once: PDFs to count, or retried jobs to take off their failed day. */
const BATCH = 100;

export interface UsageRollupDeps {
  pool: pg.Pool;
  store: UsageStore;
  documents: ObjectStore;
  pages: PageCounter;
  clock: Clock;
  logger: Logger;
  /** How often a round starts (default a minute). */
  intervalMs?: number;
}

export function createUsageRollup(deps: UsageRollupDeps): WindowedRollup {
  const { pool, store } = deps;

  async function pagesOf(pdf: {
    id: string;
    sha256: string;
    document: Buffer | null;
    deleted: boolean;
  }): Promise<number> {
    if (pdf.deleted) return 0;
    let bytes = pdf.document;
    if (!bytes) {
      const blob = await deps.documents.getBlob(documentName(pdf.id));
      // Gone from the object store (retention's delete ran, its mark did not yet): 0 pages.
      if (!blob) return 0;
      bytes = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
    }
    return deps.pages.count(bytes, pdf.sha256);
  }

  async function countPages(window: RollupWindow): Promise<void> {
    for (;;) {
      const pdfs = await store.pdfsToCount(window, BATCH);
      const counts = await Promise.all(
        pdfs.map(async (pdf) => ({ id: pdf.id, orgId: pdf.orgId, pages: await pagesOf(pdf) })),
      );
      await store.setPages(counts);
      if (pdfs.length < BATCH) return;
    }
  }

  return new WindowedRollup({
    what: 'the jobs usage rollup',
    pool,
    marks: rollupMarks(pool, USAGE_ROLLUPS_TABLE, 'jobs'),
    clock: deps.clock,
    logger: deps.logger,
    ...(deps.intervalMs === undefined ? {} : { intervalMs: deps.intervalMs }),
    work: {
      firstActivity: () => store.firstActivity(),
      nextActivity: (at) => store.nextActivity(at),
      async beforeWindows() {
        let taken: number;
        do taken = await withTx(pool, (tx) => store.uncountRetried(tx, BATCH));
        while (taken === BATCH);
      },
      prepare: countPages,
      async apply(tx, window) {
        await store.countWindow(tx, window);
      },
    },
  });
}
