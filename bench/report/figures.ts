/**
 * A figure of the table: a scenario's value over repeated runs, beside the ceiling, peer or other
 * scenario it is judged against (the ratio is taken run by run, each run paired with the reference
 * measured just before it, or, for another scenario's figure, set against that figure's median),
 * and the target it meets or not.
 */
import { ratios, type Spread, spread } from '../stats.js';

export interface Reference {
  label: string;
  unit: string;
  value: Spread;
}

export interface Target {
  /** How the target reads, e.g. `≥ 0.6 × ceiling` or `≤ 25 ms`. */
  text: string;
  met: boolean;
  /** Runs that met it on their own, out of all. */
  runsMet: number;
  runs: number;
}

export interface Figure {
  scenario: string;
  label: string;
  unit: string;
  value: Spread;
  reference?: Reference;
  /** value / reference, run by run. */
  ratio?: Spread;
  target?: Target;
  /** Anything that qualifies the figure (runs that failed, a check that did not pass). */
  note?: string;
}

export function figure(
  scenario: string,
  label: string,
  unit: string,
  values: number[],
  reference?: { label: string; unit: string; values: number[] },
): Figure {
  const f: Figure = { scenario, label, unit, value: spread(values) };
  if (reference) {
    f.reference = { label: reference.label, unit: reference.unit, value: spread(reference.values) };
    f.ratio = spread(ratios(values, reference.values));
  }
  return f;
}

/**
 * As {@link figure}, but each run is set against the reference's median rather than against the
 * reference's run of the same number: for a reference measured in other runs than the figure
 * (another scenario's), where pairing a run with the reference's run of the same number would
 * pair them by chance. The median ratio is then the figure's median over the reference's.
 */
export function figureAgainstMedian(
  scenario: string,
  label: string,
  unit: string,
  values: number[],
  reference: { label: string; unit: string; values: number[] },
): Figure {
  const f = figure(scenario, label, unit, values);
  const ref = spread(reference.values);
  f.reference = { label: reference.label, unit: reference.unit, value: ref };
  f.ratio = spread(values.map((v) => v / ref.median));
  return f;
}

/** Adds `text` to what qualifies the figure. */
export function addNote(f: Figure, text: string): Figure {
  f.note = [f.note, text].filter(Boolean).join('; ');
  return f;
}

/** A target on the ratio: met when the median ratio is at least `min`. */
export function ratioAtLeast(f: Figure, min: number): Figure {
  const runs = f.ratio?.runs ?? [];
  f.target = {
    text: `≥ ${min} × ${f.reference?.label ?? 'reference'}`,
    met: (f.ratio?.median ?? Number.NaN) >= min,
    runsMet: runs.filter((r) => r >= min).length,
    runs: runs.length,
  };
  return f;
}

/** A target on the ratio: met when the median ratio is at most `max`. */
export function ratioAtMost(f: Figure, max: number): Figure {
  const runs = f.ratio?.runs ?? [];
  f.target = {
    text: `≤ ${max} × ${f.reference?.label ?? 'reference'}`,
    met: (f.ratio?.median ?? Number.NaN) <= max,
    runsMet: runs.filter((r) => r <= max).length,
    runs: runs.length,
  };
  return f;
}

/** A target on the value: met when the median is at most `max`. */
export function valueAtMost(f: Figure, max: number, text: string): Figure {
  f.target = {
    text,
    met: f.value.median <= max,
    runsMet: f.value.runs.filter((v) => v <= max).length,
    runs: f.value.runs.length,
  };
  return f;
}

/**
 * Also requires `ok` (a check every run passed) for the target to be met; a figure without a
 * target still says the check failed.
 */
export function requireCheck(f: Figure, ok: boolean, what: string): Figure {
  if (ok) return f;
  if (f.target) f.target.met = false;
  return addNote(f, `${what}: not every run passed`);
}
