/**
 * What the `spool admin` commands share: the options of a list (its page and `--format`), the
 * `--org` every organization's resource takes, and the query string of a list.
 */
import type { Command } from 'commander';
import type { AdminList } from './admin.js';
import type { Row } from './admin-tables.js';
import { type Columns, type Format, formatOption } from './table.js';

/** Escapes one path segment (an id) of an admin route. */
export const enc = encodeURIComponent;

/** A query string of the values given (none for an empty one), with its `?`. */
export function query(values: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== '') q.set(name, value);
  }
  return q.size > 0 ? `?${q}` : '';
}

/** The options of a list command. */
export interface Page {
  limit?: string;
  cursor?: string;
  format: Format;
}

/** The options of a list: its page, and `--format`. */
export const paged = (cmd: Command) =>
  cmd
    .option('--limit <n>', 'page size (1-200)')
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .addOption(formatOption());

/** The `--org` of a command on one organization's resources. */
export const inOrg = (cmd: Command) => cmd.requiredOption('--org <org>', 'organization id');

/**
 * Makes `cmd` the list of an organization's resources at `path(org)`, a page at a time:
 * `--org`, `--limit`, `--cursor` and `--format`.
 */
export function orgList(
  cmd: Command,
  path: (org: string) => string,
  columns: Columns<Row>,
  list: AdminList,
): Command {
  return paged(inOrg(cmd)).action((opts: Page & { org: string }) =>
    list(
      `${path(opts.org)}${query({ limit: opts.limit, cursor: opts.cursor })}`,
      opts.format,
      columns,
    ),
  );
}
