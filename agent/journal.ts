/**
 * The agent's on-disk journal of job attempts, keyed by `(job_id, attempt)`. It is what makes
 * printing at most once per attempt (docs/station-link.md): a redelivered job is looked up here
 * before it can print again, and reports the server has not accepted are found here after a
 * restart.
 *
 * The file is JSON lines, appended to; each line is one event:
 * `{"at","job","attempt","event","printer"?,"detail"?,"claim"?}` with `event` one of the states
 * (`received`, `printing`, `printed`, `failed`, `withdrawn`) or `accepted_received` /
 * `accepted_result`. State events are flushed to disk (fsync) before the journal says they are
 * written. Opening the journal, and appending many lines, rewrites it (temporary file, fsync,
 * rename) with one line per entry, leaving out settled entries older than the retention.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Confirmation } from './backends/backend.js';
import { JournalFile, type JournalLine } from './journal-file.js';

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
  /**
   * A pool job's attempt (docs/station-link.md): its `received` is the claim sent just before it
   * prints, and it prints only once the server accepts it.
   */
  claim?: boolean;
  /** A printed attempt's: how far the printer confirmed it. */
  confirmation?: Confirmation;
  /** The server has durably recorded the `received` report (for a pool job: the claim). */
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

const DEFAULTS = { compactAfterLines: 10_000, retentionMs: 7 * 24 * 3600 * 1000 };

export function journalKey(jobId: string, attempt: number): string {
  return `${attempt}:${jobId}`;
}

/** A settled entry needs nothing more from the agent or the server. */
export function isSettled(entry: JournalEntry): boolean {
  if (entry.state === 'withdrawn') return true;
  return (entry.state === 'printed' || entry.state === 'failed') && entry.resultAccepted;
}

/** The journal's entries, kept in memory and written through to its {@link JournalFile}. */
export class Journal {
  readonly path: string;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #retentionMs: number;
  readonly #entries = new Map<string, JournalEntry>();
  readonly #file: JournalFile;
  #closed = false;
  readonly #listeners: Array<() => void> = [];
  /** The lines a rewrite keeps, read when it runs. */
  readonly #snapshot = () => this.#lines();

  private constructor(dir: string, options: JournalOptions) {
    this.path = join(dir, JOURNAL_FILE);
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#retentionMs = options.retentionMs ?? DEFAULTS.retentionMs;
    this.#file = new JournalFile(
      dir,
      this.path,
      options.compactAfterLines ?? DEFAULTS.compactAfterLines,
    );
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
    await journal.#file.start(journal.#snapshot);
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
    extra: {
      printer?: string;
      detail?: string;
      ref?: string;
      claim?: boolean;
      confirmation?: Confirmation;
    } = {},
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
    if (extra.claim) entry.claim = true;
    if (extra.confirmation) entry.confirmation = extra.confirmation;
    else delete entry.confirmation;
    entry.updatedAt = at;
    const line: JournalLine = { at: at.toISOString(), job: jobId, attempt, event: state };
    if (extra.confirmation) line.confirmation = extra.confirmation;
    if (extra.printer !== undefined) line.printer = extra.printer;
    if (extra.claim) line.claim = true;
    if (extra.detail) line.detail = extra.detail;
    if (extra.ref !== undefined) line.ref = extra.ref;
    const result = entry;
    return this.#file.append([line], true, this.#snapshot).then(() => {
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
    await this.#file.append(
      [{ at: at.toISOString(), job: jobId, attempt, event: `accepted_${kind}` }],
      false,
      this.#snapshot,
    );
  }

  /** Rewrites the file now (it also happens on open and after many appends). */
  compact(): Promise<void> {
    return this.#file.compact(this.#snapshot);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#file.close();
  }

  async #load(): Promise<void> {
    const { lines, unreadable } = await this.#file.read();
    let bad = unreadable;
    for (const line of lines) {
      if (!this.#apply(line)) bad += 1;
    }
    if (bad > 0)
      this.#logger.warn({ path: this.path, lines: bad }, 'skipped unreadable journal lines');
  }

  #apply(line: JournalLine): boolean {
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
      if (line.claim === true) entry.claim = true;
      const confirmation = confirmationOf(line.confirmation);
      if (confirmation) entry.confirmation = confirmation;
      else delete entry.confirmation;
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

  /** Every entry worth keeping, as lines; settled entries older than the retention are dropped. */
  #lines(): JournalLine[] {
    const cutoff = this.#clock.now().getTime() - this.#retentionMs;
    const lines: JournalLine[] = [];
    for (const [key, entry] of this.#entries) {
      if (isSettled(entry) && entry.updatedAt.getTime() < cutoff) {
        this.#entries.delete(key);
        continue;
      }
      const at = entry.updatedAt.toISOString();
      const base = { at, job: entry.jobId, attempt: entry.attempt };
      const state: JournalLine = { ...base, event: entry.state, printer: entry.printer };
      if (entry.detail) state.detail = entry.detail;
      if (entry.ref !== undefined) state.ref = entry.ref;
      if (entry.claim) state.claim = true;
      if (entry.confirmation) state.confirmation = entry.confirmation;
      lines.push(state);
      if (entry.receivedAccepted) lines.push({ ...base, event: 'accepted_received' });
      if (entry.resultAccepted) lines.push({ ...base, event: 'accepted_result' });
    }
    return lines;
  }
}

/**
 * A journaled confirmation, if it is one. A printed line from before confirmations were journaled
 * has none: its job was printed by a backend that hands jobs off.
 */
function confirmationOf(value: JournalLine['confirmation']): Confirmation | undefined {
  if (value?.level !== 'handed_off' && value?.level !== 'device_completed') return undefined;
  return typeof value.pages === 'number'
    ? { level: value.level, pages: value.pages }
    : { level: value.level };
}
