/**
 * The journal's file: JSON lines appended one write at a time, flushed (fsync) when asked, and
 * rewritten whole (temporary file, fsync, rename) on open and after many appends. What the lines
 * mean is the journal's (`journal.ts`); this keeps them safe on disk.
 */
import type { FileHandle } from 'node:fs/promises';
import { open, readFile, rename, rm } from 'node:fs/promises';

/** One line of the file: a state of a job attempt, or the server's acceptance of a report. */
export interface JournalLine {
  at: string;
  job: string;
  attempt: number;
  event: string;
  printer?: string;
  detail?: string;
  ref?: string;
  /** A pool job's: it prints only once the server accepts the agent's claim. */
  claim?: boolean;
  /** A printed job's: how far its printer confirmed it (`pages` where the printer counted). */
  confirmation?: { level: string; pages?: number };
}

/** The lines a rewrite keeps; asked for when the rewrite runs, after the writes before it. */
export type JournalSnapshot = () => JournalLine[];

/** The journal's file in its directory. */
export class JournalFile {
  readonly path: string;
  readonly #dir: string;
  readonly #compactAfterLines: number;
  #handle: FileHandle | undefined;
  #linesSinceCompaction = 0;
  // Appends and rewrites happen one at a time, in the order they were asked for.
  #tail: Promise<void> = Promise.resolve();

  constructor(dir: string, path: string, compactAfterLines: number) {
    this.#dir = dir;
    this.path = path;
    this.#compactAfterLines = compactAfterLines;
  }

  /** The lines the file holds (none when there is no file), and how many could not be read. */
  async read(): Promise<{ lines: JournalLine[]; unreadable: number }> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], unreadable: 0 };
      throw error;
    }
    const lines: JournalLine[] = [];
    let unreadable = 0;
    for (const raw of text.split('\n')) {
      if (raw.trim() === '') continue;
      try {
        lines.push(JSON.parse(raw) as JournalLine);
      } catch {
        unreadable += 1;
      }
    }
    return { lines, unreadable };
  }

  /** Rewrites the file with `snapshot`'s lines, then opens it to append. */
  async start(snapshot: JournalSnapshot): Promise<void> {
    await this.#rewrite(snapshot());
    this.#handle = await open(this.path, 'a');
  }

  /** Appends lines, flushed to disk first when `durable`; many appends rewrite the file. */
  append(lines: JournalLine[], durable: boolean, snapshot: JournalSnapshot): Promise<void> {
    return this.#enqueue(async () => {
      if (!this.#handle) throw new Error('the journal is closed');
      await this.#handle.appendFile(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
      if (durable) await this.#handle.sync();
      this.#linesSinceCompaction += lines.length;
      if (this.#linesSinceCompaction >= this.#compactAfterLines) await this.#reopen(snapshot);
    });
  }

  /** Rewrites the file now, after the writes asked for before. */
  compact(snapshot: JournalSnapshot): Promise<void> {
    return this.#enqueue(() => this.#reopen(snapshot));
  }

  close(): Promise<void> {
    return this.#enqueue(async () => {
      await this.#handle?.close();
      this.#handle = undefined;
    });
  }

  async #reopen(snapshot: JournalSnapshot): Promise<void> {
    await this.#handle?.close();
    this.#handle = undefined;
    await this.#rewrite(snapshot());
    this.#handle = await open(this.path, 'a');
  }

  #enqueue(work: () => Promise<void>): Promise<void> {
    const run = this.#tail.then(work);
    // One failed write must not stop the ones after it; its caller gets the error.
    this.#tail = run.catch(() => {});
    return run;
  }

  /** Writes the lines to a temporary file, flushes it and renames it into place. */
  async #rewrite(lines: JournalLine[]): Promise<void> {
    const temp = `${this.path}.${process.pid}.tmp`;
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, this.path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
    await syncDir(this.#dir);
    this.#linesSinceCompaction = 0;
  }
}

/** Flushes a directory so a rename in it survives a power cut. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems cannot fsync a directory; the rename is then as durable as they make it.
  } finally {
    await handle.close();
  }
}
