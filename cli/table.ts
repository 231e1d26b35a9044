/** Plain-text tables for `--format table`: one header row, columns padded to their widest cell. */
import { Option } from 'commander';

/** How a command prints its answer: the API's JSON, or a table. */
export type Format = 'json' | 'table';

/** The `--format` option of a command that can print a table. */
export const formatOption = () =>
  new Option('--format <format>', 'json (the API answer) or table')
    .choices(['json', 'table'])
    .default('json');

/**
 * The columns of a table: each a header, how a row gives its cell, and optionally a width it has
 * at least, so that rows printed one at a time (a job watched) line up.
 */
export type Columns<Row> = ReadonlyArray<{
  header: string;
  value: (row: Row) => unknown;
  minWidth?: number;
}>;

/** Renders `rows` under `columns`; a missing or null cell prints as `-`, a list joined by commas. */
export function renderTable<Row>(columns: Columns<Row>, rows: readonly Row[]): string {
  const cells = rows.map((row) =>
    columns.map((c) => {
      const v = c.value(row);
      if (Array.isArray(v)) return v.length === 0 ? '-' : v.join(',');
      return v === undefined || v === null || v === '' ? '-' : String(v);
    }),
  );
  const widths = columns.map((c, i) =>
    Math.max(c.minWidth ?? 0, c.header.length, ...cells.map((r) => (r[i] ?? '').length)),
  );
  const line = (r: string[]) =>
    r
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((c) => c.header.toUpperCase())), ...cells.map(line)].join('\n')}\n`;
}

/**
 * Prints a page of a list, `{items, next_cursor}`: as JSON, or as a table on stdout with the
 * `--cursor` of the next page, when there is one, on stderr.
 */
export function writePage<Row>(
  format: Format,
  page: { items: Row[]; next_cursor?: string },
  columns: Columns<Row>,
): void {
  if (format === 'json') {
    process.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
    return;
  }
  process.stdout.write(renderTable(columns, page.items));
  if (page.next_cursor) process.stderr.write(`more: --cursor ${page.next_cursor}\n`);
}
