/**
 * Rolling up what a service records into figures per organization and UTC day, off the hot path:
 * a background task reads the rows a time window holds (jobs created or finished in it, webhook
 * deliveries made in it) and adds them to the day's figures, then moves its mark past the window,
 * in one transaction. Nothing is added to the work of creating or changing a row.
 *
 * Every replica runs one. A lease in the mark's row keeps all but one idle at a time, and the mark
 * is compared and moved in the transaction that adds a window's figures, so a window is counted
 * once even when two replicas reach it (a lease that ran out under a slow round, clocks apart).
 * A window ends a settling time before now, so that the rows of transactions still committing
 * with times inside it have landed before it is read; it never crosses 00:00 UTC, so its figures
 * belong to one day. Time comes from the injected clock: tests move it and call
 * {@link WindowedRollup.runOnce}.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Clock } from './clock.js';
import { utcDate } from './contracts/usage.js';
import { withTx } from './db.js';
import { FailureLog } from './failure-log.js';
import type { Logger } from './logger.js';

/** A span of time rolled up at once: [from, to), inside the UTC day `day`. */
export interface RollupWindow {
  from: Date;
  to: Date;
  day: string;
}

export interface WindowLimits {
  /** How long before now a window ends, for transactions still committing. */
  settleMs: number;
  /** The longest window, which bounds one transaction's work. */
  maxWindowMs: number;
}

/**
 * The window after `through`: up to `maxWindowMs` long, ending at the next 00:00 UTC at the latest
 * and at `now - settleMs` at the latest. Undefined when no time is ready to roll up.
 */
export function nextWindow(
  through: Date,
  now: Date,
  limits: WindowLimits,
): RollupWindow | undefined {
  const from = through.getTime();
  const day = utcDate(through);
  const midnight = Date.parse(`${day}T00:00:00Z`) + 24 * 60 * 60 * 1000;
  const to = Math.min(from + limits.maxWindowMs, midnight, now.getTime() - limits.settleMs);
  if (to <= from) return undefined;
  return { from: through, to: new Date(to), day };
}

/**
 * A rollup's mark (the time it has rolled up to) and lease, kept in a row of a table of the
 * service's own: `(name TEXT PRIMARY KEY, through TIMESTAMPTZ, lease_holder UUID,
 * lease_until TIMESTAMPTZ)`.
 */
export interface RollupMarks {
  /**
   * Takes the lease until `until` when it is free, ran out, or is `holder`'s already; answers
   * the mark (null before the first window), or undefined when another replica holds the lease.
   */
  takeLease(holder: string, now: Date, until: Date): Promise<{ through: Date | null } | undefined>;
  /** Gives the lease back, if `holder` still has it. */
  releaseLease(holder: string, now: Date): Promise<void>;
  /**
   * In `tx`: locks the mark and answers whether it is still `expected`; the caller then counts
   * and calls {@link RollupMarks.move}.
   */
  lockAt(tx: pg.PoolClient, expected: Date | null): Promise<boolean>;
  move(tx: pg.PoolClient, to: Date): Promise<void>;
}

/** The marks of rollup `name` in `table` (a fixed name from the service's code, never input). */
export function rollupMarks(pool: pg.Pool, table: string, name: string): RollupMarks {
  return {
    async takeLease(holder, now, until) {
      const { rows } = await pool.query<{ through: Date | null }>(
        `INSERT INTO ${table} (name, through, lease_holder, lease_until) VALUES ($1, NULL, $2, $4)
         ON CONFLICT (name) DO UPDATE SET lease_holder = $2, lease_until = $4
         WHERE ${table}.lease_until IS NULL OR ${table}.lease_until <= $3
           OR ${table}.lease_holder = $2
         RETURNING through`,
        [name, holder, now, until],
      );
      const row = rows[0];
      return row ? { through: row.through } : undefined;
    },

    async releaseLease(holder, now) {
      await pool.query(
        `UPDATE ${table} SET lease_until = $3 WHERE name = $1 AND lease_holder = $2`,
        [name, holder, now],
      );
    },

    async lockAt(tx, expected) {
      const { rows } = await tx.query<{ through: Date | null }>(
        `SELECT through FROM ${table} WHERE name = $1 FOR UPDATE`,
        [name],
      );
      const through = rows[0]?.through ?? null;
      return (through?.getTime() ?? null) === (expected?.getTime() ?? null);
    },

    async move(tx, to) {
      await tx.query(`UPDATE ${table} SET through = $2 WHERE name = $1`, [name, to]);
    },
  };
}

/** What one rollup does besides moving its mark. */
export interface RollupWork {
  /** The earliest time anything is recorded, where the first round starts; undefined: nothing. */
  firstActivity(): Promise<Date | undefined>;
  /** The earliest time at or after `at` anything is recorded; undefined when nothing is. */
  nextActivity(at: Date): Promise<Date | undefined>;
  /** Each round, before its windows: corrections that depend on rows' state, not on time. */
  beforeWindows?(): Promise<void>;
  /** Before a window's transaction, outside it: slow work whose results the window reads. */
  prepare?(window: RollupWindow): Promise<void>;
  /** Adds the window's figures, in the transaction that moves the mark past it. */
  apply(tx: pg.PoolClient, window: RollupWindow): Promise<void>;
}

export interface WindowedRollupDeps {
  /** Names the rollup in logs: "the jobs usage rollup". */
  what: string;
  pool: pg.Pool;
  marks: RollupMarks;
  work: RollupWork;
  clock: Clock;
  logger: Logger;
  /** How long before now windows end (default a minute). */
  settleMs?: number;
  /** The longest window (default an hour). */
  maxWindowMs?: number;
  /** The most windows one round counts (default 48); the next round goes on. */
  maxWindows?: number;
  /** How long a round's lease lasts; it is renewed at each window (default 5 minutes). */
  leaseMs?: number;
  /** How often a round starts (default a minute). */
  intervalMs?: number;
}

export interface RollupRound {
  /** Another replica held the lease: this round did nothing. */
  skipped: boolean;
  /** Windows counted. */
  windows: number;
  /** The mark after the round; null when nothing was ever recorded. */
  through: Date | null;
}

export const ROLLUP_DEFAULTS = {
  settleMs: 60_000,
  maxWindowMs: 60 * 60 * 1000,
  maxWindows: 48,
  leaseMs: 5 * 60_000,
  intervalMs: 60_000,
} as const;

export class WindowedRollup {
  readonly #deps: WindowedRollupDeps;
  readonly #holder = randomUUID();
  readonly #limits: WindowLimits;
  #timer: NodeJS.Timeout | undefined;
  #tail: Promise<unknown> = Promise.resolve();
  #busy = false;

  constructor(deps: WindowedRollupDeps) {
    this.#deps = deps;
    this.#limits = {
      settleMs: deps.settleMs ?? ROLLUP_DEFAULTS.settleMs,
      maxWindowMs: deps.maxWindowMs ?? ROLLUP_DEFAULTS.maxWindowMs,
    };
  }

  start(): void {
    const failures = new FailureLog(this.#deps.logger, this.#deps.what);
    this.#timer = setInterval(() => {
      // A round still running when the next is due is not queued behind: the next tick will do.
      if (this.#busy) return;
      this.runOnce().then(
        () => failures.succeeded(),
        (err: unknown) => failures.failed(err),
      );
    }, this.#deps.intervalMs ?? ROLLUP_DEFAULTS.intervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#tail;
  }

  /** A round, after the one running (if any): what it counts includes all recorded before. */
  runOnce(): Promise<RollupRound> {
    const round = this.#tail.then(() => this.#round());
    this.#tail = round.catch(() => undefined);
    return round;
  }

  async #round(): Promise<RollupRound> {
    this.#busy = true;
    try {
      return await this.#leased();
    } finally {
      this.#busy = false;
    }
  }

  async #leased(): Promise<RollupRound> {
    const { marks, clock } = this.#deps;
    const leaseMs = this.#deps.leaseMs ?? ROLLUP_DEFAULTS.leaseMs;
    const lease = () => {
      const now = clock.now();
      return marks.takeLease(this.#holder, now, new Date(now.getTime() + leaseMs));
    };
    const held = await lease();
    if (!held) return { skipped: true, windows: 0, through: null };
    try {
      return await this.#windows(held.through, lease);
    } finally {
      await marks.releaseLease(this.#holder, clock.now());
    }
  }

  async #windows(
    start: Date | null,
    lease: () => Promise<{ through: Date | null } | undefined>,
  ): Promise<RollupRound> {
    const { work, clock } = this.#deps;
    await work.beforeWindows?.();
    let through = start;
    if (!through) {
      const first = await work.firstActivity();
      if (!first) return { skipped: false, windows: 0, through: null };
      if (!(await this.#move(null, first))) return { skipped: true, windows: 0, through: null };
      through = first;
    }
    let windows = 0;
    const maxWindows = this.#deps.maxWindows ?? ROLLUP_DEFAULTS.maxWindows;
    while (windows < maxWindows) {
      let window = nextWindow(through, clock.now(), this.#limits);
      if (!window) break;
      // Behind (a full window is ready): skip a span in which nothing was recorded at once.
      if (window.to.getTime() - window.from.getTime() >= this.#limits.maxWindowMs) {
        const next = await work.nextActivity(window.from);
        const ready = clock.now().getTime() - this.#limits.settleMs;
        const skipTo = Math.min(next?.getTime() ?? ready, ready);
        if (skipTo > window.from.getTime()) {
          const to = new Date(skipTo);
          if (!(await this.#move(through, to))) break;
          through = to;
          window = nextWindow(through, clock.now(), this.#limits);
          if (!window) break;
        }
      }
      await work.prepare?.(window);
      if (!(await this.#count(through, window))) break;
      through = window.to;
      windows++;
      if (!(await lease())) break;
    }
    return { skipped: false, windows, through };
  }

  /** Counts `window` and moves the mark past it, unless the mark is no longer at `expected`. */
  #count(expected: Date, window: RollupWindow): Promise<boolean> {
    return withTx(this.#deps.pool, async (tx) => {
      if (!(await this.#deps.marks.lockAt(tx, expected))) return false;
      await this.#deps.work.apply(tx, window);
      await this.#deps.marks.move(tx, window.to);
      return true;
    });
  }

  #move(expected: Date | null, to: Date): Promise<boolean> {
    return withTx(this.#deps.pool, async (tx) => {
      if (!(await this.#deps.marks.lockAt(tx, expected))) return false;
      await this.#deps.marks.move(tx, to);
      return true;
    });
  }
}
