/**
 * Time as a dependency. Services take a Clock so that expiry, schedules, retention and retries are
 * tested by moving a clock rather than by sleeping.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until told to move; for tests. */
export class ManualClock implements Clock {
  #ms: number;

  constructor(start: Date | string = '2026-01-01T00:00:00Z') {
    this.#ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#ms);
  }

  advance(ms: number): void {
    this.#ms += ms;
  }

  set(at: Date | string): void {
    this.#ms = new Date(at).getTime();
  }
}

/** Timers as a dependency, so that tests fire them rather than wait for them. */
export interface Timers {
  set(fire: () => void, ms: number): unknown;
  clear(timer: unknown): void;
}

export const REAL_TIMERS: Timers = {
  set: (fire, ms) => setTimeout(fire, ms),
  clear: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};
