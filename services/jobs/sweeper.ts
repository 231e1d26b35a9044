/**
 * The jobs service's timekeeper: queues scheduled jobs when their time comes, fails jobs that
 * waited undelivered past their `expire_after`, and deletes documents past retention (the job
 * record stays). Every replica runs one; `FOR UPDATE SKIP LOCKED` and the state machine make each
 * job move once however many run. Time comes from the injected clock, so tests move the clock and
 * call {@link Sweeper.runOnce} instead of waiting.
 */
import type { ObjectStore } from '@nats-io/obj';
import type { Settings } from '../../gen/spool/v1/accounts.js';
import type { Clock } from '../../lib/clock.js';
import { FailureLog } from '../../lib/failure-log.js';
import type { Logger } from '../../lib/logger.js';
import { documentName, uploadName } from './job-rows.js';
import type { RetentionStore } from './retention-store.js';
import type { JobTransitions } from './transitions.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const BATCH = 500;

export interface SweepResult {
  queued: number;
  expired: number;
  documentsDeleted: number;
  uploadsDeleted: number;
}

export interface SweeperDeps {
  /** The sweeps of due jobs, and the records of documents past retention. */
  store: Pick<JobTransitions, 'queueDue' | 'expireDue'> & RetentionStore;
  documents: ObjectStore;
  /** The retention settings; read at most once a minute. */
  settings: () => Promise<Settings>;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
  /** How long settings are trusted before they are read again (default a minute). */
  settingsTtlMs?: number;
}

export class Sweeper {
  readonly #deps: SweeperDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<SweepResult> | undefined;
  #settings: { value: Settings; at: number } | undefined;

  constructor(deps: SweeperDeps) {
    this.#deps = deps;
  }

  start(): void {
    // Once a second: a database that is away would otherwise make a line a second.
    const sweeps = new FailureLog(this.#deps.logger, 'the jobs sweep');
    this.#timer = setInterval(() => {
      this.runOnce().then(
        () => sweeps.succeeded(),
        (err: unknown) => sweeps.failed(err),
      );
    }, this.#deps.intervalMs ?? 1_000);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => undefined);
  }

  /** One round of every duty; rounds never overlap. */
  runOnce(): Promise<SweepResult> {
    this.#running ??= this.#round().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #round(): Promise<SweepResult> {
    const { store } = this.#deps;
    let queued = 0;
    let expired = 0;
    for (let n = BATCH; n === BATCH; ) {
      n = (await store.queueDue(BATCH)).length;
      queued += n;
    }
    for (let n = BATCH; n === BATCH; ) {
      n = (await store.expireDue(BATCH)).length;
      expired += n;
    }
    const { documentsDeleted, uploadsDeleted } = await this.#retention();
    return { queued, expired, documentsDeleted, uploadsDeleted };
  }

  async #retention(): Promise<{ documentsDeleted: number; uploadsDeleted: number }> {
    const { store, documents, clock } = this.#deps;
    const settings = await this.#currentSettings();
    const now = clock.now().getTime();
    let documentsDeleted = 0;
    for (;;) {
      const jobs = await store.documentsToDelete(
        new Date(now - settings.jobDocumentRetentionDays * DAY_MS),
        BATCH,
      );
      // The object goes first: a crash between the two deletes it again, harmlessly. A document
      // kept with its job goes with the mark.
      for (const job of jobs) if (!job.inline) await documents.delete(documentName(job.id));
      await store.markDocumentsDeleted(jobs.map((job) => job.id));
      documentsDeleted += jobs.length;
      if (jobs.length < BATCH) break;
    }
    let uploadsDeleted = 0;
    for (;;) {
      const ids = await store.uploadsToDelete(
        new Date(now - settings.uploadRetentionDays * DAY_MS),
        BATCH,
      );
      for (const id of ids) await documents.delete(uploadName(id));
      await store.markUploadsDeleted(ids);
      uploadsDeleted += ids.length;
      if (ids.length < BATCH) break;
    }
    return { documentsDeleted, uploadsDeleted };
  }

  async #currentSettings(): Promise<Settings> {
    const now = Date.now();
    if (!this.#settings || now - this.#settings.at >= (this.#deps.settingsTtlMs ?? 60_000)) {
      this.#settings = { value: await this.#deps.settings(), at: now };
    }
    return this.#settings.value;
  }
}
