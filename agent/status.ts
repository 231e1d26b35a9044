/**
 * The status file a running agent keeps in its state directory (`status.json`), which
 * `spool agent status` reads: whether the link is up and since when, the printers, their states
 * and the jobs each has waiting, the jobs printed today and the last error. It is replaced
 * atomically (written to a temporary file, then renamed), so a reader sees the old or the new
 * file, never half of one. It holds no secret.
 */
import { open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { PrinterReport } from '../gen/spool/v1/stations.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Journal } from './journal.js';

export const STATUS_FILE = 'status.json';

/** How often the file is rewritten even when nothing changed, so a reader can tell it is fresh. */
export const STATUS_HEARTBEAT_MS = 5_000;

export interface AgentStatus {
  pid: number;
  agent_version: string;
  started_at: string;
  /** When the file was last written; a running agent rewrites it every {@link STATUS_HEARTBEAT_MS}. */
  updated_at: string;
  /** Set when the agent stopped; absent while it runs. */
  stopped_at?: string;
  /** The server addresses, as configured. */
  server: string;
  link: {
    connected: boolean;
    /** Since when the link has been up (connected) or down (not connected). */
    since: string;
    /** The server that welcomed the agent, while connected. */
    server?: string;
    station_id?: string;
    /** The station's name; absent when the server did not say it. */
    station_name?: string;
    /** Set while connected to a server outside the station's home region (it still prints). */
    wrong_region?: { home: string; server: string };
  };
  /**
   * `jobs_waiting`: the jobs the agent holds for the printer and has not finished (received, or
   * printing), such as those waiting for it to come back on.
   */
  printers: Array<{ name: string; status: string; detail: string; jobs_waiting: number }>;
  /** Jobs that finished today (the station's local date), from the journal. */
  jobs_today: { date: string; printed: number; failed: number };
  last_error: { at: string; message: string } | null;
  /** Where the packaged agent's last update stands (docs/agent.md, "Updates"); absent otherwise. */
  update?: { state: string; version: string; detail: string };
}

/** The station's local date, `YYYY-MM-DD`. */
export function localDate(at: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`;
}

/** Reads the status file in `stateDir`; undefined when there is none. */
export async function readStatus(stateDir: string): Promise<AgentStatus | undefined> {
  let text: string;
  try {
    text = await readFile(join(stateDir, STATUS_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return JSON.parse(text) as AgentStatus;
}

export interface StatusFileOptions {
  stateDir: string;
  clock: Clock;
  logger: Logger;
  agentVersion: string;
  server: string;
  journal: Journal;
}

/**
 * Keeps `status.json` up to date: every change is written (one write at a time; changes made
 * while one is under way go out in the next), and a heartbeat rewrites it every few seconds.
 */
export class StatusFile {
  readonly #options: StatusFileOptions;
  readonly #path: string;
  readonly #status: AgentStatus;
  #writing: Promise<void> | undefined;
  #dirty = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: StatusFileOptions) {
    this.#options = options;
    this.#path = join(options.stateDir, STATUS_FILE);
    const now = options.clock.now().toISOString();
    this.#status = {
      pid: process.pid,
      agent_version: options.agentVersion,
      started_at: now,
      updated_at: now,
      server: options.server,
      link: { connected: false, since: now },
      printers: [],
      jobs_today: { date: localDate(options.clock.now()), printed: 0, failed: 0 },
      last_error: null,
    };
  }

  /** Writes the first status and starts the heartbeat. */
  async start(): Promise<void> {
    // A status being written when an agent was killed is left as status.json.PID.tmp.
    const dir = dirname(this.#path);
    const leftover = new RegExp(`^${basename(this.#path).replace('.', '\\.')}\\.\\d+\\.tmp$`);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (leftover.test(name)) await rm(join(dir, name), { force: true });
    }
    await this.flush();
    const beat = () => {
      this.#timer = setTimeout(() => {
        this.#schedule();
        beat();
      }, STATUS_HEARTBEAT_MS);
      this.#timer.unref();
    };
    beat();
  }

  linkUp(
    server: string,
    station: { id: string; name?: string },
    regions?: { home: string; server: string },
  ): void {
    const since = this.#options.clock.now().toISOString();
    this.#status.link = {
      connected: true,
      since,
      server,
      station_id: station.id,
      ...(station.name ? { station_name: station.name } : {}),
      ...(regions && regions.home !== regions.server ? { wrong_region: regions } : {}),
    };
    this.#schedule();
  }

  linkDown(): void {
    if (!this.#status.link.connected) return;
    this.#status.link = { connected: false, since: this.#options.clock.now().toISOString() };
    this.#schedule();
  }

  printers(reports: PrinterReport[]): void {
    this.#status.printers = reports.map((r) => ({
      name: r.name,
      status: r.status,
      detail: r.detail,
      jobs_waiting: 0,
    }));
    this.#schedule();
  }

  error(message: string): void {
    this.#status.last_error = { at: this.#options.clock.now().toISOString(), message };
    this.#schedule();
  }

  update(update: { state: string; version: string; detail: string }): void {
    this.#status.update = { state: update.state, version: update.version, detail: update.detail };
    this.#schedule();
  }

  /** The journal recorded a job's new state: recount the jobs waiting and today's. */
  changed(): void {
    this.#schedule();
  }

  /** Writes the final status, marked stopped, and ends the heartbeat. */
  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    const now = this.#options.clock.now().toISOString();
    if (this.#status.link.connected) this.#status.link = { connected: false, since: now };
    this.#status.stopped_at = now;
    await this.flush();
  }

  /** Resolves once everything changed so far is on disk. */
  async flush(): Promise<void> {
    this.#dirty = true;
    while (this.#dirty || this.#writing) {
      if (this.#writing) await this.#writing;
      else this.#schedule();
    }
  }

  #schedule(): void {
    this.#dirty = true;
    if (this.#writing) return;
    this.#writing = (async () => {
      while (this.#dirty) {
        this.#dirty = false;
        try {
          await this.#write();
        } catch (err) {
          this.#options.logger.warn({ err }, 'cannot write the status file');
        }
      }
    })().finally(() => {
      this.#writing = undefined;
    });
  }

  async #write(): Promise<void> {
    const now = this.#options.clock.now();
    const today = localDate(now);
    let printed = 0;
    let failed = 0;
    const waiting = new Map<string, number>();
    for (const entry of this.#options.journal.entries()) {
      if (entry.state === 'received' || entry.state === 'printing') {
        waiting.set(entry.printer, (waiting.get(entry.printer) ?? 0) + 1);
      }
      if (localDate(entry.updatedAt) !== today) continue;
      if (entry.state === 'printed') printed += 1;
      else if (entry.state === 'failed') failed += 1;
    }
    this.#status.jobs_today = { date: today, printed, failed };
    for (const p of this.#status.printers) p.jobs_waiting = waiting.get(p.name) ?? 0;
    this.#status.updated_at = now.toISOString();
    const temp = `${this.#path}.${process.pid}.tmp`;
    const handle = await open(temp, 'w', 0o644);
    try {
      await handle.writeFile(`${JSON.stringify(this.#status, null, 2)}\n`);
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, this.#path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }
}
