/**
 * Page counts of PDF documents, for the usage rollup: poppler's `pdfinfo` reads the document from
 * its stdin, a few at a time, each within a time limit, and counts are kept by the document's
 * SHA-256 so that a document printed again (a reprint, the same label every day) is read once.
 * A PDF pdfinfo cannot read, or not in time, counts 0 pages and says so in the log; pdfinfo
 * missing from the PATH is an error, as no count can be made without it.
 */
import { execFile } from 'node:child_process';
import { LRUCache } from 'lru-cache';
import type { Logger } from '../../lib/logger.js';

export interface PageCounterOptions {
  /** Counts running at once (default 2). */
  concurrency?: number;
  /** The longest one count may take (default 20 s). */
  timeoutMs?: number;
  /** Counts kept by SHA-256 (default 10,000). */
  cacheEntries?: number;
}

export interface PageCounter {
  /** The pages of `pdf`, whose SHA-256 is `sha256`; 0 when it cannot be read. */
  count(pdf: Buffer, sha256: string): Promise<number>;
}

const PAGES = /^Pages:\s+(\d+)\s*$/m;

/** Runs pdfinfo on `pdf`; resolves with its output, rejects as execFile does. */
function pdfinfo(pdf: Buffer, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'pdfinfo',
      ['fd://0'],
      { timeout: timeoutMs, maxBuffer: 1024 * 1024, encoding: 'utf8' },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
    // pdfinfo may stop reading before the end (a file it refuses): that is its answer, not ours.
    child.stdin?.on('error', () => {});
    child.stdin?.end(pdf);
  });
}

export function createPageCounter(logger: Logger, options: PageCounterOptions = {}): PageCounter {
  const concurrency = options.concurrency ?? 2;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const counts = new LRUCache<string, number>({ max: options.cacheEntries ?? 10_000 });
  const waiting: Array<() => void> = [];
  let running = 0;

  async function slot(): Promise<void> {
    if (running < concurrency) {
      running++;
      return;
    }
    // The slot is handed over by the count that ends, without `running` going down.
    await new Promise<void>((resolve) => waiting.push(resolve));
  }

  function release(): void {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }

  async function read(pdf: Buffer, sha256: string): Promise<number> {
    await slot();
    try {
      const pages = Number(PAGES.exec(await pdfinfo(pdf, timeoutMs))?.[1] ?? 0);
      counts.set(sha256, pages);
      return pages;
    } catch (err) {
      const { code, syscall } = err as NodeJS.ErrnoException;
      if (code === 'ENOENT' && syscall?.startsWith('spawn')) {
        throw new Error(
          "PDF pages cannot be counted: pdfinfo is not on this jobs service's PATH (install poppler-utils)",
          { cause: err },
        );
      }
      logger.warn({ err, sha256 }, 'a PDF could not be read to count its pages; it counts 0');
      counts.set(sha256, 0);
      return 0;
    } finally {
      release();
    }
  }

  return {
    count(pdf, sha256) {
      const known = counts.get(sha256);
      return known === undefined ? read(pdf, sha256) : Promise.resolve(known);
    },
  };
}
