/**
 * Small statistics for the harness: percentiles of recorded samples (nearest rank, so the p99.9
 * of fewer than 1,000 samples is their maximum), and the median with its min–max spread over
 * repeated runs.
 */

/** The `p`-th percentile (0–100) of sorted samples by nearest rank; NaN when there are none. */
export function percentileOfSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export interface Latency {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/** Summarises latency samples in milliseconds. */
export function latency(samples: readonly number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length,
    p50: percentileOfSorted(sorted, 50),
    p90: percentileOfSorted(sorted, 90),
    p99: percentileOfSorted(sorted, 99),
    p999: percentileOfSorted(sorted, 99.9),
    max: sorted.length ? (sorted[sorted.length - 1] as number) : Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
  };
}

/** A figure over repeated runs: each run's value, their median and the spread. */
export interface Spread {
  runs: number[];
  median: number;
  min: number;
  max: number;
}

export function spread(runs: readonly number[]): Spread {
  const finite = runs.filter((v) => Number.isFinite(v));
  return {
    runs: [...runs],
    median: finiteMedian(runs),
    min: finite.length ? Math.min(...finite) : Number.NaN,
    max: finite.length ? Math.max(...finite) : Number.NaN,
  };
}

/** The median (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The median of the runs that measured something (NaN marks one that did not). */
export function finiteMedian(values: readonly number[]): number {
  return median(values.filter((v) => Number.isFinite(v)));
}

/** Per-run ratios `a[i] / b[i]` of two figures measured in the same repeats. */
export function ratios(a: readonly number[], b: readonly number[]): number[] {
  return a.map((value, i) => value / (b[i] ?? Number.NaN));
}
