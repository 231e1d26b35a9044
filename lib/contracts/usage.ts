/**
 * Usage per organization and UTC day (DESIGN §5, "Platforms"): the bounds of a request, which the
 * gateway checks and the services check again, and the arithmetic of UTC dates (`YYYY-MM-DD`)
 * they share. Plain data and functions with no imports, so the console reads them too.
 */

/** The longest range one request covers, in days, both ends included. */
export const MAX_USAGE_DAYS = 366;
/** The range a request covers when it names neither end: the last 30 days, today included. */
export const DEFAULT_USAGE_DAYS = 30;
/** Items one answer holds at most (days × organizations, every day answered). */
export const MAX_USAGE_ITEMS = 50_000;
/** Organizations one call to a service names at most; the gateway asks in groups of as many. */
export const MAX_USAGE_ORGS = 500;

const DAY_MS = 24 * 60 * 60 * 1000;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The UTC date of `at`: `2026-11-27`. */
export function utcDate(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Whether `text` is a date `YYYY-MM-DD` that exists (no 2026-02-30). */
export function isUsageDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return !Number.isNaN(at.getTime()) && utcDate(at) === text;
}

/** 00:00 UTC of `date`. */
export function dayStart(date: string): Date {
  return new Date(`${date}T00:00:00Z`);
}

/** The date `days` after `date` (before it, when negative). */
export function addDays(date: string, days: number): string {
  return utcDate(new Date(dayStart(date).getTime() + days * DAY_MS));
}

/** Days from `from` to `to`, both included; 0 when `to` is before `from`. */
export function daysIn(from: string, to: string): number {
  return Math.max(0, Math.round((dayStart(to).getTime() - dayStart(from).getTime()) / DAY_MS) + 1);
}

/** Every date from `from` to `to`, in order. */
export function datesIn(from: string, to: string): string[] {
  const out: string[] = [];
  for (let i = 0, n = daysIn(from, to); i < n; i++) out.push(addDays(from, i));
  return out;
}

/** What is wrong with a service's usage request, naming its field; undefined when nothing is. */
export function usageRequestProblem(req: {
  orgIds: readonly string[];
  from: string;
  to: string;
}): { message: string; param: string } | undefined {
  if (req.orgIds.length === 0 || req.orgIds.length > MAX_USAGE_ORGS) {
    return { message: `org_ids must name 1 to ${MAX_USAGE_ORGS} organizations`, param: 'org_ids' };
  }
  for (const name of ['from', 'to'] as const) {
    if (!isUsageDate(req[name])) {
      return { message: `${name} must be a date YYYY-MM-DD`, param: name };
    }
  }
  if (req.from > req.to) return { message: 'from must not be after to', param: 'from' };
  if (daysIn(req.from, req.to) > MAX_USAGE_DAYS) {
    return { message: `from and to may span at most ${MAX_USAGE_DAYS} days`, param: 'from' };
  }
  return undefined;
}

/** The figures of a day, as the API answers them. */
export interface UsageFigures {
  jobs_created: number;
  jobs_printed: number;
  jobs_failed: number;
  pages: number;
  bytes: number;
  webhook_deliveries: number;
}

/** A day on which nothing happened. */
export const ZERO_USAGE: Readonly<UsageFigures> = Object.freeze({
  jobs_created: 0,
  jobs_printed: 0,
  jobs_failed: 0,
  pages: 0,
  bytes: 0,
  webhook_deliveries: 0,
});
