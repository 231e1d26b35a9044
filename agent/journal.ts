/**
 * The agent's on-disk journal of job attempts, keyed by `(job_id, attempt)`. It is what makes
 * printing at most once per attempt (docs/station-link.md): a redelivered job is looked up here
 * before it can print again, and reports the server has not accepted are found here after a
 * restart.
 *
 * The file is JSON lines, appended to; each line is one event:
 * `{"at","job","attempt","event","printer"?,"detail"?}` with `event` one of the states
 * (`received`, `printing`, `printed`, `failed`, `withdrawn`) or `accepted_received` /
 * `accepted_result`. State events are flushed to disk (fsync) before the journal says they are
 * written. Opening the journal, and appending many lines, rewrites it (temporary file, fsync,
 * rename) with one line per entry, leaving out settled entries older than the retention.
 */

import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

export type JobState = 'received' | 'printing' | 'printed' | 'failed' | 'withdrawn';
export type ReportKind = 'received' | 'result';

const STATES: ReadonlySet<string> = new Set([
  'received',
  'printing',
  'printed',
  'failed',
  'withdrawn',
]);

/** The detail of a job that was printing when the agent stopped (docs/station-link.md §6). */
export const INTERRUPTED_DETAIL = 'interrupted: the agent stopped while printing';

export const JOURNAL_FILE = 'journal.jsonl';

export interface JournalEntry {
  readonly jobId: string;
  readonly attempt: number;
  /** The name of the printer the job was offered for. */
  printer: string;
  state: JobState;
  /** Why a job failed. */
  detail: string;
  /** While printing: the printer's spooler's reference for the job (a CUPS job number). */
  ref?: string;
  /** The server has durably recorded the `received` report. */
  receivedAccepted: boolean;
  /** The server has durably recorded the `result` report. */
  resultAccepted: boolean;
  updatedAt: Date;
}

export interface JournalOptions {
  clock: Clock;
  logger: Logger;
  /** Rewrite the file after this many appended lines (default 10,000). */
  compactAfterLines?: number;
  /** Settled entries older than this are dropped when the file is rewritten (default 7 days). */
  retentionMs?: number;
}

interface Line {
  at: string;
  job: string;
  attempt: number;
  event: string;
  printer?: string;
  detail?: string;
  ref?: string;
}

const DEFAULTS = { compactAfterLines: 10_000, retentionMs: 7 * 24 * 3600 * 1000 };

export function journalKey(jobId: string, attempt: number): string {
  return `${attempt}:${jobId}`;
}

/** A settled entry needs nothing more from the agent or the server. */
export function isSettled(entry: JournalEntry): boolean {
  if (entry.state === 'withdrawn') return true;
  return (entry.state === 'printed' || entry.state === 'failed') && entry.resultAccepted;
}

export class Journal {
  readonly path: string;
  readonly #dir: string;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #compactAfterLines: number;
  readonly #retentionMs: number;
  readonly #entries = new Map<string, JournalEntry>();
  #handle: FileHandle | undefined;
  #linesSinceCompaction = 0;
  // Appends and rewrites happen one at a time, in the order they were asked for.
  #tail: Promise<void> = Promise.resolve();
  #closed = false;
  readonly #listeners: Array<() => void> = [];

  private constructor(dir: string, options: JournalOptions) {
    this.#dir = dir;
    this.path = join(dir, JOURNAL_FILE);
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#compactAfterLines = options.compactAfterLines ?? DEFAULTS.compactAfterLines;
    this.#retentionMs = options.retentionMs ?? DEFAULTS.retentionMs;
  }

  /**
   * Loads the journal in `dir` (creating it if need be). Entries left `printing` become `failed`
   * with {@link INTERRUPTED_DETAIL}; they are returned in `interrupted`.
   */
  static async open(
    dir: string,
    options: JournalOptions,
  ): Promise<{ journal: Journal; interrupted: JournalEntry[] }> {
    const journal = new Journal(dir, options);
    await mkdir(dir, { recursive: true });
    await journal.#load();
    const interrupted: JournalEntry[] = [];
    for (const entry of journal.#entries.values()) {
      if (entry.state !== 'printing') continue;
      entry.state = 'failed';
      entry.detail = INTERRUPTED_DETAIL;
      entry.resultAccepted = false;
      entry.updatedAt = journal.#clock.now();
      interrupted.push(entry);
    }
    // The rewrite also drops a torn last line from a crash mid-append.
    await journal.#rewrite();
    journal.#handle = await open(journal.path, 'a');
    return { journal, interrupted };
  }

  get(jobId: string, attempt: number): JournalEntry | undefined {
    return this.#entries.get(journalKey(jobId, attempt));
  }

  /** Every entry, oldest first. */
  entries(): JournalEntry[] {
    return [...this.#entries.values()];
  }

  /** Calls `listener` after each state {@link record}ed (the status file recounts its jobs). */
  onRecord(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Records a state. The entry changes at once (so a lookup right after sees it); the promise
   * resolves when the line is on disk.
   */
  record(
    jobId: string,
    attempt: number,
    state: JobState,
    extra: { printer?: string; detail?: string; ref?: string } = {},
  ): Promise<JournalEntry> {
    const key = journalKey(jobId, attempt);
    const at = this.#clock.now();
    let entry = this.#entries.get(key);
    if (!entry) {
      entry = {
        jobId,
        attempt,
        printer: extra.printer ?? '',
        state,
        detail: '',
        receivedAccepted: false,
        resultAccepted: false,
        updatedAt: at,
      };
      this.#entries.set(key, entry);
    }
    entry.state = state;
    entry.detail = extra.detail ?? '';
    if (extra.ref === undefined) delete entry.ref;
    else entry.ref = extra.ref;
    if (extra.printer !== undefined) entry.printer = extra.printer;
    entry.updatedAt = at;
    const line: Line = { at: at.toISOString(), job: jobId, attempt, event: state };
    if (extra.printer !== undefined) line.printer = extra.printer;
    if (extra.detail) line.detail = extra.detail;
    if (extra.ref !== undefined) line.ref = extra.ref;
    const result = entry;
    return this.#append([line], true).then(() => {
      for (const listener of this.#listeners) listener();
      return result;
    });
  }

  /** Records that the server accepted a report. Not flushed: losing it only repeats a report. */
  async accept(jobId: string, attempt: number, kind: ReportKind): Promise<void> {
    const entry = this.get(jobId, attempt);
    if (!entry) return;
    if (kind === 'received' ? entry.receivedAccepted : entry.resultAccepted) return;
    if (kind === 'received') entry.receivedAccepted = true;
    else entry.resultAccepted = true;
    const at = this.#clock.now();
    await this.#append(
      [{ at: at.toISOString(), job: jobId, attempt, event: `accepted_${kind}` }],
      false,
    );
  }

  /** Rewrites the file now (it also happens on open and after many appends). */
  compact(): Promise<void> {
    return this.#enqueue(async () => {
      await this.#handle?.close();
      this.#handle = undefined;
      await this.#rewrite();
      this.#handle = await open(this.path, 'a');
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#enqueue(async () => {
      await this.#handle?.close();
      this.#handle = undefined;
    });
  }

  #append(lines: Line[], durable: boolean): Promise<void> {
    return this.#enqueue(async () => {
      if (!this.#handle) throw new Error('the journal is closed');
      await this.#handle.appendFile(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
      if (durable) await this.#handle.sync();
      this.#linesSinceCompaction += lines.length;
      if (this.#linesSinceCompaction >= this.#compactAfterLines) {
        await this.#handle.close();
        this.#handle = undefined;
        await this.#rewrite();
        this.#handle = await open(this.path, 'a');
      }
    });
  }

  #enqueue(work: () => Promise<void>): Promise<void> {
    const run = this.#tail.then(work);
    // One failed write must not stop the ones after it; its caller gets the error.
    this.#tail = run.catch(() => {});
    return run;
  }

  async #load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    let bad = 0;
    for (const raw of text.split('\n')) {
      if (raw.trim() === '') continue;
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        bad += 1;
        continue;
      }
      if (!this.#apply(line)) bad += 1;
    }
    if (bad > 0)
      this.#logger.warn({ path: this.path, lines: bad }, 'skipped unreadable journal lines');
  }

  #apply(line: Line): boolean {
    if (typeof line.job !== 'string' || typeof line.attempt !== 'number') return false;
    const at = new Date(line.at);
    if (Number.isNaN(at.getTime())) return false;
    const key = journalKey(line.job, line.attempt);
    if (STATES.has(line.event)) {
      const entry = this.#entries.get(key) ?? {
        jobId: line.job,
        attempt: line.attempt,
        printer: '',
        state: 'received' as JobState,
        detail: '',
        receivedAccepted: false,
        resultAccepted: false,
        updatedAt: at,
      };
      entry.state = line.event as JobState;
      entry.detail = line.detail ?? '';
      if (typeof line.ref === 'string') entry.ref = line.ref;
      else delete entry.ref;
      if (line.printer !== undefined) entry.printer = line.printer;
      entry.updatedAt = at;
      this.#entries.set(key, entry);
      return true;
    }
    const entry = this.#entries.get(key);
    if (!entry) return false;
    if (line.event === 'accepted_received') entry.receivedAccepted = true;
    else if (line.event === 'accepted_result') entry.resultAccepted = true;
    else return false;
    return true;
  }

  /** Writes every entry worth keeping to a temporary file, flushes it and renames it into place. */
  async #rewrite(): Promise<void> {
    const cutoff = this.#clock.now().getTime() - this.#retentionMs;
    const lines: string[] = [];
    for (const [key, entry] of this.#entries) {
      if (isSettled(entry) && entry.updatedAt.getTime() < cutoff) {
        this.#entries.delete(key);
        continue;
      }
      const at = entry.updatedAt.toISOString();
      const base = { at, job: entry.jobId, attempt: entry.attempt };
      const state: Line = { ...base, event: entry.state, printer: entry.printer };
      if (entry.detail) state.detail = entry.detail;
      if (entry.ref !== undefined) state.ref = entry.ref;
      lines.push(JSON.stringify(state));
      if (entry.receivedAccepted)
        lines.push(JSON.stringify({ ...base, event: 'accepted_received' }));
      if (entry.resultAccepted) lines.push(JSON.stringify({ ...base, event: 'accepted_result' }));
    }
    const temp = `${this.path}.${process.pid}.tmp`;
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(lines.map((l) => `${l}\n`).join(''));
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
