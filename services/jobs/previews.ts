/**
 * Pictures of a PDF job's first page, made with poppler's pdftoppm. A render takes a core for up
 * to 20 s, so a jobs process makes only a few at once, keeps a few more waiting and refuses the
 * rest (`503` with `Retry-After`); and as a job's document never changes, each picture is kept in
 * a cache bounded in bytes, so that a console showing one job to many people renders it once.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LRUCache } from 'lru-cache';
import { SpoolError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';

const run = promisify(execFile);

export interface PreviewLimits {
  /** Renders running at once (default 2). */
  rendering?: number;
  /** Renders waiting for one of those; a request beyond is refused (default 8). */
  waiting?: number;
  /** Bytes of pictures kept (default 32 MiB). */
  cacheBytes?: number;
  /** The longest a render may take (default 20 s). */
  timeoutMs?: number;
}

export interface PdfPreviews {
  /**
   * The first page of job `jobId`'s PDF as a PNG: from the cache, or rendered from `load()`'s
   * document. Two requests for one job at once share one render.
   */
  firstPage(jobId: string, load: () => Promise<Buffer>): Promise<Buffer>;
}

export function createPdfPreviews(logger: Logger, limits: PreviewLimits = {}): PdfPreviews {
  const rendering = limits.rendering ?? 2;
  const waiting = limits.waiting ?? 8;
  const timeoutMs = limits.timeoutMs ?? 20_000;
  const cache = new LRUCache<string, Buffer>({
    maxSize: limits.cacheBytes ?? 32 * 1024 * 1024,
    sizeCalculation: (png) => Math.max(1, png.length),
  });
  const pending = new Map<string, Promise<Buffer>>();
  let running = 0;
  const queue: Array<() => void> = [];

  async function slot(): Promise<void> {
    if (running < rendering) {
      running++;
      return;
    }
    if (queue.length >= waiting) {
      throw new SpoolError('unavailable', 'too many previews are being made; try again shortly');
    }
    // The slot is handed over by the render that ends, without `running` going down.
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  function release(): void {
    const next = queue.shift();
    if (next) next();
    else running--;
  }

  async function render(jobId: string, load: () => Promise<Buffer>): Promise<Buffer> {
    await slot();
    try {
      const png = await pdfFirstPage(await load(), logger, jobId, timeoutMs);
      cache.set(jobId, png);
      return png;
    } finally {
      release();
    }
  }

  return {
    firstPage(jobId, load) {
      const cached = cache.get(jobId);
      if (cached) return Promise.resolve(cached);
      let made = pending.get(jobId);
      if (!made) {
        made = render(jobId, load).finally(() => pending.delete(jobId));
        pending.set(jobId, made);
      }
      return made;
    },
  };
}

/**
 * Renders the first page of a PDF as a PNG. Without pdftoppm on the PATH no preview can be made,
 * now or later: a 500 saying so, and an error in the log naming the package. A PDF pdftoppm
 * cannot read has no preview (404, as a raw document); one it cannot render in time is a 503 to
 * retry. Either way the reason is in the log.
 */
async function pdfFirstPage(
  pdf: Buffer,
  logger: Logger,
  jobId: string,
  timeoutMs: number,
): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'spool-preview-'));
  try {
    await writeFile(join(dir, 'in.pdf'), pdf);
    await run(
      'pdftoppm',
      ['-png', '-f', '1', '-l', '1', '-singlefile', '-scale-to', '1024', 'in.pdf', 'page'],
      { cwd: dir, timeout: timeoutMs },
    );
    return await readFile(join(dir, 'page.png'));
  } catch (err) {
    const { code, syscall } = err as NodeJS.ErrnoException;
    if (code === 'ENOENT' && syscall?.startsWith('spawn')) {
      logger.error(
        { err },
        "no PDF preview can be made: pdftoppm is not on this jobs service's PATH (install poppler-utils)",
      );
      throw new SpoolError('internal', 'PDF previews are not available on this server');
    }
    logger.warn({ err, job_id: jobId }, 'a PDF preview could not be made');
    // Killed at the timeout: a busy machine may do better later. Refused by pdftoppm: a PDF it
    // cannot read never will be, so saying to retry would only be retried.
    if ((err as { killed?: boolean }).killed) {
      throw new SpoolError('unavailable', 'the preview took too long to make; try again', {
        cause: err,
      });
    }
    throw new SpoolError('not_found', 'this PDF has no preview: it could not be rendered', {
      cause: err,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
