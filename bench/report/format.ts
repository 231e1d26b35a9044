/** How figures are written in the table and the chart. */

export function num(value: number, unit = ''): string {
  if (!Number.isFinite(value)) return '—';
  const abs = Math.abs(value);
  const digits = unit === 'ratio' ? 2 : abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/** `median (min–max)`. */
export function withSpread(s: { median: number; min: number; max: number }, unit = ''): string {
  if (!Number.isFinite(s.median)) return '—';
  if (s.min === s.max) return num(s.median, unit);
  return `${num(s.median, unit)} (${num(s.min, unit)}–${num(s.max, unit)})`;
}
