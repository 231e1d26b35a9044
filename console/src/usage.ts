/**
 * Usage per organization and UTC day (`GET /v1/orgs/{org}/usage`, DESIGN §5 "Platforms"), as the
 * Overview's chart and the Organizations page read it. Both ask for the API's default range, the
 * last 30 days with today (UTC, by Spool's clock) last, so that the days are the server's and the
 * browser's clock plays no part. The figures are rolled up about once a minute.
 */
import { useEffect } from 'preact/hooks';
import { DEFAULT_USAGE_DAYS, ZERO_USAGE } from '../../lib/contracts/usage.js';
import { enc, get } from './api.js';
import { useResource } from './resource.js';
import type { Usage, UsageDay } from './types.js';

/** Days the console shows: the API's default range. */
export const USAGE_DAYS = DEFAULT_USAGE_DAYS;

/** How often a page showing usage reads it again: the rollup's own pace. */
const REREAD_MS = 60_000;

/** The figures an organization's usage adds up, over the days asked for. */
export type UsageTotals = Omit<UsageDay, 'date' | 'org_id'>;

const ZERO: UsageTotals = ZERO_USAGE;

/**
 * The last {@link USAGE_DAYS} days of the organization's usage (its children's too with
 * `children`), read again every minute while the page is open.
 */
export function useUsage(orgId: string, children: boolean) {
  const r = useResource(
    () => get<Usage>(`/v1/orgs/${enc(orgId)}/usage?children=${children}`),
    [orgId, children],
  );
  useEffect(() => {
    const timer = window.setInterval(() => void r.reload(), REREAD_MS);
    return () => window.clearInterval(timer);
  }, [orgId, children]);
  return r;
}

/** `orgId`'s days, oldest first. */
export function daysOf(items: readonly UsageDay[], orgId: string): UsageDay[] {
  return items.filter((d) => d.org_id === orgId).sort((a, b) => a.date.localeCompare(b.date));
}

/** Each organization's figures added up over the days of `items`. */
export function totalsByOrg(items: readonly UsageDay[]): Map<string, UsageTotals> {
  const totals = new Map<string, UsageTotals>();
  for (const { date: _date, org_id, ...figures } of items) {
    const sum = totals.get(org_id) ?? { ...ZERO };
    for (const k of Object.keys(ZERO) as (keyof UsageTotals)[]) sum[k] += figures[k];
    totals.set(org_id, sum);
  }
  return totals;
}

/** `orgId`'s figures added up (zeros when `items` has none of it). */
export function totalsOf(items: readonly UsageDay[], orgId: string): UsageTotals {
  return totalsByOrg(items.filter((d) => d.org_id === orgId)).get(orgId) ?? { ...ZERO };
}

const count = new Intl.NumberFormat();
/** A count as the person's locale writes it. */
export function formatCount(n: number): string {
  return count.format(n);
}

/** Bytes in the unit that reads best: `812 B`, `4.2 MB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${new Intl.NumberFormat(undefined, { maximumFractionDigits: digits }).format(value)} ${units[unit]}`;
}

const day = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
const longDay = new Intl.DateTimeFormat(undefined, {
  weekday: 'short',
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  timeZone: 'UTC',
});

/** A UTC day `YYYY-MM-DD` as a short label: `27 Nov`. */
export function dayLabel(date: string): string {
  return day.format(new Date(`${date}T00:00:00Z`));
}

/** A UTC day `YYYY-MM-DD` in full: `Fri, 27 Nov 2026`. */
export function dayName(date: string): string {
  return longDay.format(new Date(`${date}T00:00:00Z`));
}
