/** Parsers of command-line values that several `spool` commands share. */
import { InvalidArgumentError } from 'commander';

/** A repeatable flag's values, in the order given. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** A whole number of days, at least 1, for a retention flag; anything else is wrong usage. */
export function wholeDays(raw: string): number {
  if (!/^\d{1,6}$/.test(raw.trim()) || Number(raw) < 1) {
    throw new InvalidArgumentError('give a whole number of days, at least 1');
  }
  return Number(raw);
}

/** A template's fields from repeated `--field NAME[=DEFAULT]`: with a default, a field is optional. */
export function templateFields(fields: string[]): Array<{ name: string; default?: string }> {
  return fields.map((f) => {
    const eq = f.indexOf('=');
    return eq < 0 ? { name: f } : { name: f.slice(0, eq), default: f.slice(eq + 1) };
  });
}
