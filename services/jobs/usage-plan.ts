/**
 * What a window of the usage rollup adds to the figures of each organization and day, as pure
 * functions of the jobs it read (usage-rollup.ts reads and writes; this decides). The figures are
 * those of the jobs as they are now: a job counts as created on the day it was created, and as
 * printed or failed on the day it finished. A failed job that is retried is no longer failed, so
 * it is taken off the day it was counted failed on (the job keeps that day in `usage_failed_on`),
 * and counted again where it finishes next.
 */

/** The figures of one organization on one day, or changes to them. */
export interface UsageFigures {
  jobsCreated: number;
  jobsPrinted: number;
  jobsFailed: number;
  pages: number;
  bytes: number;
}

/** A change to the figures of `orgId` on `day`. */
export interface UsageChange extends UsageFigures {
  orgId: string;
  day: string;
}

/** A job that finished in the window, as the rollup reads it. */
export interface FinishedJob {
  id: string;
  orgId: string;
  status: string;
  /** Pages of its document when it is a PDF the rollup counted; null otherwise. */
  pages: number | null;
  isPdf: boolean;
  copies: number;
  /** The day the rollup counted it failed on, if it did. */
  failedOn: string | null;
}

/** The jobs an organization created in the window. */
export interface CreatedCount {
  orgId: string;
  jobs: number;
  bytes: number;
}

/** A job whose `usage_failed_on` changes (null: it is counted failed nowhere now). */
export interface FailedMark {
  id: string;
  orgId: string;
  failedOn: string | null;
}

export interface UsagePlan {
  changes: UsageChange[];
  marks: FailedMark[];
}

const ZERO: UsageFigures = { jobsCreated: 0, jobsPrinted: 0, jobsFailed: 0, pages: 0, bytes: 0 };

class Changes {
  readonly #byKey = new Map<string, UsageChange>();

  add(orgId: string, day: string, figures: Partial<UsageFigures>): void {
    const key = `${orgId}/${day}`;
    const change = this.#byKey.get(key) ?? { orgId, day, ...ZERO };
    for (const [name, n] of Object.entries(figures) as Array<[keyof UsageFigures, number]>) {
      change[name] += n;
    }
    this.#byKey.set(key, change);
  }

  list(): UsageChange[] {
    return [...this.#byKey.values()].filter(
      (c) => c.jobsCreated || c.jobsPrinted || c.jobsFailed || c.pages || c.bytes,
    );
  }
}

/** Pages a printed job adds: its PDF's pages times its copies; other documents add none. */
export function pagesPrinted(job: Pick<FinishedJob, 'id' | 'pages' | 'isPdf' | 'copies'>): number {
  if (!job.isPdf) return 0;
  if (job.pages === null) {
    // The rollup counts a window's pages before the window; a gap here is a fault, not a zero.
    throw new Error(`the pages of printed job ${job.id} were not counted before its window`);
  }
  return job.pages * Math.max(1, job.copies);
}

/**
 * The changes a window within `day` makes: the jobs created in it, and those that finished in it
 * (printed, failed, or anything else they became, such as cancelled after a retry).
 */
export function planWindow(
  day: string,
  created: readonly CreatedCount[],
  finished: readonly FinishedJob[],
): UsagePlan {
  const changes = new Changes();
  const marks: FailedMark[] = [];
  for (const c of created) changes.add(c.orgId, day, { jobsCreated: c.jobs, bytes: c.bytes });
  for (const job of finished) {
    const failedOn = job.status === 'failed' ? day : null;
    // Counted failed here already: it failed, was retried and failed again on the same day.
    if (failedOn !== null && job.failedOn === failedOn) continue;
    if (job.failedOn !== null) changes.add(job.orgId, job.failedOn, { jobsFailed: -1 });
    if (job.status === 'printed') {
      changes.add(job.orgId, day, { jobsPrinted: 1, pages: pagesPrinted(job) });
    } else if (failedOn !== null) {
      changes.add(job.orgId, day, { jobsFailed: 1 });
    }
    if (job.failedOn !== failedOn) marks.push({ id: job.id, orgId: job.orgId, failedOn });
  }
  return { changes: changes.list(), marks };
}

/** The changes for jobs counted failed that were retried and have not finished again. */
export function planRetried(
  jobs: ReadonlyArray<{ id: string; orgId: string; failedOn: string }>,
): UsagePlan {
  const changes = new Changes();
  for (const job of jobs) changes.add(job.orgId, job.failedOn, { jobsFailed: -1 });
  return {
    changes: changes.list(),
    marks: jobs.map((j) => ({ id: j.id, orgId: j.orgId, failedOn: null })),
  };
}
